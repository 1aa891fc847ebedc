/**
 * `npm run chainsift -- status`: the pipeline on one screen, read from the services themselves (no
 * stage process needs to be up): the services' health (Kafka, Elasticsearch, schema registry,
 * Redis, the JSON-RPC node), the chain head vs the last block ingest produced, each stage's
 * consumer-group lag (committed offsets vs high watermarks, pipeline/kafka/lag.ts) and the
 * dead letters written in the last hour (the dead-letter topic's time index). Unhealthy when a
 * service does not answer (or Elasticsearch is red), or a `--max-*` threshold is exceeded; the
 * CLI then exits 1 (scripts, container health checks). docs/metrics.md.
 * @module
 */
import { Kafka, logLevel } from "kafkajs";
import { createRedisChainState } from "../lib/chain/state.js";
import { type Config, rpcEndpoints } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { connectRedisClient, withTimeout } from "../lib/redis.js";
import { createRpcClient } from "../lib/rpc/client.js";
import { redactRpcUrl } from "../lib/rpc/transport.js";
import { INDEX_REORGS_STAGE } from "../pipeline/index/indexer.js";
import { createBus } from "../pipeline/kafka/bus.js";
import { consumerGroupLag, recordsSince } from "../pipeline/kafka/lag.js";
import { CONSUMING_STAGES } from "../pipeline/runtime.js";

/** How long each service may take to answer, ms. */
const PROBE_TIMEOUT_MS = 3_000;
/** The dead-letter window, ms. */
const DEAD_LETTER_WINDOW_MS = 3_600_000;

/** One service's answer. */
export interface ServiceHealth {
  name: "kafka" | "elasticsearch" | "schema-registry" | "redis" | "rpc-node";
  ok: boolean;
  /** e.g. `green`, `1 broker`, or the error. */
  detail: string;
}

/** One consumer group's lag, summed over its partitions. */
export interface GroupLag {
  stage: string;
  group: string;
  /** Σ lag over the partitions it committed offsets on; null when it has committed none (never ran). */
  lag: number | null;
  partitions: number;
}

/** One JSON-RPC endpoint of the chain (`CHAINSIFT_RPC_URLS`) as `eth_blockNumber` found it. */
export interface EndpointStatus {
  /** The URL without credentials (lib/rpc/transport.ts `redactRpcUrl`). */
  endpoint: string;
  ok: boolean;
  /** Its head, null when it did not answer. */
  head: number | null;
  /** `head N`, `head N, M blocks behind` (behind the highest endpoint head), or the error. */
  detail: string;
}

/** Thresholds that make the status unhealthy when exceeded (absent: not checked). */
export interface StatusThresholds {
  /** Largest allowed lag of one consumer group, in records. */
  maxLag?: number;
  /** Largest allowed head − ingested, in blocks. */
  maxHeadLag?: number;
  /** Largest allowed number of dead letters in the last hour. */
  maxDeadLetters?: number;
}

/** What {@link gatherStatus} found. */
export interface Status {
  /** `technology/blockchain/network`. */
  chain: string;
  /** When it was read (ISO 8601). */
  at: string;
  services: ServiceHealth[];
  /** The node's head (`eth_blockNumber`; the highest of the endpoints), null when unreachable. */
  head: number | null;
  /**
   * Each JSON-RPC endpoint, in configured order. The `rpc-node` service is ok while one answers;
   * an endpoint down or behind is shown here, and does not make the status unhealthy.
   */
  endpoints: EndpointStatus[];
  /** The last block ingest's follower produced (its durable position in Redis), null when none. */
  ingested: number | null;
  /** head − ingested, null when either is unknown. */
  headLag: number | null;
  groups: GroupLag[];
  /** Records written to the dead-letter topic in the last hour, null when Kafka did not answer. */
  deadLettersLastHour: number | null;
  /** Why it is unhealthy (empty: healthy). */
  problems: string[];
  healthy: boolean;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).split("\n")[0]?.slice(0, 160) ?? "";

/** Runs a probe with the timeout; its result, or the error as a failed {@link ServiceHealth}. */
async function probe(name: ServiceHealth["name"], fn: () => Promise<{ ok: boolean; detail: string }>): Promise<ServiceHealth> {
  try {
    return { name, ...(await withTimeout(fn(), PROBE_TIMEOUT_MS)) };
  } catch (err) {
    return { name, ok: false, detail: `unreachable: ${errorText(err)}` };
  }
}

/**
 * Reads the status of the pipeline of `config.chain` from the services (each probe at most 3 s).
 * @param config - the process configuration (services, prefixes, chain, `ingest.rpcUrl`).
 * @param thresholds - optional limits (see {@link StatusThresholds}).
 * @returns the status; never throws for an unreachable service (it is reported instead).
 */
