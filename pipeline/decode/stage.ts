/**
 * The decode stage's Kafka shell: consumes logs, decodes each with the pure {@link Decoder}, and
 * produces events keyed `<transactionHash>_e_<logIndex>`. Logs of unknown events produce nothing.
 * With on-chain token metadata ({@link DecodeStageDeps.tokenMetadata}), the contracts of a batch
 * whose amounts need decimals not in the bundled list are resolved first, all at once (one cache
 * pass, one JSON-RPC batch), so the decoder stays pure and synchronous.
 * @module
 */

import type { Client } from "@elastic/elasticsearch";
import type { Registry } from "prom-client";
import { ABI_ANY_ADDRESS, eventFragments } from "../../lib/abis/model.js";
import { REDECODE_LEASE_MS, type RedecodeStatusStore } from "../../lib/abis/redecode-status.js";
import type { AbiChange } from "../../lib/abis/store.js";
import type { TokenMetadataCache } from "../../lib/chain/token-cache.js";
import type { TokenLookup } from "../../lib/chain/tokens.js";
import { NonRetryableError } from "../../lib/errors.js";
import type { Logger } from "../../lib/logger.js";
import { type EventRecord, eventId, type LogRecord } from "../../lib/records.js";
import { type Bus, createRecordProducer, messageSeq, type OutgoingRecord, seqHeaders } from "../kafka/bus.js";
import { type HandlerFailure, type InputRecord, type RunningConsumer, runConsumer } from "../kafka/consumer.js";
import { type AbiRegistry, type AbiRegistryDeps, createAbiRegistry } from "./abis.js";
import type { Decoder } from "./decoder.js";
import { countEvents, decodeMetricsOf } from "./metrics.js";
import { redecodeHistory } from "./redecode.js";
import { lookupOf, tokenRequests } from "./token-batch.js";

/**
 * A decoder that tries the user ABIs when the standard layouts do not decode a log: the standard
 * event when it decodes without error (standard layouts win, so their `scaled` amounts and labels
 * stay the same for every user), else the ABI event when one decodes; a signature-database event
 * only when no user ABI applies to the contract (then the ABI's failure record, or null); else
 * whichever failure record exists (standard first), else null (precedence: docs/decoding.md).
 * @param standard - the standard decoder (./decoder.ts), which also decodes by signature.
 * @param abis - the live registry (./abis.ts).
 * @param known - standard results already computed for this batch (avoids decoding twice).
 */
export function withAbis(
  standard: Decoder,
  abis: Pick<AbiRegistry, "decode" | "covers">,
  known?: Map<LogRecord, EventRecord | null>,
): Decoder {
  return {
    decode(log, tokens) {
      const std = known?.has(log) ? (known.get(log) ?? null) : standard.decode(log, tokens);
      if (std && std.error === null && std.source === "standard") return std;
      const ev = abis.decode(log);
      if (ev && ev.error === null) return ev;
      if (std?.source === "signature") return ev ?? (abis.covers(log) ? null : std);
      return std ?? ev;
    },
  };
}

/**
 * Turns a batch of consumed logs into event messages and per-record failures (pure).
 * @param tokens - the batch's resolved token metadata, consulted when the decoder's own lookup does
 *   not know a token ({@link Decoder.decode}); default none.
 */
