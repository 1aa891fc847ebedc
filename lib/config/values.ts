/**
 * Enumerated values of `loadConfig` settings (lib/config/index.ts re-exports them): log formats and
 * the ingest stage's test-only crash points.
 * @module
 */

/** The values of `LOG_FORMAT` ({@link Config.logFormat}). */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;
/** `auto`, `json` or `pretty` ({@link Config.logFormat}). */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The ingest stage's test-only crash points (config `ingest.testCrashPoint`): `announce-unwind`
 * after a reorg's `reorgs` records are produced and before the follower's position is unwound;
 * `produce-tip` after a block's records are produced and before the tip is written;
 * `backfill-chunk` after a backfill chunk is produced and before its progress is written.
 */
export const CRASH_POINTS = ["announce-unwind", "produce-tip", "backfill-chunk"] as const;
/** One of {@link CRASH_POINTS}. */
export type CrashPoint = (typeof CRASH_POINTS)[number];
