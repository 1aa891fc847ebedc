/**
 * Structured logging with pino (https://getpino.io). One root logger per process; stages and
 * the API take a child.
 * @module
 */
import { pino } from "pino";

/** The logger type passed through dependency objects. */
export type Logger = pino.Logger;

/** Creates the root logger. `level` is a pino level (`info`, `debug`, `silent`, …). */
export function createLogger(level = "info", name = "chainsift"): Logger {
  return pino({ name, level });
}
