/**
 * The ingest stage's TEST-ONLY crash hook: at a configured point (config `ingest.testCrashPoint`,
 * env `CHAINSIFT_TEST_CRASH_POINT`) the process SIGKILLs itself, so tests can check that a crash
 * at any step of the follower or a backfill leaves nothing half done (docs/reorgs.md).
 * @module
 */
import { writeSync } from "node:fs";
import type { CrashPoint } from "../../lib/config/index.js";
import type { Logger } from "../../lib/logger.js";
import { prng } from "../../lib/prng.js";

/** Settings of {@link createCrashHook} (config `ingest.testCrashPoint`, `testCrashPercent`, `testCrashSeed`). */
export interface CrashHookOptions {
  /** Where to crash; undefined: no hook. */
  point: CrashPoint | undefined;
  /** Chance, in percent (0..100), that each pass through `point` kills the process. */
  percent: number;
  /** Seed of that chance (logged when the hook is armed). */
  seed: number;
}

/**
 * The crash hook for {@link IngesterDeps.crashHook}, or undefined when no point is configured.
 * When armed it logs a warning with the point and the seed; at a pass through the point that the
 * seeded chance picks it writes one line to stderr (`chainsift test crash point <point> reached:
 * SIGKILL`) and kills its own process with SIGKILL (nothing else runs after it).
 */
export function createCrashHook(opts: CrashHookOptions, logger: Logger): ((point: CrashPoint) => void) | undefined {
  if (!opts.point) return undefined;
  const random = prng(opts.seed);
  logger.warn({ stage: "ingest", crashPoint: opts.point, percent: opts.percent, seed: opts.seed }, "TEST crash hook armed");
  return (point) => {
    if (point !== opts.point || random() * 100 >= opts.percent) return;
    writeSync(2, `chainsift test crash point ${point} reached: SIGKILL\n`);
    process.kill(process.pid, "SIGKILL");
  };
}
