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
 * Refused unless allowlisted: loopback, private, link-local, unspecified, multicast and reserved
 * ranges (table {@link FORBIDDEN_RANGES}), also when written as IPv4-mapped (`::ffff:a.b.c.d`,
 * RFC 4291 §2.5.5.2), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, RFC 6052) or 6to4
 * (`2002::/16`, RFC 3056) IPv6 addresses.
 * @module
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";
import { Agent } from "undici";
import { NonRetryableError } from "../errors.js";

/** The destination is in a forbidden range and not allowlisted. Non-retryable. */
export const CS_DESTINATION_FORBIDDEN = "CS_DESTINATION_FORBIDDEN";
/** The URL does not parse, or its scheme is not `http:`/`https:`, or it carries credentials. Non-retryable. */
export const CS_DESTINATION_INVALID = "CS_DESTINATION_INVALID";

/** Why an address is refused. */
export type ForbiddenCategory = "loopback" | "unspecified" | "link-local" | "private" | "multicast" | "reserved";

/** One refused range: `[network, prefix length, family, category, source]`. */
export type ForbiddenRange = readonly [string, number, "ipv4" | "ipv6", ForbiddenCategory, string];

/**
 * The refused ranges. IPv4 ranges are also refused in their IPv6 embeddings (mapped, compatible,
 * NAT64, 6to4). Sources: RFC 1122 §3.2.1.3 (0/8, 127/8), RFC 1918 (private IPv4), RFC 6598
 * (shared 100.64/10), RFC 3927 (IPv4 link-local), RFC 5771 (IPv4 multicast), RFC 1112 §4 and
 * RFC 919 (240/4, broadcast), RFC 6890 (192.0.0/24), RFC 2544 (198.18/15), RFC 4291 (IPv6
 * unspecified, loopback, link-local fe80::/10, multicast ff00::/8), RFC 3879 (site-local
 * fec0::/10), RFC 4193 (unique local fc00::/7).
 */
export const FORBIDDEN_RANGES: readonly ForbiddenRange[] = [
  ["127.0.0.0", 8, "ipv4", "loopback", "RFC 1122"],
  ["0.0.0.0", 8, "ipv4", "unspecified", "RFC 1122"],
  ["169.254.0.0", 16, "ipv4", "link-local", "RFC 3927"],
  ["10.0.0.0", 8, "ipv4", "private", "RFC 1918"],
  ["172.16.0.0", 12, "ipv4", "private", "RFC 1918"],
  ["192.168.0.0", 16, "ipv4", "private", "RFC 1918"],
  ["100.64.0.0", 10, "ipv4", "private", "RFC 6598"],
  ["192.0.0.0", 24, "ipv4", "reserved", "RFC 6890"],
  ["198.18.0.0", 15, "ipv4", "reserved", "RFC 2544"],
  ["224.0.0.0", 4, "ipv4", "multicast", "RFC 5771"],
  ["240.0.0.0", 4, "ipv4", "reserved", "RFC 1112"],
  ["::1", 128, "ipv6", "loopback", "RFC 4291"],
  ["::", 128, "ipv6", "unspecified", "RFC 4291"],
  ["fe80::", 10, "ipv6", "link-local", "RFC 4291"],
  ["fc00::", 7, "ipv6", "private", "RFC 4193"],
  ["fec0::", 10, "ipv6", "private", "RFC 3879"],
  ["ff00::", 8, "ipv6", "multicast", "RFC 4291"],
];

/** Order in which categories are reported when several apply. */
const CATEGORY_ORDER: readonly ForbiddenCategory[] = ["loopback", "unspecified", "link-local", "private", "multicast", "reserved"];

function ipv4Hex(addr: string): [string, string] {
  const b = addr.split(".").map(Number) as [number, number, number, number];
  const h = (x: number, y: number) => ((x << 8) | y).toString(16);
  return [h(b[0], b[1]), h(b[2], b[3])];
}

const CATEGORY_LISTS: ReadonlyMap<ForbiddenCategory, BlockList> = (() => {
  const lists = new Map<ForbiddenCategory, BlockList>(CATEGORY_ORDER.map((c) => [c, new BlockList()]));
  for (const [net, prefix, family, category] of FORBIDDEN_RANGES) {
    const list = lists.get(category)!;
    list.addSubnet(net, prefix, family);
    if (family === "ipv4") {
      const [hi, lo] = ipv4Hex(net);
      list.addSubnet(`::ffff:${net}`, 96 + prefix, "ipv6"); // IPv4-mapped
      list.addSubnet(`::${net}`, 96 + prefix, "ipv6"); // IPv4-compatible (deprecated)
      list.addSubnet(`64:ff9b::${net}`, 96 + prefix, "ipv6"); // NAT64 well-known prefix
      list.addSubnet(`2002:${hi}:${lo}::`, 16 + prefix, "ipv6"); // 6to4
    }
  }
  return lists;
})();

/** Strips IPv6 brackets and a zone index (`fe80::1%eth0`). */
function bareAddress(address: string): string {
  let a = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const pct = a.indexOf("%");
  if (pct >= 0) a = a.slice(0, pct);
  return a;
}

/**
 * The category that makes an IP address forbidden, or null when it is a public address.
 * @param address A literal IPv4 or IPv6 address (brackets and zone index tolerated).
 * @throws {TypeError} when `address` is not an IP address.
 */
export function forbiddenCategory(address: string): ForbiddenCategory | null {
  const a = bareAddress(address);
  const v = isIP(a);
  if (v === 0) throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
  const family = v === 4 ? "ipv4" : "ipv6";
  for (const c of CATEGORY_ORDER) if (CATEGORY_LISTS.get(c)!.check(a, family)) return c;
  return null;
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
  const hostname = bareAddress(u.hostname);
  const allow = allowlistOf(policy);
  if (allow.allowsHost(hostname)) return { url: u, hostname, addresses: [] };
  let addresses: string[];
  if (isIP(hostname) !== 0) {
    addresses = [hostname];
  } else {
    const found = await (policy.resolve ?? defaultResolve)(hostname);
    if (found.length === 0) throw Object.assign(new Error(`${hostname} resolved to no address`), { code: "ENOTFOUND" });
    addresses = found.map((a) => a.address);
  }
  assertAddresses(hostname, addresses, allow);
  return { url: u, hostname, addresses };
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
