/**
 * The logger shape the dev-chain helpers accept. A pino `Logger` satisfies it, so does a
 * `console`-backed adapter; every call is `logger.level({...fields}, "message")`.
 * @module
 */

/** One log method: structured fields first, then a human-readable message (pino's argument order). */
export type DevchainLogFn = (fields: Record<string, unknown>, message: string) => void;

/** Minimal structured logger (a subset of pino's `Logger`). */
export interface DevchainLogger {
  debug: DevchainLogFn;
  info: DevchainLogFn;
  warn: DevchainLogFn;
  error: DevchainLogFn;
}

const noop: DevchainLogFn = () => {};

/** A logger that drops everything; the default when no `logger` option is given. */
export const silentLogger: DevchainLogger = { debug: noop, info: noop, warn: noop, error: noop };

/** The error's most useful one-line description (ethers' `shortMessage` when present). */
export function errorMessage(err: unknown): string {
  if (err && typeof err === "object" && "shortMessage" in err && typeof err.shortMessage === "string") return err.shortMessage;
  if (err instanceof Error) return err.message;
  return String(err);
}
