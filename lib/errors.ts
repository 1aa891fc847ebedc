/**
 * The one error base of chainsift and its two branches (modelled on ponder's `BaseError` →
 * `RetryableError` / `NonRetryableError` tree and viem's `BaseError`). Every error class of the
 * codebase extends {@link ChainsiftError}, so each carries a stable machine-readable `code`.
 *
 * The branch decides what a pipeline stage does with an error:
 * - {@link RetryableError}: transient (node, broker or Elasticsearch unavailable, 429, timeout);
 *   the stage retries with backoff and does not commit the offset.
 * - {@link NonRetryableError}: the message itself is bad (undecodable Avro, malformed record,
 *   mapping rejection); the stage sends it to the dead-letter topic and commits.
 * - Any other error, including a {@link ChainsiftError} of neither branch (configuration, CLI,
 *   store refusals, errors internal to one module), is treated as retryable ({@link isRetryable}).
 * @module
 */

/**
 * The type of a {@link ChainsiftError}'s `code`: a stable `CS_…` string for chainsift's own codes;
 * a number (or undefined) only where a code is an external one kept as sent, i.e. the node's
 * JSON-RPC error code of `RpcAnswerError` (lib/rpc/transport.ts).
 */
export type ChainsiftErrorCode = string | number | undefined;

/** Options of every {@link ChainsiftError} constructor, as `Error`'s. */
export interface ChainsiftErrorOptions {
  /** The underlying error, kept as the standard `cause`. */
  cause?: unknown;
}

/**
 * The base of every chainsift error. Subclasses set `name` to their class name and give a stable
 * `code` (documented per class); catch by class (`instanceof`) or by `code`, never by message.
 * @typeParam Code - the code's type, e.g. a union of `CS_…` literals; `string` by default.
 */
export abstract class ChainsiftError<Code extends ChainsiftErrorCode = string> extends Error {
  /** Stable machine-readable code, e.g. `CS_AVRO_DECODE` (see {@link ChainsiftErrorCode}). */
  abstract readonly code: Code;

  constructor(message: string, options?: ChainsiftErrorOptions) {
    super(message, options);
    this.name = "ChainsiftError";
  }
}

/** Code of a {@link RetryableError} that gives none of its own. */
export const RETRYABLE = "CS_RETRYABLE";

/**
 * A transient failure: retry, do not commit, never dead-letter. Its code is {@link RETRYABLE}
 * unless a subclass gives another.
 */
export class RetryableError<Code extends ChainsiftErrorCode = string> extends ChainsiftError<Code> {
  readonly code: Code;

  constructor(message: string, options?: ChainsiftErrorOptions) {
    super(message, options);
    this.name = "RetryableError";
    // A subclass with another code type (RpcAnswerError's number) overwrites it with its own field.
    this.code = RETRYABLE as Code;
  }
}

/** A failure caused by the message itself: dead-letter it and move on. */
export class NonRetryableError extends ChainsiftError {
  constructor(
    /** Stable machine-readable code, e.g. `CS_AVRO_DECODE`, `CS_MALFORMED_RECORD`, `CS_ES_REJECTED`. */
    readonly code: string,
    message: string,
    options?: ChainsiftErrorOptions,
  ) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/** Whether an error should be retried (everything but {@link NonRetryableError}). */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof NonRetryableError);
}
