/**
 * Types of the `bloomfilter` package (1.1.0, https://github.com/jasondavies/bloomfilter.js, no types
 * of its own): a Bloom filter of `m` bits (rounded up to a multiple of 32) and `k` hash functions
 * over FNV-1a with enhanced double hashing, its bits in `buckets`.
 */
declare module "bloomfilter" {
  export class BloomFilter {
    /**
     * @param m - number of bits, or the 32-bit buckets of a filter to load (copied).
     * @param k - number of hash functions.
     * @throws RangeError for a bad `m`, `k` or bucket value.
     */
    constructor(m: number | ArrayLike<number>, k: number);
    /** Number of bits (a multiple of 32). */
    readonly m: number;
    /** Number of hash functions. */
    readonly k: number;
    /** The bits, 32 a bucket. */
    readonly buckets: Uint32Array;
    /** Sets the bits of a value (`String(v)`). */
    add(v: string | number): void;
    /** False when the value was certainly never added; true when it may have been. */
    test(v: string | number): boolean;
    /** Estimated number of values added. */
    size(): number;
    /** Estimated false-positive rate: (set bits / m)^k. */
    error(): number;
    /** A filter of `m` bits and `k` hashes for `n` values at false-positive rate `error`. */
    static withTargetError(n: number, error: number): BloomFilter;
  }
}
