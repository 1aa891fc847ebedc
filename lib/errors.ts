/**
 * The two error branches of every pipeline stage. The class decides what the stage does:
 * - {@link RetryableError}: transient (node, broker or Elasticsearch unavailable, 429, timeout);
 *   the stage retries with backoff and does not commit the offset.
 * - {@link NonRetryableError}: the message itself is bad (undecodable Avro, malformed record,
 *   mapping rejection); the stage sends it to the dead-letter topic and commits.
 * Any other error is treated as retryable.
 * @module
 */

/** A transient failure: retry, do not commit, never dead-letter. */
export class RetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RetryableError";
  }
}

/** A failure caused by the message itself: dead-letter it and move on. */
export class NonRetryableError extends Error {
  constructor(
    /** Stable machine-readable code, e.g. `CS_AVRO_DECODE`, `CS_MALFORMED_RECORD`, `CS_ES_REJECTED`. */
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/** Whether an error should be retried (everything but {@link NonRetryableError}). */
export function isRetryable(err: unknown): boolean {
  return !(err instanceof NonRetryableError);
}
