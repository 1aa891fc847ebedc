/**
 * The display of a backfill's progress (`npm start -- --rpc-url … --from N --to M`,
 * `npm run stage -- ingest --from N --to M`): the thin shell around the arithmetic of
 * lib/progress.ts.
 *
 * - stdout is a terminal: a cli-progress bar (https://github.com/npkill/cli-progress) with blocks
 *   done / total, blocks/s, records/s and the ETA, redrawn in place. While it is shown, the
 *   process's log lines are redirected into the bar's `log` (printed above it on the next redraw)
 *   so they never tear through it.
 * - otherwise (a pipe, a file, a container log): a `backfill progress` log line at the start,
 *   every `intervalMs`, and at the end.
 * @module
 */
import { MultiBar, Presets, type SingleBar } from "cli-progress";
import type { Logger, LogOutput } from "../lib/logger.js";
import {
  addSample,
  estimate,
  formatDuration,
  formatRate,
  type ProgressEstimate,
  type ProgressHistory,
  startProgress,
} from "../lib/progress.js";
import type { BackfillProgress } from "../pipeline/ingest/ingest.js";

/** Options of {@link createBackfillDisplay}. */
export interface BackfillDisplayOptions {
  /** Receives the progress lines without a terminal. */
  logger: Logger;
  /** The process's log output (lib/common.ts `logOutput`), redirected into the bar while it is shown. */
  logOutput: LogOutput;
  /** Interval of the progress lines without a terminal, in ms (`CHAINSIFT_PROGRESS_INTERVAL_MS`). */
  intervalMs: number;
  /** Whether to draw a bar; default `process.stdout.isTTY`. */
  tty?: boolean;
  /** Where the bar is drawn; default `process.stdout`. */
  stream?: NodeJS.WritableStream;
  /** Clock in ms; default `performance.now()`. */
  now?: () => number;
}

/** A backfill's display. */
export interface BackfillDisplay {
  /** The backfill's `onProgress` (pipeline/ingest/ingest.ts `BackfillOptions`). */
  update(progress: BackfillProgress): void;
  /** Draws or logs the last state and releases the terminal (idempotent). */
  stop(): void;
}

/** The fields of a progress log line (also what the integration test reads). */
function lineFields(p: BackfillProgress, e: ProgressEstimate) {
  return {
    from: p.from,
    to: p.to,
    done: e.done,
    total: e.total,
    records: p.records,
    blocksPerSec: Number(e.unitsPerSec.toFixed(2)),
    recordsPerSec: Number(e.recordsPerSec.toFixed(2)),
    etaMs: e.etaMs === null ? null : Math.round(e.etaMs),
  };
}

/** `120/1000 blocks (12.0%), 40.1 blocks/s, 900 records/s, ETA 22s`. */
function summary(e: ProgressEstimate): string {
  return (
    `${e.done}/${e.total} blocks (${(e.fraction * 100).toFixed(1)}%), ${formatRate(e.unitsPerSec)} blocks/s, ` +
    `${formatRate(e.recordsPerSec)} records/s, ETA ${formatDuration(e.etaMs)}`
  );
}

/**
 * Creates the display; nothing is shown before the first {@link BackfillDisplay.update}.
 * @param opts - see {@link BackfillDisplayOptions}.
 * @returns the display; call `stop()` when the backfill ends or fails.
 */
export function createBackfillDisplay(opts: BackfillDisplayOptions): BackfillDisplay {
  const now = opts.now ?? (() => performance.now());
  const tty = opts.tty ?? process.stdout.isTTY === true;
  let history: ProgressHistory | undefined;
  let latest: BackfillProgress | undefined;
  let stopped = false;
  let multibar: MultiBar | undefined;
  let bar: SingleBar | undefined;
  let timer: NodeJS.Timeout | undefined;

  const log = () => {
    if (latest && history) opts.logger.info(lineFields(latest, estimate(history)), `backfill progress: ${summary(estimate(history))}`);
  };
  const payload = (p: BackfillProgress, e: ProgressEstimate) => ({
    range: `${p.from}..${p.to}`,
    bps: formatRate(e.unitsPerSec),
    rps: formatRate(e.recordsPerSec),
    etaText: formatDuration(e.etaMs),
  });

  const start = (p: BackfillProgress, e: ProgressEstimate) => {
    if (tty) {
      multibar = new MultiBar(
        {
          stream: opts.stream ?? process.stdout,
          format: "backfill {range} |{bar}| {percentage}% | {value}/{total} blocks | {bps} blocks/s | {rps} records/s | ETA {etaText}",
          hideCursor: true,
          autopadding: true,
          clearOnComplete: false,
        },
        Presets.shades_classic,
      );
      bar = multibar.create(p.total, e.done, payload(p, e));
      const mb = multibar;
      opts.logOutput.redirect((line) => mb.log(line));
    } else {
      log();
      timer = setInterval(log, opts.intervalMs);
      timer.unref();
    }
  };

  return {
    update(p) {
      if (stopped) return;
      const sample = { atMs: now(), done: p.done, records: p.records };
      history = history ? addSample(history, sample) : startProgress(p.total, sample);
      latest = p;
      const e = estimate(history);
      if (!multibar && !timer) start(p, e);
      else bar?.update(e.done, payload(p, e));
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (multibar) {
        multibar.update(); // prints the log lines still buffered in the bar
        multibar.stop();
        opts.logOutput.redirect(undefined);
      }
      if (timer) {
        clearInterval(timer);
        log();
      }
    },
  };
}
