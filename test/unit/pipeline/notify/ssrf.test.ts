/** Unit tests of the SSRF guard: address categories, allowlist, URL checks, and the connect-time lookup. */
import type { LookupAddress } from "node:dns";
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import {
  checkDestination,
  forbiddenCategory,
  guardedLookup,
  parseAllowlist,
  RANGE_CATEGORIES,
  type ResolveAll,
} from "../../../../pipeline/notify/ssrf.js";

/** A resolver answering from a fixed table (no DNS). */
const fakeDns =
  (table: Record<string, string[]>): ResolveAll =>
  async (host) => {
    const a = table[host];
    if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return a.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("forbiddenCategory", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["64:ff9b::10.0.0.1", "private"],
    ["2002:a00:1::", "private"],
    ["2002:7f00:1::1", "loopback"],
    ["[::1]", "loopback"],
  ])("%s is %s", (addr, category) => {
    expect(forbiddenCategory(addr)).toBe(category);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "172.15.255.255",
    "192.169.0.1",
    "100.128.0.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::",
  ])("%s is public", (addr) => {
    expect(forbiddenCategory(addr)).toBeNull();
  });

  it.each([
    // IPv4 documentation (TEST-NET-1..3, RFC 5737), 6to4 relay anycast (RFC 7526), AS112 (RFC 7534/7535), AMT (RFC 7450)
    ["192.0.2.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.255", "reserved"],
    ["192.88.99.1", "reserved"],
    ["192.31.196.1", "reserved"],
    ["192.175.48.1", "reserved"],
    ["192.52.193.1", "reserved"],
    ["198.19.255.255", "reserved"],
    // IPv6 documentation (RFC 3849, RFC 9637), discard (RFC 6666), Teredo (RFC 4380), benchmarking (RFC 5180), ORCHID, SRv6 SIDs
    ["2001:db8::1", "reserved"],
    ["2001:db8:ffff::1", "reserved"],
    ["3fff::1", "reserved"],
    ["100::1", "reserved"],
    ["2001::1", "reserved"],
    ["2001:2::1", "reserved"],
    ["2001:20::1", "reserved"],
    ["5f00::1", "reserved"],
    // NAT64 local-use prefix (RFC 8215): translated by the network's own NAT64, which may reach private IPv4
    ["64:ff9b:1::1", "private"],
    ["64:ff9b:1:ffff::8.8.8.8", "private"],
    // The new IPv4 ranges in every IPv6 embedding: mapped (::ffff:0:0/96), translated (::ffff:0:0:0/96, RFC 6145),
    // NAT64 well-known prefix (64:ff9b::/96, RFC 6052), 6to4 (2002::/16), IPv4-compatible (::/96)
    ["::ffff:192.0.2.1", "reserved"],
    ["::ffff:c633:6407", "reserved"],
    ["::ffff:0:203.0.113.9", "reserved"],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::ffff:0:a00:1", "private"],
    ["64:ff9b::192.0.2.1", "reserved"],
    ["64:ff9b::198.51.100.1", "reserved"],
    ["64:ff9b::169.254.169.254", "link-local"],
    ["2002:c000:201::", "reserved"],
    ["2002:cb00:7101::1", "reserved"],
    ["::192.0.2.1", "reserved"],
    ["::8.8.8.8", "reserved"],
    ["::127.0.0.1", "loopback"],
    ["::a00:1", "private"],
    ["::ffff:0:0", "unspecified"],
  ])("%s is %s (special-purpose ranges from ipaddr.js)", (addr, category) => {
    expect(forbiddenCategory(addr)).toBe(category);
  });

  it("refuses the first and the last address of every special-purpose range ipaddr.js knows", () => {
    type Subnet = [ipaddr.IPv4 | ipaddr.IPv6, number];
    const registries = [
      (ipaddr.IPv4.prototype as unknown as { SpecialRanges: Record<string, Subnet | Subnet[]> }).SpecialRanges,
      (ipaddr.IPv6.prototype as unknown as { SpecialRanges: Record<string, Subnet | Subnet[]> }).SpecialRanges,
    ];
    const checked: string[] = [];
    for (const registry of registries) {
      for (const [name, entry] of Object.entries(registry)) {
        const subnets: Subnet[] = Array.isArray(entry[0]) ? (entry as Subnet[]) : [entry as Subnet];
        for (const [net, bits] of subnets) {
          const cidr = `${net.toString()}/${bits}`;
          const Family = net.kind() === "ipv4" ? ipaddr.IPv4 : ipaddr.IPv6;
          for (const a of [Family.networkAddressFromCIDR(cidr), Family.broadcastAddressFromCIDR(cidr)]) {
            expect(forbiddenCategory(a.toString()), `${a.toString()} (${name} ${cidr})`).not.toBeNull();
          }
          checked.push(name);
        }
      }
    }
    expect(new Set(checked)).toEqual(new Set(Object.keys(RANGE_CATEGORIES).filter((n) => n !== "unicast")));
  });

  it("property: an IPv4 address written inside IPv6 (mapped, translated, NAT64 well-known, 6to4) is judged as the IPv4 address", () => {
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
        const hi = ((a << 8) | b).toString(16);
        const lo = ((c << 8) | d).toString(16);
        const expected = forbiddenCategory(v4);
        for (const v6 of [`::ffff:${v4}`, `::ffff:${hi}:${lo}`, `::ffff:0:${hi}:${lo}`, `64:ff9b::${v4}`, `2002:${hi}:${lo}::1`]) {
          expect(forbiddenCategory(v6), `${v6} (${v4})`).toBe(expected);
        }
        expect(forbiddenCategory(`::${v4}`)).toBe(expected ?? "reserved");
      }),
      { numRuns: 2000 },
    );
  });

  it("throws on a non-address", () => {
    expect(() => forbiddenCategory("localhost")).toThrow(TypeError);
  });
});

