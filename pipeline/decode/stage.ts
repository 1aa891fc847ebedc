/**
 * The decode stage's Kafka shell: consumes logs, decodes each with the pure {@link Decoder}, and
 * produces events keyed `<transactionHash>_e_<logIndex>`. Logs of unknown events produce nothing.
 * @module
 */

import type { Registry } from "prom-client";
import { NonRetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { eventId, type LogRecord } from "../../lib/records.js";
import { type Bus, createRecordProducer, messageSeq, type OutgoingRecord, seqHeaders } from "../kafka/bus.js";
import { type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import type { Decoder } from "./decoder.js";

/** Turns a batch of consumed logs into event messages and per-record failures (pure). */
export function decodeBatch(decoder: Decoder, inputs: InputRecord[]): { out: OutgoingRecord[]; failures: HandlerFailure[] } {
  const out: OutgoingRecord[] = [];
  const failures: HandlerFailure[] = [];
  for (const input of inputs) {
    try {
      const ev = decoder.decode(input.record as LogRecord);
      // The event carries its log's ingest sequence number: it belongs to the same block bundle.
      const headers = seqHeaders(messageSeq(input.message));
      if (ev)
        out.push(headers ? { kind: "events", key: eventId(ev), record: ev, headers } : { kind: "events", key: eventId(ev), record: ev });
    } catch (err) {
      failures.push({
        input,
        error: new NonRetryableError("CS_DECODE_FAILED", `cannot decode log: ${(err as Error).message}`, { cause: err }),
      });
    }
  }
  return { out, failures };
}

/** Dependencies of {@link startDecodeStage}. */
export interface DecodeStageDeps {
  bus: Bus;
  decoder: Decoder;
  logger: Logger;
  /** Registry of the shell's metrics (pipeline/kafka/metrics.ts), e.g. the process's; default a private one. */
  registry?: Registry;
}

/** Starts the decode stage: logs topic → events topic. */
export async function startDecodeStage(deps: DecodeStageDeps): Promise<RunningConsumer> {
  const registry = deps.registry;
  const producer = await createRecordProducer(deps.bus, registry ? { metrics: { registry, stage: "decode" } } : {});
  const running = await runConsumer({
    bus: deps.bus,
    logger: deps.logger,
    ...(registry ? { registry } : {}),
    stage: "decode",
    topics: ["logs"],
    handler: async (inputs) => {
      const { out, failures } = decodeBatch(deps.decoder, inputs);
      await producer.send(out);
      return failures;
    },
  });
  return {
    ...running,
    async stop() {
      await running.stop();
      await producer.disconnect();
    },
  };
}
