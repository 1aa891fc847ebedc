/**
 * Server-side request forgery (SSRF) guard of outgoing webhook and chat requests. A rule author
 * chooses the URL, so without this guard they could make chainsift call its own Redis, Kafka,
 * Elasticsearch, admin API or a cloud metadata service (169.254.169.254).
 *
 * Two checks, with the same policy:
 * 1. {@link checkDestination} before any request: scheme, then every address the host resolves to
 *    (`dns.lookup` with `all: true`; literal IPs as written). This gives a clear error before any
 *    connection, and is the only check for literal-IP URLs (Node does not call a custom `lookup` for them).
 * 2. {@link guardedLookup}, installed as the `connect.lookup` of the undici {@link Agent} made by
 *    {@link createGuardedAgent}: the connection goes to an address that was checked in the same
 *    resolution, so a DNS answer that changes between check 1 and the connect (DNS rebinding)
 *    is refused too. TLS still verifies the certificate against the URL's host name.
 *
 * Refused unless allowlisted: every address in a special-purpose range, as the `ipaddr.js` library
 * classifies it (`range()`, its copy of the IANA IPv4 and IPv6 Special-Purpose Address Registries,
 * RFC 6890): loopback, private, link-local, unspecified, multicast, documentation, benchmarking,
 * reserved, … ({@link RANGE_CATEGORIES}); only `unicast` (global) addresses pass. An IPv4 address
 * written inside IPv6 is judged by that IPv4 address: IPv4-mapped (`::ffff:0:0/96`, RFC 4291
 * §2.5.5.2), IPv4-translated (`::ffff:0:0:0/96`, RFC 6145), NAT64 well-known prefix
 * (`64:ff9b::/96`, RFC 6052) and 6to4 (`2002::/16`, RFC 3056); the deprecated IPv4-compatible
 * form (`::a.b.c.d`, RFC 4291 §2.5.5.1) and the NAT64 local-use prefix (`64:ff9b:1::/48`, RFC 8215,
 * translated by the network's own NAT64 at an operator-chosen position) are refused whole.
 * @module
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { Agent } from "undici";
import { NonRetryableError } from "../../lib/errors.js";

/** The destination is in a forbidden range and not allowlisted. Non-retryable. */
export const CS_DESTINATION_FORBIDDEN = "CS_DESTINATION_FORBIDDEN";
/** The URL does not parse, or its scheme is not `http:`/`https:`, or it carries credentials. Non-retryable. */
export const CS_DESTINATION_INVALID = "CS_DESTINATION_INVALID";

/** Why an address is refused. */
export type ForbiddenCategory = "loopback" | "unspecified" | "link-local" | "private" | "multicast" | "reserved";

/**
 * What each range name of `ipaddr.js` (`IPv4#range()` / `IPv6#range()`, version pinned in
 * package.json) means here: a {@link ForbiddenCategory}, `"embedded"` (an IPv6 range that carries
 * an IPv4 address: judged by that address), or null for `unicast` (global: allowed). A name missing
 * here (a newer library version) is refused as `reserved`. The ranges, with their sources, as
 * `ipaddr.js` 2.5.0 defines them:
 */