describe("parseAllowlist", () => {
  it("matches IPs (and their IPv4-mapped form), CIDRs and host names", () => {
    const a = parseAllowlist(["127.0.0.1", "10.1.0.0/16", "fd00::/8", "Hooks.Internal."]);
    expect(a.allowsAddress("127.0.0.1")).toBe(true);
    expect(a.allowsAddress("::ffff:127.0.0.1")).toBe(true);
    expect(a.allowsAddress("127.0.0.2")).toBe(false);
    expect(a.allowsAddress("10.1.200.3")).toBe(true);
    expect(a.allowsAddress("10.2.0.1")).toBe(false);
    expect(a.allowsAddress("fd00::5")).toBe(true);
    expect(a.allowsHost("hooks.internal")).toBe(true);
    expect(a.allowsHost("other.internal")).toBe(false);
  });

  it("rejects garbage entries", () => {
    expect(() => parseAllowlist(["10.0.0.0/33"])).toThrow(/bad CIDR/);
    expect(() => parseAllowlist(["not a host"])).toThrow(/not an IP, CIDR or host name/);
  });
});

describe("checkDestination", () => {
  const resolve = fakeDns({
    "hooks.example.com": ["93.184.215.14"],
    "rebind.example.com": ["93.184.215.14", "127.0.0.1"],
    "metadata.example.com": ["169.254.169.254"],
    "v6.example.com": ["2606:4700::6810:84e5"],
  });

  const forbidden = expect.objectContaining({ name: "NonRetryableError", code: "CS_DESTINATION_FORBIDDEN" });
  const invalid = expect.objectContaining({ name: "NonRetryableError", code: "CS_DESTINATION_INVALID" });

  it("accepts public hosts and literal public IPs", async () => {
    await expect(checkDestination("https://hooks.example.com/a?b=c", { resolve })).resolves.toMatchObject({
      hostname: "hooks.example.com",
      addresses: ["93.184.215.14"],
    });
    await expect(checkDestination("http://93.184.215.14:8080/x", { resolve })).resolves.toMatchObject({ addresses: ["93.184.215.14"] });
    await expect(checkDestination("https://v6.example.com/", { resolve })).resolves.toBeDefined();
  });

  it("refuses literal loopback, private, link-local and mapped addresses in every spelling", async () => {
    for (const url of [
      "http://127.0.0.1/",
      "http://127.1/",
      "http://2130706433/",
      "http://0x7f000001/",
      "http://[::1]:8080/",
      "http://[::ffff:127.0.0.1]/",
      "http://10.0.0.5/",
      "http://192.168.0.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[fe80::1]/",
      "http://[fd00::1]/",
      "http://0.0.0.0/",
      "http://192.0.2.10/",
      "http://[2001:db8::10]/",
      "http://[::ffff:198.51.100.1]/",
      "http://[64:ff9b::203.0.113.1]/",
      "http://[64:ff9b:1::a00:1]/",
    ]) {
      await expect(checkDestination(url, { resolve }), url).rejects.toEqual(forbidden);
    }
  });

  it("refuses localhost through the real resolver", async () => {
    await expect(checkDestination("http://localhost:9200/")).rejects.toEqual(forbidden);
  });

  it("refuses a host with any forbidden address (rebinding-style answers) and metadata names", async () => {
    await expect(checkDestination("https://rebind.example.com/", { resolve })).rejects.toEqual(forbidden);
    await expect(checkDestination("https://metadata.example.com/", { resolve })).rejects.toEqual(forbidden);
  });

  it("lets the allowlist through by IP, CIDR or host name", async () => {
    await expect(checkDestination("http://127.0.0.1:1234/", { allowlist: ["127.0.0.1"], resolve })).resolves.toBeDefined();
    await expect(checkDestination("http://10.9.8.7/", { allowlist: ["10.0.0.0/8"], resolve })).resolves.toBeDefined();
    await expect(
      checkDestination("https://metadata.example.com/", { allowlist: ["metadata.example.com"], resolve }),
    ).resolves.toMatchObject({ addresses: [] });
    await expect(checkDestination("http://127.0.0.2/", { allowlist: ["127.0.0.1"], resolve })).rejects.toEqual(forbidden);
    await expect(checkDestination("http://192.0.2.10/", { allowlist: ["192.0.2.0/24"], resolve })).resolves.toBeDefined();
    await expect(checkDestination("http://[2001:db8::10]/", { allowlist: ["2001:db8::/32"], resolve })).resolves.toBeDefined();
    await expect(checkDestination("http://[::ffff:192.0.2.10]/", { allowlist: ["192.0.2.10"], resolve })).resolves.toBeDefined();
  });

  it("refuses other schemes, credentials and garbage as CS_DESTINATION_INVALID", async () => {
    for (const url of [
      "ftp://hooks.example.com/",
      "file:///etc/passwd",
      "gopher://hooks.example.com/",
      "https://user:pw@hooks.example.com/",
      "not a url",
    ]) {
      await expect(checkDestination(url, { resolve }), url).rejects.toEqual(invalid);
    }
  });

  it("passes DNS failures through (transient for the caller)", async () => {
    await expect(checkDestination("https://nx.example.com/", { resolve })).rejects.toMatchObject({ code: "ENOTFOUND" });
  });
});

describe("guardedLookup", () => {
  const lookup = (policy: Parameters<typeof guardedLookup>[0], host: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      guardedLookup(policy)(host, options, (err, address, family) => resolve({ err, address, family })),
    );
  const resolve = fakeDns({ "hooks.example.com": ["93.184.215.14", "2606:4700::1"], "evil.example.com": ["127.0.0.1"] });

  it("answers single and all-address lookups with checked addresses", async () => {
    expect(await lookup({ resolve }, "hooks.example.com", {})).toEqual({ err: null, address: "93.184.215.14", family: 4 });
    expect(await lookup({ resolve }, "hooks.example.com", { family: 6 })).toEqual({ err: null, address: "2606:4700::1", family: 6 });
    const all = await lookup({ resolve }, "hooks.example.com", { all: true });
    expect(all.address).toHaveLength(2);
  });

  it("fails the connection when the name now resolves to a forbidden address (DNS rebinding)", async () => {
    const r = await lookup({ resolve }, "evil.example.com", { all: true });
    expect(r.err).toMatchObject({ code: "CS_DESTINATION_FORBIDDEN" });
    expect((await lookup({ resolve, allowlist: ["127.0.0.1"] }, "evil.example.com", {})).address).toBe("127.0.0.1");
  });
});