export async function gatherStatus(config: Config, thresholds: StatusThresholds = {}): Promise<Status> {
  const chain = `${config.chain.technology}/${config.chain.blockchain}/${config.chain.network}`;
  const bus = await createBus({ config, logger: createLogger("silent"), setup: false }); // names only: connects nothing
  const kafka = new Kafka({
    clientId: `${config.kafka.clientId}-status`,
    brokers: config.kafka.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: PROBE_TIMEOUT_MS,
    requestTimeout: PROBE_TIMEOUT_MS,
    retry: { retries: 1, initialRetryTime: 100 },
  });
  const admin = kafka.admin();
  let head: number | null = null;
  let ingested: number | null = null;
  let groups: GroupLag[] = [];
  let deadLettersLastHour: number | null = null;
  let endpoints: EndpointStatus[] = [];

  const services = await Promise.all([
    probe("kafka", async () => {
      await admin.connect();
      const cluster = await admin.describeCluster();
      const stages = [...CONSUMING_STAGES, INDEX_REORGS_STAGE];
      groups = await Promise.all(
        stages.map(async (stage) => {
          const group = bus.groupId(stage);
          const rows = await consumerGroupLag(admin, group);
          return { stage, group, lag: rows.length === 0 ? null : rows.reduce((n, r) => n + r.lag, 0), partitions: rows.length };
        }),
      );
      deadLettersLastHour = await recordsSince(admin, bus.topic("dead-letter"), Date.now() - DEAD_LETTER_WINDOW_MS).catch(() => null);
      return { ok: true, detail: `${cluster.brokers.length} broker(s)` };
    }),
    probe("elasticsearch", async () => {
      const res = await fetch(`${config.elasticsearch.url}/_cluster/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (!res.ok) return { ok: false, detail: `HTTP ${res.status}` };
      const { status } = (await res.json()) as { status: string };
      return { ok: status !== "red", detail: status };
    }),
    probe("schema-registry", async () => {
      const res = await fetch(`${config.schemaRegistryUrl}/schemas/types`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      return { ok: res.ok, detail: res.ok ? "ok" : `HTTP ${res.status}` };
    }),
    probe("redis", async () => {
      const redis = await connectRedisClient(config.redisUrl, { connectTimeoutMs: PROBE_TIMEOUT_MS });
      try {
        await redis.client.ping();
        const tip = (await createRedisChainState(redis.client, config.redisKeyPrefix, config.chain).loadFollower()).tip;
        ingested = tip?.number ?? null;
      } finally {
        await redis.close();
      }
      return { ok: true, detail: "ok" };
    }),
    probe("rpc-node", async () => {
      // Every endpoint once, each through a client of its own (no retries, no failover): a plain eth_blockNumber
      // (https://ethereum.github.io/execution-apis/api-documentation/).
      endpoints = await Promise.all(
        rpcEndpoints(config.ingest).map(async (url): Promise<EndpointStatus> => {
          const endpoint = redactRpcUrl(url);
          const client = createRpcClient({ urls: [url], attempts: 1, timeoutMs: PROBE_TIMEOUT_MS });
          try {
            const h = Number(await client.request<string>("eth_blockNumber"));
            return { endpoint, ok: true, head: h, detail: `head ${h}` };
          } catch (err) {
            return { endpoint, ok: false, head: null, detail: `eth_blockNumber: ${errorText(err)}` };
          } finally {
            client.destroy();
          }
        }),
      );
      const up = endpoints.filter((e) => e.ok);
      if (up.length === 0) return { ok: false, detail: endpoints.map((e) => e.detail).join("; ") };
      head = Math.max(...up.map((e) => e.head as number));
      for (const e of up) if ((e.head as number) < (head as number)) e.detail += `, ${(head as number) - (e.head as number)} blocks behind`;
      if (endpoints.length === 1) return { ok: true, detail: `${new URL(endpoints[0]?.endpoint ?? "").host} head ${head}` };
      return { ok: true, detail: `${up.length}/${endpoints.length} endpoints up, head ${head}` };
    }),
  ]);
  await admin.disconnect().catch(() => {});

  const headLag = head !== null && ingested !== null ? Math.max(0, head - ingested) : null;
  const problems: string[] = services.filter((s) => !s.ok).map((s) => `${s.name}: ${s.detail}`);
  const over = (what: string, value: number | null, max: number | undefined) => {
    if (max !== undefined && value !== null && value > max) problems.push(`${what} ${value} > ${max}`);
  };
  for (const g of groups) over(`${g.stage} lag`, g.lag, thresholds.maxLag);
  over("head lag (blocks)", headLag, thresholds.maxHeadLag);
  over("dead letters in the last hour", deadLettersLastHour, thresholds.maxDeadLetters);
  return {
    chain,
    at: new Date().toISOString(),
    services,
    head,
    endpoints,
    ingested,
    headLag,
    groups,
    deadLettersLastHour,
    problems,
    healthy: problems.length === 0,
  };
}

/** The one-screen text of a {@link Status}. */
export function renderStatus(s: Status): string {
  const dash = (v: number | null) => (v === null ? "-" : String(v));
  const pad = (rows: string[][]) => {
    const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
    return rows.map((r) => `  ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ")}`.trimEnd());
  };
  return [
    `chainsift status  ${s.chain}  ${s.at}`,
    "",
    "Services",
    ...pad(s.services.map((v) => [v.name, v.ok ? "ok" : "DOWN", v.detail])),
    "",
    "Chain",
    `  head ${dash(s.head)}   ingested ${dash(s.ingested)}   behind ${s.headLag === null ? "-" : `${s.headLag} blocks`}`,
    ...(s.endpoints.length > 1
      ? ["", "JSON-RPC endpoints", ...pad(s.endpoints.map((e) => [e.endpoint, e.ok ? "ok" : "DOWN", e.detail]))]
      : []),
    "",
    "Consumer groups (lag: records written and not yet consumed)",
    ...pad([
      ["stage", "lag", "partitions", "group"],
      ...s.groups.map((g) => [g.stage, g.lag === null ? "no offsets" : String(g.lag), String(g.partitions), g.group]),
    ]),
    "",
    `Dead letters in the last hour: ${dash(s.deadLettersLastHour)}`,
    "",
    s.healthy ? "Status: healthy" : `Status: UNHEALTHY\n${s.problems.map((p) => `  - ${p}`).join("\n")}`,
  ].join("\n");
}
