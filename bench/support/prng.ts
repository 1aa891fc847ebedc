/**
 * The seeded generator of benchmarks and randomised tests, now in lib/prng.ts (the ingest stage's
 * test-only crash hook uses it too); re-exported here for the benchmarks and tests that import it.
 * @module
 */
export { prng } from "../../lib/prng.js";
