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
