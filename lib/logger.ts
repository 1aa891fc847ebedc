/**
 * Structured logging with pino (https://getpino.io). One root logger per process; stages and
 * the API take a child.
 *
 * Format (`LOG_FORMAT`, lib/config/index.ts): JSON lines, or human-readable lines by pino-pretty
 * (https://github.com/pinojs/pino-pretty), by default only when stdout is a terminal. The pretty
 * form uses pino-pretty's `prettyFactory` (a synchronous line formatter), not its transport: a
 * transport runs in a worker thread and loses the last lines when the process calls
 * `process.exit`; here every line is formatted and written synchronously on the calling thread,
 * through the same synchronous stdout writer (`pino.destination({ sync: true })`) in both formats.
 *
 * Lines go through a {@link LogOutput}, which a terminal display (the backfill progress bar,
 * cli/progress.ts) can redirect while it owns the screen, so log lines are printed above the bar
 * instead of being torn through it.
 * @module
 */
import { pino } from "pino";
import { prettyFactory } from "pino-pretty";
import type { LogFormat } from "./config/index.js";

/** The logger type passed through dependency objects. */
export type Logger = pino.Logger;

/**
 * Where formatted log lines go: stdout, or, while {@link LogOutput.redirect} is set, a function
 * (e.g. a progress bar's `log`).
 */
export interface LogOutput {
  /** Writes one formatted line (ending in `\n`). */
  write(line: string): void;
  /**
   * Sends the following lines to `to` instead of stdout; `undefined` restores stdout.
   * @param to - receives each line, `\n` included.
   */
  redirect(to: ((line: string) => void) | undefined): void;
}

/** Options of {@link createLogger} beyond the level and name. */
export interface LoggerOptions {
  /** `json`, `pretty`, or `auto` = pretty when {@link LoggerOptions.tty}. Default `json`. */
  format?: LogFormat;
  /** Whether stdout is a terminal (decides `auto`). Default `process.stdout.isTTY`. */
  tty?: boolean;
  /** Where lines go. Default a new {@link createLogOutput} on stdout. */
  output?: LogOutput;
}

/**
 * A redirectable output writing to file descriptor 1 synchronously (sonic-boom, as pino's default
 * destination), so lines logged just before `process.exit` are not lost.
 * @returns a {@link LogOutput} writing to stdout until redirected.
 */
export function createLogOutput(): LogOutput {
  const stdout = pino.destination({ dest: 1, sync: true });
  let target: ((line: string) => void) | undefined;
  return {
    write(line) {
      if (target) target(line);
      else stdout.write(line);
    },
    redirect(to) {
      target = to;
    },
  };
}

/**
 * Whether lines are pretty-printed.
 * @param format - the configured format.
 * @param tty - whether stdout is a terminal.
 * @returns true for `pretty`, and for `auto` in a terminal.
 */
export function isPretty(format: LogFormat, tty: boolean): boolean {
  return format === "pretty" || (format === "auto" && tty);
}

/** `<prefix><key>` and `*.<prefix><key>` for each prefix: the key at those places, at the top or one level down. */
const secretAt = (key: string, prefixes: readonly string[]): string[] => prefixes.flatMap((p) => [`${p}${key}`, `*.${p}${key}`]);

/**
 * Log fields that would hold a rule's secrets if an action, its parameters or a rule config were
 * ever logged, censored as `[redacted]` in every line by pino's `redact`
 * (https://getpino.io/#/docs/redaction): a `Kafka` action's SASL and schema-registry passwords
 * (lib/rules/model.ts `KafkaParameters.sasl`, `.avro.auth`), PagerDuty's `routingKey` and Opsgenie's
 * `apiKey`, wherever an action, its parameters, its `sasl`/`auth` object or a rule's alerts are
 * logged. Defence in depth: the notify stage logs ids and codes, never parameters.
 */
export const REDACTED_PATHS: readonly string[] = [
  ...secretAt("password", ["", "sasl.", "parameters.sasl.", "auth.", "avro.auth.", "parameters.avro.auth."]),
  ...["routingKey", "apiKey"].flatMap((k) => secretAt(k, ["", "parameters.", "alerts[*].parameters.", "config.alerts[*].parameters."])),
];
const redact = { paths: [...REDACTED_PATHS], censor: "[redacted]" };

/**
 * Creates the root logger.
 * @param level - a pino level (`info`, `debug`, `silent`, …); default `info`.
 * @param name - the `name` field of every line; default `chainsift`.
 * @param options - format and output ({@link LoggerOptions}); without them, JSON lines on
 *   pino's default destination (tests and tools).
 * @returns the logger.
 */
export function createLogger(level = "info", name = "chainsift", options?: LoggerOptions): Logger {
  if (!options) return pino({ name, level, redact });
  const output = options.output ?? createLogOutput();
  if (!isPretty(options.format ?? "json", options.tty ?? process.stdout.isTTY === true)) {
    return pino({ name, level, redact }, { write: (line: string) => output.write(line) });
  }
  // colorize follows the terminal; `ignore` drops fields every line of a process has in common;
  // singleLine keeps a line's fields on it (an error's stack still follows on its own lines).
  const pretty = prettyFactory({
    colorize: options.tty ?? process.stdout.isTTY === true,
    ignore: "pid,hostname",
    translateTime: "HH:MM:ss.l",
    singleLine: true,
  });
  return pino({ name, level, redact }, { write: (line: string) => output.write(pretty(line)) });
}