export function decodeBatch(
  decoder: Decoder,
  inputs: InputRecord<"logs">[],
  tokens?: TokenLookup,
): { out: OutgoingRecord<"events">[]; failures: HandlerFailure[] } {
  const out: OutgoingRecord<"events">[] = [];
  const failures: HandlerFailure[] = [];
  for (const input of inputs) {
    try {
      const ev = decoder.decode(input.record, tokens);
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
  /**
   * EIP-155 chain id of the logs (lib/config/index.ts `Config.chainId`), selecting the bundled token
   * list's entries: tokens the list knows on this chain are not asked on chain.
   */
  chainId: number;
  /**
   * The bundled token list's lookup (the decoder's): tokens it knows are not asked on chain. Default
   * `lookupToken` (lib/chain/tokens.ts); `() => undefined` when the list is off.
   */
  tokens?: TokenLookup;
  /** Receives the consumer's `batch failed; retrying` (warn) and `dead-lettered` (warn) lines, tagged `stage: "decode"`. */
  logger: Logger;
  /** Registry of the shell's metrics (pipeline/kafka/metrics.ts), e.g. the process's; default a private one. */
  registry?: Registry;
  /**
   * User ABIs (docs/decoding.md, "User ABIs"): the registry's dependencies (store, change feed,
   * proxy reader, intervals; the logger is the stage's) and, for re-decoding history on a new
   * registration, {@link RedecodeOptions}. Absent: only the standard decoder.
   */
  abis?: Omit<AbiRegistryDeps, "logger" | "onChange"> & { redecode?: RedecodeOptions };
}

/** How the decode stage re-decodes history after an ABI registration (docs/decoding.md, "Re-decode"). */
export interface RedecodeOptions {
  es: Client;
  /** The log index (es/mappings.ts `indexName(chain, "log", prefix)`). */
  logIndex: string;
  /** Most logs read per registration (config `abis.redecodeMaxLogs`). */
  maxLogs: number;
  /**
   * The lock (one decode process of the group re-decodes each registration) and the status the
   * ABI routes show (lib/abis/redecode-status.ts `createRedecodeStatusStore`).
   */
  status: RedecodeStatusStore;
  /**
   * Retries of a failed re-decode (Elasticsearch or Kafka failing): after the n-th failure the
   * lock is released and the re-decode runs again after `min(maxDelayMs, baseDelayMs · 2^(n−1))`
   * ms, at most `maxAttempts` attempts in all; then the status says `gave_up` (registering the ABI
   * again starts over). Defaults: 1000 ms, 300000 ms, 10 attempts (about 13 minutes in all).
   */
  retry?: { baseDelayMs?: number; maxDelayMs?: number; maxAttempts?: number };
  /**
   * How often (ms) the stage looks for re-decodes left unfinished by a decode process that
   * stopped or crashed (status `running` or `failed` with its next attempt due, and no lock held)
   * and resumes them; also once at start. Default 60000.
   */
  resumeIntervalMs?: number;
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
  const metrics = registry ? decodeMetricsOf(registry) : undefined;
  const abis = deps.abis ? await startAbis(deps, deps.abis, producer.send.bind(producer)) : undefined;
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
            deps.chainId,
            deps.tokens,
          )
        : [];
      const tokens = deps.tokenMetadata && requests.length > 0 ? lookupOf(await deps.tokenMetadata.resolve(requests)) : undefined;
      let decoder = deps.decoder;
      if (abis) {
        // Standard results first: only logs it leaves undecoded may need a proxy's implementation read.
        const known = new Map<LogRecord, EventRecord | null>();
        const pending: LogRecord[] = [];
        for (const input of inputs) {
          const log = input.record;
          try {
            const ev = deps.decoder.decode(log, tokens);
            known.set(log, ev);
            if (!ev || ev.error !== null || ev.source !== "standard") pending.push(log);
          } catch {
            // decodeBatch decodes it again and dead-letters it.
          }
        }
        await abis.registry.prepare(pending);
        decoder = withAbis(deps.decoder, abis.registry, known);
      }
      const { out, failures } = decodeBatch(decoder, inputs, tokens);
      await producer.send(out);
      if (metrics)
        countEvents(
          metrics.events,
          out.map((m) => m.record),
        );
      return failures;
    },
  });
  return {
    ...running,
    async stop() {
      await abis?.stop();
      await running.stop();
      await producer.disconnect();
    },
  };
}

