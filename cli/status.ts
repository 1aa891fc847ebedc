/**
 * `npm run chainsift -- status`: the pipeline on one screen, read from the services themselves (no
 * stage process needs to be up): the services' health (Kafka, Elasticsearch, schema registry,
 * Redis, the JSON-RPC nodes), and for every served chain (each chain of the chains file, else the
 * one chain; a table when there are several) the head vs the last block ingest produced, each stage's
 * consumer-group lag (committed offsets vs high watermarks) and the dead letters written in the last
 * hour (the dead-letter topic's time index): lib/kafka/consumer-health.ts, which the API's
 * `GET /chains/health/` reads too. Unhealthy when a
 * service does not answer (or Elasticsearch is red), or a `--max-*` threshold is exceeded; the
 * CLI then exits 1 (scripts, container health checks). docs/metrics.md.
 * @module
 */
import { Kafka, logLevel } from "kafkajs";
import { readIngestStatus } from "../lib/chain/ingest-status.js";
import { chainKey } from "../lib/config/chains-file.js";
import { type Config, rpcEndpoints } from "../lib/config/index.js";
import { type GroupLag, readConsumerHealth } from "../lib/kafka/consumer-health.js";
import { createLogger } from "../lib/logger.js";
import { connectRedisClient, withTimeout } from "../lib/redis.js";
import { createRpcClient } from "../lib/rpc/client.js";
import { redactRpcUrl } from "../lib/rpc/transport.js";
import { createBus } from "../pipeline/kafka/bus.js";
import { kafkajsTransport } from "../pipeline/kafka/kafkajs.js";

/** How long each service may take to answer, ms. */
const PROBE_TIMEOUT_MS = 3_000;

/** One service's answer. */
export interface ServiceHealth {
  name: "kafka" | "elasticsearch" | "schema-registry" | "redis" | "rpc-node";
  ok: boolean;
  /** e.g. `green`, `1 broker`, or the error. */
  detail: string;
}

export type { GroupLag };

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

/** One served chain's part of a {@link Status} (every chain of the chains file, or the one chain). */
export interface ChainReport {
  /** `technology/blockchain/network`. */
  chain: string;
  /** The chain's EIP-155 id as configured. */
  chainId: number;
  /** The node's head (`eth_blockNumber`; the highest of the chain's endpoints), null when none answers. */
  head: number | null;
  /** The chain's JSON-RPC endpoints, in configured order. */
  endpoints: EndpointStatus[];
  /** The last block the chain's ingest produced (its durable position in Redis), null when none. */
  ingested: number | null;
  /** The head as the chain's ingest last published it (lib/chain/ingest-status.ts), null when never. */
  ingestHead: number | null;
  /** head − ingested, null when either is unknown. */
  headLag: number | null;
  /** The chain's consumer groups (each stage's group is per chain). */
  groups: GroupLag[];
  /** Records written to the chain's dead-letter topic in the last hour, null when Kafka did not answer. */
  deadLettersLastHour: number | null;
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
  /**
   * Every served chain (the chains file's, in its order; else the one chain), each with its head,
   * ingested block, lag, consumer groups and dead letters. The top-level `head`, `endpoints`,
   * `ingested`, `headLag`, `groups` and `deadLettersLastHour` are those of `config.chain`.
   */
  chains: ChainReport[];
  /** Why it is unhealthy (empty: healthy); a chain's problems are prefixed with it when there are several. */
  problems: string[];
  healthy: boolean;
}

/**
 * The configuration of each served chain: `config` itself for `config.chain`, and for each other
 * chain of the chains file `config` with that chain's ids and JSON-RPC endpoints.
 */