export const RANGE_CATEGORIES: Readonly<Record<string, ForbiddenCategory | "embedded" | null>> = {
  /** 0.0.0.0/8 (RFC 1122 §3.2.1.3), ::/128 (RFC 4291). */
  unspecified: "unspecified",
  /** 255.255.255.255/32 (RFC 919, RFC 8190). */
  broadcast: "reserved",
  /** 224.0.0.0/4 (RFC 5771), ff00::/8 (RFC 4291). */
  multicast: "multicast",
  /** 169.254.0.0/16 (RFC 3927), fe80::/10 (RFC 4291). */
  linkLocal: "link-local",
  /** 127.0.0.0/8 (RFC 1122), ::1/128 (RFC 4291). */
  loopback: "loopback",
  /** 100.64.0.0/10, shared address space (RFC 6598). */
  carrierGradeNat: "private",
  /** 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918). */
  private: "private",
  /**
   * IPv4: 192.0.0.0/24 (RFC 6890), 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 (documentation,
   * RFC 5737), 192.88.99.0/24 (6to4 relay anycast, RFC 7526), 198.18.0.0/15 (benchmarking, RFC
   * 2544), 240.0.0.0/4 (RFC 1112); IPv6: 2001::/23 (IETF protocol assignments, RFC 2928),
   * 2001:db8::/32 (documentation, RFC 3849), 3fff::/20 (documentation, RFC 9637).
   */
  reserved: "reserved",
  /** 192.31.196.0/24, 192.175.48.0/24 (AS112 DNS sinks, RFC 7534, RFC 7535). */
  as112: "reserved",
  /** 192.52.193.0/24, 2001:3::/32 (AMT relays, RFC 7450). */
  amt: "reserved",
  /** fc00::/7, unique local (RFC 4193). */
  uniqueLocal: "private",
  /** fec0::/10, deprecated site-local (RFC 3879). */
  deprecatedSiteLocal: "private",
  /** 100::/64, discard-only (RFC 6666). */
  discard: "reserved",
  /** 2001::/32, Teredo (RFC 4380). */
  teredo: "reserved",
  /** 2001:2::/48, benchmarking (RFC 5180). */
  benchmarking: "reserved",
  /** 2001:4:112::/48, 2620:4f:8000::/48 (AS112-v6, RFC 7534, RFC 7535). */
  as112v6: "reserved",
  /** 2001:10::/28, deprecated ORCHID (RFC 4843). */
  deprecatedOrchid: "reserved",
  /** 2001:20::/28, ORCHIDv2 (RFC 7343). */
  orchid2: "reserved",
  /** 2001:30::/28, drone remote ID entity tags (RFC 9374). */
  droneRemoteIdProtocolEntityTags: "reserved",
  /** 5f00::/16, SRv6 SIDs (RFC 9602). */
  segmentRouting: "reserved",
  /** ::ffff:0:0/96, IPv4-mapped (RFC 4291 §2.5.5.2). */
  ipv4Mapped: "embedded",
  /** ::ffff:0:0:0/96, IPv4-translated (RFC 6145). */
  rfc6145: "embedded",
  /** 64:ff9b::/96, NAT64 well-known prefix (RFC 6052); 64:ff9b:1::/48, local-use (RFC 8215): refused as private. */
  rfc6052: "embedded",
  /** 2002::/16, 6to4 (RFC 3056): the IPv4 address is bits 16–47. */
  "6to4": "embedded",
  /** Everything else: global unicast, allowed. */
  unicast: null,
};

/** The NAT64 well-known prefix 64:ff9b::/96 (RFC 6052 §2.1), the part of `rfc6052` with a fixed IPv4 position. */
const NAT64_WELL_KNOWN: [ipaddr.IPv6, number] = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

/** The category of a range name of `ipaddr.js`; unknown names are `reserved` (refuse what is not known to be global). */
function rangeCategory(name: string): ForbiddenCategory | "embedded" | null {
  return Object.hasOwn(RANGE_CATEGORIES, name) ? (RANGE_CATEGORIES[name] ?? null) : "reserved";
}