/** Starts the ABI registry of the stage and its re-decoding of history (one registration at a time). */
async function startAbis(
  deps: DecodeStageDeps,
  options: NonNullable<DecodeStageDeps["abis"]>,
  produce: (records: OutgoingRecord[]) => Promise<void>,
): Promise<{ registry: AbiRegistry; stop(): Promise<void> }> {
  const logger = deps.logger.child({ stage: "decode" });
  const metrics = deps.registry ? decodeMetricsOf(deps.registry) : undefined;
  let queue: Promise<void> = Promise.resolve();
  let stopped = false;
  const retries = new Set<NodeJS.Timeout>();
  // Re-decodes queued or waiting for a retry in this process (`<namespace>:<address>:<at>`).
  const mine = new Set<string>();
  const keyOf = (c: AbiChange) => `${c.namespace}:${c.address}:${c.at}`;
  const enqueue = (change: AbiChange, attempt: number, lastError: string | null) => {
    mine.add(keyOf(change));
    queue = queue
      .then(() => redecode(change, attempt, lastError))
      .catch((err: unknown) => logger.error({ err, ...change }, "abi re-decode: cannot record its outcome"));
  };
  /** Resumes re-decodes a stopped or crashed decode process left `running` or `failed` (lock gone). */
  const resume = async () => {
    const r = options.redecode;
    if (!r || stopped) return;
    const nowMs = Date.now();
    for (const { namespace, address, status } of await r.status.list()) {
      const change: AbiChange = { op: "put", namespace, address, at: status.registrationAt };
      const due = status.state === "running" || (status.state === "failed" && Date.parse(status.nextAttemptAt ?? "") <= nowMs);
      if (!due || mine.has(keyOf(change)) || (await r.status.locked(namespace, address, status.registrationAt))) continue;
      if ((await options.store.get(namespace, address))?.updatedAt !== status.registrationAt) continue; // replaced or removed
      logger.warn({ namespace, address, state: status.state, attempts: status.attempts }, "abi re-decode left unfinished; resuming it");
      enqueue(change, status.attempts + 1, status.lastError);
    }
  };
  /**
   * One attempt at re-decoding a registration's history. A failure releases the lock, is logged at
   * error level with the address, counted (`chainsift_decode_redecode_failures_total`), recorded in
   * the status the ABI routes show, and retried after a backoff (RedecodeOptions.retry).
   */
  const redecode = async (change: AbiChange, attempt: number, lastError: string | null) => {
    const r = options.redecode;
    if (!r || stopped || change.op !== "put") {
      mine.delete(keyOf(change));
      return;
    }
    const lock = { claimed: false };
    try {
      await redecodeOnce(r, change, attempt, lastError, lock);
      mine.delete(keyOf(change));
    } catch (err) {
      if (stopped) return;
      const message = err instanceof Error ? err.message : String(err);
      const maxAttempts = Math.max(1, r.retry?.maxAttempts ?? 10);
      const delayMs = Math.min(r.retry?.maxDelayMs ?? 300_000, (r.retry?.baseDelayMs ?? 1000) * 2 ** (attempt - 1));
      const again = attempt < maxAttempts;
      metrics?.redecodeFailures.inc();
      logger.error(
        { err, namespace: change.namespace, address: change.address, attempt, maxAttempts, ...(again ? { retryInMs: delayMs } : {}) },
        again ? "abi re-decode failed; retrying after a backoff" : "abi re-decode failed; giving up (register the ABI again to retry)",
      );
      // Released so that this process (or another, after a restart and a new registration) can run it again.
      if (!again) mine.delete(keyOf(change));
      if (lock.claimed)
        await r.status.failed(change.namespace, change.address, change.at, attempt, message, again ? Date.now() + delayMs : null);
      if (!again) return;
      const timer = setTimeout(() => {
        retries.delete(timer);
        if (!stopped) enqueue(change, attempt + 1, message);
      }, delayMs);
      timer.unref();
      retries.add(timer);
    }
  };
  /** Sets `lock.claimed` once it holds the lock; throws what reading the registration or the re-decode throws. */
  const redecodeOnce = async (
    r: RedecodeOptions,
    change: AbiChange,
    attempt: number,
    lastError: string | null,
    lock: { claimed: boolean },
  ): Promise<void> => {
    const reg = await options.store.get(change.namespace, change.address);
    if (!reg || reg.updatedAt !== change.at) return; // replaced or removed meanwhile: that change re-decodes
    const index = abiRegistry.index();
    let selector: { addresses: string[] } | { topic0s: string[] };
    if (reg.address === ABI_ANY_ADDRESS) {
      selector = { topic0s: eventFragments(reg.abi).map((f) => f.topicHash.toLowerCase()) };
    } else {
      // Another namespace's ABI decodes this address (it was first): its events already exist.
      if (index.owners.get(reg.address)?.namespace !== reg.namespace) return;
      selector = { addresses: [reg.address, ...abiRegistry.proxiesOf(reg.address)] };
    }
    if (!(await r.status.claim(change.namespace, change.address, change.at, attempt, lastError))) return;
    lock.claimed = true;
    const decoder = withAbis(deps.decoder, abiRegistry);
    // The lock is a lease: renewed while this runs, so a crash frees it for a resume (see `resume`).
    const renewal = setInterval(
      () => void r.status.renew(change.namespace, change.address, change.at).catch(() => {}),
      Math.floor(REDECODE_LEASE_MS / 3),
    );
    renewal.unref();
    let result: Awaited<ReturnType<typeof redecodeHistory>>;
    try {
      result = await redecodeHistory(
        { es: r.es, logIndex: r.logIndex, maxLogs: r.maxLogs, decode: (l) => decoder.decode(l), produce, stopped: () => stopped },
        selector,
      );
    } finally {
      clearInterval(renewal);
    }
    await r.status.succeeded(change.namespace, change.address, change.at, attempt, result, lastError);
    const fields = { namespace: change.namespace, address: change.address, attempt, ...result };
    if (result.truncated) logger.warn(fields, "abi re-decode truncated (CHAINSIFT_ABI_REDECODE_MAX_LOGS)");
    else logger.info(fields, "abi re-decode done");
  };
  const abiRegistry = createAbiRegistry({
    ...options,
    logger: deps.logger,
    onChange: (change) => enqueue(change, 1, null),
  });
  await abiRegistry.start();
  const safeResume = () => {
    queue = queue
      .then(resume)
      .catch((err: unknown) => logger.warn({ err }, "abi re-decode: cannot look for unfinished re-decodes; retried later"));
  };
  let resumer: NodeJS.Timeout | undefined;
  if (options.redecode) {
    safeResume();
    resumer = setInterval(safeResume, Math.max(1000, options.redecode.resumeIntervalMs ?? 60_000));
    resumer.unref();
  }
  return {
    registry: abiRegistry,
    async stop() {
      stopped = true;
      clearInterval(resumer);
      for (const t of retries) clearTimeout(t);
      retries.clear();
      await abiRegistry.stop();
      await queue;
    },
  };
}
