/**
 * One bulk for the partition batches that arrive together: kafkajs hands the index stage one batch
 * per partition (up to `partitionsConsumedConcurrently`, 3, at once), and each became its own bulk
 * request bracketed by two canonical-map reads. {@link coalesceBatches} merges the batches that
 * arrive while a merged call runs (or in the same turn of the event loop) into the next call, so
 * a fetch cycle costs one bulk and one canonical check before and after it.
 *
 * Correctness is the handler's own: the index stage's `indexBatch` is correct for any set of
 * records (external versions and the canonical check are per document: pipeline/index/indexer.ts),
 * so a merged call writes and removes exactly what the separate calls would. Each caller gets the
 * failures of its own records; when the merged call throws, every caller of it gets the error and
 * retries its own batch (the consumer shell's backoff), as each would have on its own failure.
 * @module
 */
import type { BatchHandler, HandlerFailure, InputRecord, UndecodedInput } from "../kafka/consumer.js";

interface Waiting {
  inputs: InputRecord[];
  resolve: (failures: HandlerFailure[] | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Wraps a batch handler so that concurrent calls are merged: the first call starts a merged call
 * on the next turn of the event loop (`setImmediate`, so the partition batches kafkajs hands over
 * together join it); calls arriving while a merged call runs wait for it and are merged into the
 * next. Calls never overlap.
 * @param handler - a handler correct for any union of batches (records of any topics, any order
 *   between partitions).
 * @returns a handler with the same contract, per caller: the failures of the caller's records, or
 *   the merged call's error.
 */
export function coalesceBatches(handler: BatchHandler): BatchHandler {
  let waiting: Waiting[] = [];
  let scheduled = false;
  const run = async (): Promise<void> => {
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      try {
        const failures = await handler(group.length === 1 ? (group[0] as Waiting).inputs : group.flatMap((g) => g.inputs));
        settle(group, failures ?? []);
      } catch (err) {
        for (const g of group) g.reject(err);
      }
    }
    scheduled = false;
  };
  return (inputs) =>
    new Promise<HandlerFailure[] | undefined>((resolve, reject) => {
      waiting.push({ inputs, resolve, reject });
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => void run());
    });
}

/** Hands each caller of a merged call the failures of its own records. */
function settle(group: Waiting[], failures: HandlerFailure[]): void {
  if (group.length === 1) {
    (group[0] as Waiting).resolve(failures);
    return;
  }
  const owner = new Map<UndecodedInput, HandlerFailure[]>();
  const perCaller = group.map((g) => {
    const mine: HandlerFailure[] = [];
    for (const input of g.inputs) owner.set(input, mine);
    return mine;
  });
  for (const f of failures) {
    const mine = owner.get(f.input);
    if (!mine) throw new Error("a merged batch's failure names a record no caller handed over");
    mine.push(f);
  }
  group.forEach((g, i) => {
    g.resolve(perCaller[i]);
  });
}