/** The IPv4 address in the last 32 bits of an IPv6 address (`parts[6..7]`), or, with `at = 1`, in bits 16–47 (6to4). */
function ipv4At(ip: ipaddr.IPv6, at = 6): ipaddr.IPv4 {
  const hi = ip.parts[at] ?? 0;
  const lo = ip.parts[at + 1] ?? 0;
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/** The forbidden category of a parsed address, or null when it is global unicast. */
function classify(ip: ipaddr.IPv4 | ipaddr.IPv6): ForbiddenCategory | null {
  const name = ip.range();
  const category = rangeCategory(name);
  if (ip.kind() === "ipv4") return category === "embedded" ? "reserved" : category;
  const v6 = ip as ipaddr.IPv6;
  if (category === "embedded") {
    if (name === "rfc6052" && !v6.match(NAT64_WELL_KNOWN)) return "private"; // 64:ff9b:1::/48, local use
    return classify(name === "6to4" ? ipv4At(v6, 1) : ipv4At(v6));
  }
  if (category === null && v6.parts.slice(0, 6).every((p) => p === 0)) {
    // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1): the IPv4 address's category, else reserved.
    return classify(ipv4At(v6)) ?? "reserved";
  }
  return category;
}

/** Strips IPv6 brackets and a zone index (`fe80::1%eth0`). */
function bareAddress(address: string): string {
  let a = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const pct = a.indexOf("%");
  if (pct >= 0) a = a.slice(0, pct);
  return a;
}

/**
 * The category that makes an IP address forbidden, or null when it is a global unicast address
 * (see {@link RANGE_CATEGORIES}).
 * @param address A literal IPv4 or IPv6 address (brackets and zone index tolerated).
 * @throws {TypeError} when `address` is not an IP address.
 */
export function forbiddenCategory(address: string): ForbiddenCategory | null {
  const a = bareAddress(address);
  const v = isIP(a);
  if (v === 0) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  // IPv6 goes through the WHATWG serializer first (all hex, no dotted quad): ipaddr.js reads the
  // dotted form `::a.b.c.d` as IPv4-mapped (::ffff:a.b.c.d), not as the address those bits spell.
  let canonical = a;
  if (v === 6) {
    try {
      canonical = new URL(`http://[${a}]/`).hostname.slice(1, -1);
    } catch {
      return "reserved"; // Node calls it IPv6 but WHATWG does not: refuse what cannot be judged
    }
  }
  return classify(ipaddr.parse(canonical));
}

/** A parsed operator allowlist: exceptions to the refused ranges. */
export interface Allowlist {
  /** Whether a literal address is allowlisted (by an IP or CIDR entry; IPv4 entries also cover their `::ffff:` form). */
  allowsAddress(address: string): boolean;
  /** Whether a host name is allowlisted by name (lower-case, trailing dot ignored). */
  allowsHost(hostname: string): boolean;
  /** The entries as given. */
  readonly entries: readonly string[];
}

/**
 * Parses allowlist entries: an IP (`127.0.0.1`, `::1`), a CIDR (`10.1.0.0/16`, `fd00::/8`), or a
 * host name (`hooks.internal`; trusts whatever it resolves to).
 * @throws {Error} on an entry that is none of these (a configuration error; fail at start-up).
 */
export function parseAllowlist(entries: readonly string[] = []): Allowlist {
  const ips = new BlockList();
  const hosts = new Set<string>();
  for (const raw of entries) {
    const e = raw.trim();
    if (e === "") continue;
    const slash = e.indexOf("/");
    if (slash >= 0) {
      const net = bareAddress(e.slice(0, slash));
      const bits = e.slice(slash + 1);
      const v = isIP(net);
      const max = v === 4 ? 32 : 128;
      if (v === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) throw new Error(`notify allowlist: bad CIDR ${JSON.stringify(raw)}`);
      ips.addSubnet(net, Number(bits), v === 4 ? "ipv4" : "ipv6");
      if (v === 4) ips.addSubnet(`::ffff:${net}`, 96 + Number(bits), "ipv6");
      continue;
    }
    const ip = bareAddress(e);
    const v = isIP(ip);
    if (v !== 0) {
      ips.addAddress(ip, v === 4 ? "ipv4" : "ipv6");
      if (v === 4) ips.addAddress(`::ffff:${ip}`, "ipv6");
      continue;
    }
    const host = e.toLowerCase().replace(/\.$/, "");
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) {
      throw new Error(`notify allowlist: ${JSON.stringify(raw)} is not an IP, CIDR or host name`);
    }
    hosts.add(host);
  }
  return {
    entries: [...entries],
    allowsAddress(address) {
      const a = bareAddress(address);
      const v = isIP(a);
      return v !== 0 && ips.check(a, v === 4 ? "ipv4" : "ipv6");
    },
    allowsHost: (hostname) => hosts.has(bareAddress(hostname).toLowerCase().replace(/\.$/, "")),
  };
}

