/**
 * A small seeded pseudo-random generator for benchmarks, randomised tests and the test-only crash
 * hook of the ingest stage (pipeline/ingest/crash.ts), so a run can be
 * repeated from its printed seed.
 * @module
 */

/**
 * mulberry32 (Tommy Ettinger's 32-bit generator): uniform in [0, 1), the same sequence for the
 * same seed.
 * @param seed Any number; only its low 32 bits are used.
 * @returns A function giving the next value on each call.
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