export function chainConfigs(config: Config): Config[] {
  const entries = config.chainsFile?.chains ?? [];
  if (entries.length === 0) return [config];
  const own = chainKey(config.chain);
  return entries.map((e) => {
    const chain = { technology: e.technology, blockchain: e.blockchain, network: e.network };
    if (chainKey(chain) === own) return config;
    return { ...config, chain, chainId: e.chainId, ingest: { ...config.ingest, rpcUrl: e.rpcUrls[0] as string, rpcUrls: [...e.rpcUrls] } };
  });
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
 * Probes every JSON-RPC endpoint of a chain once (no retries, no failover): a plain `eth_blockNumber`.
 * Each probe has a short-lived client of its own, destroyed after the answer: `chainsift status`
 * builds no chain context (lib/chain-context.ts), and the context's client (failover, retries) would
 * hide which endpoint is down.
 */
async function probeEndpoints(config: Config): Promise<{ endpoints: EndpointStatus[]; head: number | null }> {
  // https://ethereum.github.io/execution-apis/api-documentation/
  const endpoints = await Promise.all(
    rpcEndpoints(config.ingest).map(async (url): Promise<EndpointStatus> => {
      const endpoint = redactRpcUrl(url);
      // A client of its own per endpoint (no retries, no failover): a plain eth_blockNumber.
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
  const head = up.length === 0 ? null : Math.max(...up.map((e) => e.head as number));
  for (const e of up) if (head !== null && (e.head as number) < head) e.detail += `, ${head - (e.head as number)} blocks behind`;
  return { endpoints, head };
}

/**
 * Reads the status of the pipeline of every served chain (the chains file's, else `config.chain`)
 * from the services (each probe at most 3 s; the chains are read together).
 * @param config - the process configuration (services, prefixes, chain, `ingest.rpcUrl`, `chainsFile`).
 * @param thresholds - optional limits (see {@link StatusThresholds}), applied to every chain.
 * @returns the status; never throws for an unreachable service (it is reported instead).
 */
export async function gatherStatus(config: Config, thresholds: StatusThresholds = {}): Promise<Status> {
  const configs = chainConfigs(config);
  const reports: ChainReport[] = await Promise.all(
    configs.map(async (c) => {
      const bus = await createBus({ config: c, logger: createLogger("silent"), setup: false }); // names only: connects nothing
      return {
        chain: chainKey(c.chain),
        chainId: c.chainId,
        head: null,
        endpoints: [],
        ingested: null,
        ingestHead: null,
        headLag: null,
        groups: [] as GroupLag[],
        deadLettersLastHour: null,
        bus,
      };
    }),
  );
  const kafka = new Kafka({
    clientId: `${config.kafka.clientId}-status`,
    brokers: config.kafka.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: PROBE_TIMEOUT_MS,
    requestTimeout: PROBE_TIMEOUT_MS,
    retry: { retries: 1, initialRetryTime: 100 },
  });
  const admin = kafkajsTransport(kafka).admin();
  const busOf = (r: ChainReport) => (r as ChainReport & { bus: Awaited<ReturnType<typeof createBus>> }).bus;

  const services = await Promise.all([
    probe("kafka", async () => {
      await admin.connect();
      const brokers = await admin.describeBrokers();
      for (const r of reports) {
        const bus = busOf(r);
        Object.assign(
          r,
          await readConsumerHealth(admin, { groupId: (stage) => bus.groupId(stage), deadLetterTopic: bus.topic("dead-letter") }),
        );
      }
      return { ok: true, detail: `${brokers.length} broker(s)` };
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
        await Promise.all(
          configs.map(async (c, i) => {
            const seen = await readIngestStatus(redis.client, config.redisKeyPrefix, c.chain);
            const r = reports[i] as ChainReport;
            r.ingested = seen.ingested?.number ?? null;
            r.ingestHead = seen.head;
          }),
        );
      } finally {
        await redis.close();
      }
      return { ok: true, detail: "ok" };
    }),
    probe("rpc-node", async () => {
      const probed = await Promise.all(configs.map(probeEndpoints));
      for (const [i, p] of probed.entries()) Object.assign(reports[i] as ChainReport, p);
      const details = probed.map((p, i) => {
        const label = configs.length > 1 ? `${reports[i]?.chain}: ` : "";
        const up = p.endpoints.filter((e) => e.ok);
        if (up.length === 0) return `${label}${p.endpoints.map((e) => e.detail).join("; ")}`;
        if (p.endpoints.length === 1) return `${label}${new URL(p.endpoints[0]?.endpoint ?? "").host} head ${p.head}`;
        return `${label}${up.length}/${p.endpoints.length} endpoints up, head ${p.head}`;
      });
      return { ok: probed.every((p) => p.head !== null), detail: details.join("; ") };
    }),
  ]);
  await admin.disconnect().catch(() => {});

  const problems: string[] = services.filter((s) => !s.ok).map((s) => `${s.name}: ${s.detail}`);
  const chains: ChainReport[] = reports.map((r) => {
    const { bus: _bus, ...report } = r as ChainReport & { bus: unknown };
    report.headLag = report.head !== null && report.ingested !== null ? Math.max(0, report.head - report.ingested) : null;
    const label = reports.length > 1 ? `${report.chain} ` : "";
    const over = (what: string, value: number | null, max: number | undefined) => {
      if (max !== undefined && value !== null && value > max) problems.push(`${label}${what} ${value} > ${max}`);
    };
    for (const g of report.groups) over(`${g.stage} lag`, g.lag, thresholds.maxLag);
    over("head lag (blocks)", report.headLag, thresholds.maxHeadLag);
    over("dead letters in the last hour", report.deadLettersLastHour, thresholds.maxDeadLetters);
    return report;
  });
  const own = chains[configs.indexOf(config)] ?? (chains[0] as ChainReport);
  return {
    chain: chainKey(config.chain),
    at: new Date().toISOString(),
    services,
    head: own.head,
    endpoints: own.endpoints,
    ingested: own.ingested,
    headLag: own.headLag,
    groups: own.groups,
    deadLettersLastHour: own.deadLettersLastHour,
    chains,
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
    ...(s.chains.length > 1
      ? [
          "Chains",
          ...pad([
            ["chain", "chain id", "head", "ingested", "behind", "dead letters (1 h)", "consumer lag (records)"],
            ...s.chains.map((c) => [
              c.chain,
              String(c.chainId),
              dash(c.head),
              dash(c.ingested),
              c.headLag === null ? "-" : `${c.headLag} blocks`,
              dash(c.deadLettersLastHour),
              String(c.groups.reduce((n, g) => n + (g.lag ?? 0), 0)),
            ]),
          ]),
          "",
          `Chain ${s.chain}`,
        ]
      : ["Chain"]),
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