/** Resolves a host name to all its addresses (the default is `dns.lookup(host, {all: true})`). */
export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

/** Destination policy shared by {@link checkDestination}, {@link guardedLookup} and {@link createGuardedAgent}. */
export interface DestinationPolicy {
  /** Allowlisted hosts, IPs and CIDRs (strings, parsed with {@link parseAllowlist}), or a parsed list. Default none. */
  allowlist?: readonly string[] | Allowlist;
  /** Host resolution (tests inject one); default `dns.lookup` with `all: true` and the OS order. */
  resolve?: ResolveAll;
}

const defaultResolve: ResolveAll = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, order: "verbatim" }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

function allowlistOf(policy: DestinationPolicy): Allowlist {
  const a = policy.allowlist;
  return a === undefined ? parseAllowlist([]) : Array.isArray(a) ? parseAllowlist(a as readonly string[]) : (a as Allowlist);
}

function forbidden(host: string, address: string, category: ForbiddenCategory): NonRetryableError {
  const shown = host === address ? address : `${host} (${address})`;
  return new NonRetryableError(
    CS_DESTINATION_FORBIDDEN,
    `destination ${shown} is a ${category} address; such destinations are refused unless the operator allowlists them`,
  );
}

/** Throws {@link CS_DESTINATION_FORBIDDEN} when one of `addresses` is forbidden and not allowlisted. */
function assertAddresses(host: string, addresses: readonly string[], allow: Allowlist): void {
  for (const address of addresses) {
    if (allow.allowsAddress(address)) continue;
    const category = forbiddenCategory(address);
    if (category !== null) throw forbidden(host, bareAddress(address), category);
  }
}

/** A checked destination. */
export interface CheckedDestination {
  url: URL;
  /** The URL's host without IPv6 brackets. */
  hostname: string;
  /** Addresses the host resolved to (all allowed); empty when the host is allowlisted by name. */
  addresses: string[];
}

/**
 * Checks that a webhook or chat URL may be called: `http:` or `https:`, no `user:password@`, and
 * every address of its host is public or allowlisted (a host with one bad address is refused).
 *
 * @throws {NonRetryableError} code {@link CS_DESTINATION_INVALID} (unparseable URL, other scheme,
 *   credentials in the URL) or {@link CS_DESTINATION_FORBIDDEN} (forbidden address).
 * @throws the resolver's error (e.g. `ENOTFOUND`, `EAI_AGAIN`) when the host does not resolve;
 *   callers treat it as transient.
 */
export async function checkDestination(url: string | URL, policy: DestinationPolicy = {}): Promise<CheckedDestination> {
  let u: URL;
  try {
    u = typeof url === "string" ? new URL(url) : url;
  } catch {
    throw new NonRetryableError(CS_DESTINATION_INVALID, "destination is not a valid absolute URL");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new NonRetryableError(CS_DESTINATION_INVALID, `destination scheme ${u.protocol} is not allowed (http: or https: only)`);
  }
  if (u.username !== "" || u.password !== "") {
    throw new NonRetryableError(CS_DESTINATION_INVALID, "destination URLs must not carry credentials (user:password@)");
  }
  return { url: u, ...(await checkHost(u.hostname, policy)) };
}

/**
 * Checks that a host may be connected to: every address it resolves to (or the literal IP) is
 * public or allowlisted, or the host is allowlisted by name. The check of {@link checkDestination}
 * without the URL, for destinations named by `host:port` (Kafka brokers).
 * @param host a host name or literal IP (IPv6 brackets tolerated).
 * @returns the host without brackets and the addresses it resolved to (empty when allowlisted by name).
 * @throws {NonRetryableError} {@link CS_DESTINATION_FORBIDDEN} for a forbidden address.
 * @throws the resolver's error (e.g. `ENOTFOUND`) when the host does not resolve; callers treat it as transient.
 */
