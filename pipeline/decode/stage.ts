/**
 * The decode stage's Kafka shell: consumes logs, decodes each with the pure {@link Decoder}, and
 * produces events keyed `<transactionHash>_e_<logIndex>`. Logs of unknown events produce nothing.
 * With on-chain token metadata ({@link DecodeStageDeps.tokenMetadata}), the contracts of a batch
 * whose amounts need decimals not in the bundled list are resolved first, all at once (one cache
 * pass, one JSON-RPC batch), so the decoder stays pure and synchronous.
 * @module
 */

import type { Registry } from "prom-client";
import type { TokenMetadataCache } from "../../lib/chain/token-cache.js";
import type { TokenLookup } from "../../lib/chain/tokens.js";
import { NonRetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { eventId, type LogRecord } from "../../lib/records.js";
import { type Bus, createRecordProducer, messageSeq, type OutgoingRecord, seqHeaders } from "../kafka/bus.js";
import { type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import type { Decoder } from "./decoder.js";
import { lookupOf, tokenRequests } from "./token-batch.js";

/**
 * Turns a batch of consumed logs into event messages and per-record failures (pure).
 * @param tokens - the batch's resolved token metadata, consulted when the decoder's own lookup does
 *   not know a token ({@link Decoder.decode}); default none.
 */
export function decodeBatch(
  decoder: Decoder,
  inputs: InputRecord[],
  tokens?: TokenLookup,
): { out: OutgoingRecord[]; failures: HandlerFailure[] } {
  const out: OutgoingRecord[] = [];
  const failures: HandlerFailure[] = [];
  for (const input of inputs) {
    try {
      const ev = decoder.decode(input.record as LogRecord, tokens);
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

/** Dependencies of {@link startDecodeStage} (its Parameters). */
export interface DecodeStageDeps {
  /**
   * The Kafka bus of the chain (pipeline/kafka/bus.ts `createBus`): the stage consumes its `logs`
   * topic in consumer group `bus.groupId("decode")` and produces to its `events` and `dead-letter`
   * topics. Left open on stop (the caller owns it).
   */
  bus: Bus;
  /**
   * Turns one log record into an event record, or null for a log of an unknown event (nothing is
   * produced for it); a throw dead-letters that log (`CS_DECODE_FAILED`). E.g. `createDecoder()`.
   */
  decoder: Decoder;
  /**
   * On-chain token metadata (lib/chain/token-cache.ts), for ERC-20/WETH amounts of contracts the
   * bundled token list does not know: resolved once per consumed batch before decoding. A failure
   * (node down) retries the whole batch; nothing is dead-lettered for it. Default none: such amounts
   * get `scaled: null`.
   */
  tokenMetadata?: TokenMetadataCache;
  /** EIP-155 chain id of the logs, selecting the bundled token list's entries; default 1 (the decoder's default). */
  chainId?: number;
  /** Receives the consumer's `batch failed; retrying` (warn) and `dead-lettered` (warn) lines, tagged `stage: "decode"`. */
  logger: Logger;
  /** Registry of the shell's metrics (pipeline/kafka/metrics.ts), e.g. the process's; default a private one. */
  registry?: Registry;
}

/**
 * Starts the decode stage: logs topic → events topic, keyed `<transactionHash>_e_<logIndex>`, each
 * event with its log's `chainsift-seq` header. Consumer settings are those of `runConsumer`
 * (pipeline/kafka/consumer.ts): from the earliest offset when the group has none, 3 partitions at
 * once, 4 MiB per partition fetch, 30000 ms session timeout, offsets committed at most every 500 ms.
 *
 * Errors of records never reject or stop the stage: a log the decoder throws on becomes a
 * {@link NonRetryableError} `CS_DECODE_FAILED` and goes to the dead-letter topic, as does a message
 * whose Avro does not decode (`CS_AVRO_DECODE`); a failed produce or token-metadata resolve (a
 * `RetryableError` or any other error) retries the whole batch with backoff (500 ms, doubling up to 30 s) without committing it.
 * @param deps - the bus, the decoder, the logger and optionally the metrics registry
 *   ({@link DecodeStageDeps}; default a private registry).
 * @returns a {@link RunningConsumer}: `consumer` (the kafkajs consumer, e.g. for its events),
 *   `deadLettered()` (how many messages this stage sent to the dead-letter topic so far) and
 *   `stop()` (stops consuming, then disconnects the stage's producers; the bus stays open).
 * @throws the kafkajs error (e.g. `KafkaJSConnectionError`, not a lib/errors.ts class) when Kafka
 *   cannot be reached to connect the producers, join the group or subscribe.
 */
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
      const requests = deps.tokenMetadata
        ? tokenRequests(
            inputs.map((i) => i.record),
            deps.chainId ?? 1,
          )
        : [];
      const tokens = deps.tokenMetadata && requests.length > 0 ? lookupOf(await deps.tokenMetadata.resolve(requests)) : undefined;
      const { out, failures } = decodeBatch(deps.decoder, inputs, tokens);
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
