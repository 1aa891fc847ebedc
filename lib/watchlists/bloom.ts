/**
 * Bloom filters of watchlist members (the `bloomfilter` package: FNV-1a with enhanced double
 * hashing over a Uint32Array of bits), which the match stage keeps in front of the Redis set
 * (lib/match/watchlist-filters.ts): a "no" is certain, a "maybe" is confirmed in Redis.
 *
 * Sizing: a filter is built for {@link memberFilterCapacity} members (twice the list's size, at least
 * 1,024) at a {@link MEMBER_FILTER_ERROR} false-positive rate when full: m = −C·ln p / (ln 2)² bits,
 * k = ⌈ln 2 · m / C⌉ = 7 hashes. That is 9.59 bits per unit of capacity, so 2,396,268 bytes
 * (2.29 MiB) for a list of 1,000,000 members (capacity 2,000,000); with the list at half the
 * capacity the false-positive rate is (1 − e^(−7/19.17))^7 ≈ 0.03 %, at capacity 1 % (then it is
 * rebuilt bigger). Formulas: https://en.wikipedia.org/wiki/Bloom_filter#Optimal_number_of_hash_functions
 *
 * Address lists skip the package's string hash (FNV-1a over 42 characters, about 0.5 µs a test: the
 * largest cost of an `In watchlist` match, measured by `bench match --watchlist`): an address is the
 * last 20 bytes of a keccak-256 hash (EIP-55 only changes letter case), so its own low 64 bits are
 * already uniform, and {@link addMember} / {@link mayContain} take the two 32-bit halves of hex
 * digits 26–41 as the two hashes of the same enhanced double hashing, on the same bits. Vanity
 * addresses share leading digits, not these. Strings keep the package's `add`/`test`.
 * @module
 */
import { BloomFilter } from "bloomfilter";
import type { WatchlistKind } from "./store.js";

/** False-positive rate of a member filter at its capacity (0.01 = 1 %). */
export const MEMBER_FILTER_ERROR = 0.01;
/** Smallest capacity of a member filter, in members (≈1.2 KB of bits). */
export const MEMBER_FILTER_MIN_CAPACITY = 1_024;

/**
 * The capacity to build a filter with for a list of `count` members: room to double before a rebuild.
 * @param count - the list's size (SCARD).
 */
export function memberFilterCapacity(count: number): number {
  return Math.max(MEMBER_FILTER_MIN_CAPACITY, 2 * count);
}

/**
 * An empty member filter for `capacity` members at {@link MEMBER_FILTER_ERROR}.
 * @param capacity - members it is sized for (≥ 1).
 * @throws RangeError when `capacity` is not positive.
 */
export function createMemberFilter(capacity: number): BloomFilter {
  return BloomFilter.withTargetError(capacity, MEMBER_FILTER_ERROR);
}

/** Size of a filter's bits, in bytes. */
export function memberFilterBytes(filter: BloomFilter): number {
  return filter.buckets.byteLength;
}

/** The value of a hex digit's char code (`0-9a-fA-F`); other characters give some number (the caller only needs consistency). */
function nibble(c: number): number {
  return c <= 57 ? c - 48 : (c | 32) - 87;
}

/** Eight hex digits of `v` from `at` as an unsigned 32-bit number, without allocating. */
function hex8(v: string, at: number): number {
  let x = 0;
  for (let i = at; i < at + 8; i++) x = x * 16 + nibble(v.charCodeAt(i));
  return x;
}

/** Whether `v` is `0x` + 40 characters (an address as entities and members carry it; hex not checked). */
const isAddressShaped = (v: string): boolean => v.length === 42 && v.charCodeAt(0) === 48 && (v.charCodeAt(1) | 32) === 120;

/**
 * The `k` bit positions of an address-shaped value, written into `out` (enhanced double hashing as
 * the package does it, with the two hashes taken from the address's digits).
 */
function addressBits(filter: BloomFilter, v: string, out: Uint32Array): Uint32Array {
  const m = filter.m;
  let a = hex8(v, 34) % m;
  let b = hex8(v, 26) % m;
  for (let i = 0; i < filter.k; i++) {
    out[i] = a;
    a = (a + b) % m;
    b = (b + i + 1) % m;
  }
  return out;
}

/** Scratch for {@link addressBits} (k ≤ 32 for any error rate used here). */
const SCRATCH = new Uint32Array(32);

/**
 * Adds a stored member (normalised: lib/watchlists/store.ts `normalizeMember`) to a filter of a `kind` list.
 * @param filter - the list's filter.
 * @param kind - the list's kind.
 * @param member - the member as stored.
 */
export function addMember(filter: BloomFilter, kind: WatchlistKind, member: string): void {
  if (kind !== "address" || !isAddressShaped(member)) {
    filter.add(filterValue(kind, member));
    return;
  }
  const buckets = filter.buckets;
  const bits = addressBits(filter, member, SCRATCH);
  for (let i = 0; i < filter.k; i++) {
    const bit = bits[i] as number;
    buckets[bit >>> 5] = (buckets[bit >>> 5] as number) | (1 << (bit & 31));
  }
}

/**
 * False when `value` is certainly not a member of the filter's `kind` list; true when it may be
 * (then Redis answers). An address-kind value that is not `0x` + 40 characters (untrimmed, say) is
 * always "maybe": it is never a member, and Redis says so.
 * @param filter - the list's filter, built with {@link addMember}.
 * @param kind - the list's kind.
 * @param value - the value asked, as the entity has it.
 */
export function mayContain(filter: BloomFilter, kind: WatchlistKind, value: string): boolean {
  if (kind !== "address") return filter.test(filterValue(kind, value));
  if (!isAddressShaped(value)) return true;
  const buckets = filter.buckets;
  const bits = addressBits(filter, value, SCRATCH);
  for (let i = 0; i < filter.k; i++) {
    const bit = bits[i] as number;
    if (((buckets[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}

/**
 * The form of a value to test a filter of a `kind` list with: the normalised member
 * (lib/watchlists/store.ts `normalizeMember`) whenever the value is a valid member, without its
 * validation (an invalid value may test "maybe"; Redis then says no).
 * @param kind - the list's kind.
 * @param raw - the value asked.
 */
export function filterValue(kind: WatchlistKind, raw: string): string {
  return kind === "address" ? raw.trim().toLowerCase() : raw.trim();
}