export async function checkHost(host: string, policy: DestinationPolicy = {}): Promise<Omit<CheckedDestination, "url">> {
  const hostname = bareAddress(host);
  const allow = allowlistOf(policy);
  if (allow.allowsHost(hostname)) return { hostname, addresses: [] };
  let addresses: string[];
  if (isIP(hostname) !== 0) {
    addresses = [hostname];
  } else {
    const found = await (policy.resolve ?? defaultResolve)(hostname);
    if (found.length === 0) throw Object.assign(new Error(`${hostname} resolved to no address`), { code: "ENOTFOUND" });
    addresses = found.map((a) => a.address);
  }
  assertAddresses(hostname, addresses, allow);
  return { hostname, addresses };
}

/**
 * The refusal of connecting to a literal IP address (synchronous: Node calls no `lookup` for a
 * literal, so {@link guardedLookup} never sees it), or null when it is public or allowlisted, or
 * `host` is a name (then {@link guardedLookup} judges what it resolves to).
 */
export function literalAddressRefusal(host: string, policy: DestinationPolicy = {}): NonRetryableError | null {
  const address = bareAddress(host);
  if (isIP(address) === 0) return null;
  try {
    assertAddresses(address, [address], allowlistOf(policy));
    return null;
  } catch (err) {
    return err as NonRetryableError;
  }
}

/** The `lookup` signature of `net.connect` / `tls.connect` (and so of undici's `connect.lookup`). */
export type ConnectLookup = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

/**
 * A `lookup` for `net.connect` that resolves like `dns.lookup` and then applies the policy to every
 * resolved address; a forbidden one fails the connection with {@link CS_DESTINATION_FORBIDDEN}.
 * Handles both `all: true` (Node's happy-eyeballs `autoSelectFamily`) and single-address calls.
 */
export function guardedLookup(policy: DestinationPolicy = {}): ConnectLookup {
  const allow = allowlistOf(policy);
  const resolve = policy.resolve ?? defaultResolve;
  return (hostname, options, callback) => {
    const family = typeof options.family === "number" ? options.family : options.family === "IPv6" ? 6 : options.family === "IPv4" ? 4 : 0;
    resolve(hostname)
      .then((all) => {
        const addresses = family === 0 ? all : all.filter((a) => a.family === family);
        if (addresses.length === 0) throw Object.assign(new Error(`${hostname} resolved to no usable address`), { code: "ENOTFOUND" });
        if (!allow.allowsHost(hostname))
          assertAddresses(
            hostname,
            addresses.map((a) => a.address),
            allow,
          );
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, options.all ? [] : "", undefined));
  };
}

/** Options of {@link createGuardedAgent}. */
export interface GuardedAgentOptions {
  /** TCP + TLS connect timeout in ms. Default 10000. */
  connectTimeoutMs?: number;
  /** Time to wait for the response headers, in ms. Default 10000. */
  headersTimeoutMs?: number;
  /** Largest pause between response body chunks, in ms. Default 10000. */
  bodyTimeoutMs?: number;
}

/**
 * An undici {@link Agent} whose connections resolve through {@link guardedLookup}. It follows no
 * redirects (undici's default) and uses no proxy, so a request goes exactly to the checked host.
 */
export function createGuardedAgent(policy: DestinationPolicy = {}, options: GuardedAgentOptions = {}): Agent {
  return new Agent({
    connect: { lookup: guardedLookup(policy), timeout: options.connectTimeoutMs ?? 10_000 },
    headersTimeout: options.headersTimeoutMs ?? 10_000,
    bodyTimeout: options.bodyTimeoutMs ?? 10_000,
  });
}
