/**
 * `npm run bench -- kafka [--copies N] [--rounds R] [--clients kafkajs,platformatic]`: the Kafka
 * client library's CPU per record on the real payloads, per client (issue 37's A/B,
 * docs/benchmarks.md "The Kafka client A/B"). Per round and client, on topics of their own (a
 * harness prefix), two processes one after the other (bench/support/kafka-child.ts): one produces
 * the ingest stage's messages of N copies (default 10) of the 15 mainnet fixture blocks through the
 * pipeline's transport of that client (`CHAINSIFT_KAFKA_CLIENT`), the next consumes all of them in
 * batches with explicit commits. Each reports its own CPU (user + system) from connected to done,
 * without chainsift's record building and Avro encoding; the broker's CPU over each phase is read
 * from /proc (it is shared with anything else using the stack, so only indicative). The clients
 * alternate their order round by round (default 4 rounds); medians are printed, with the load
 * average. Needs the stack (Kafka, the registry) and the mainnet fixtures.
 * @module
 */
import { execFileSync } from "node:child_process";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { KAFKA_CLIENTS, type KafkaClientName } from "../lib/config/index.js";
import { hasMainnetFixtures, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";
import { createHarness } from "../test/support/harness.js";
import { configEnv, spawnReady } from "../test/support/stage-process.js";
import { numberArg, stringArg } from "./support/data.js";
import { cpuSeconds, parseStackPids } from "./support/proc.js";

const START = 30_000_000;
const ROOT = resolve(import.meta.dirname, "..");

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const loadText = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** The Kafka broker's pid (`scripts/stack.sh status`, which exits non-zero when a service of its stack is down), or undefined. */
function kafkaPid(): number | undefined {
  let out: string;
  try {
    out = execFileSync("bash", ["scripts/stack.sh", "status"], { cwd: ROOT, encoding: "utf8" });
  } catch (err) {
    out = String((err as { stdout?: unknown }).stdout ?? "");
  }
  return parseStackPids(out).get("kafka");
}

/** What one child reported. */
interface Phase {
  records: number;
  cpuS: number;
  wallS: number;
  /** The broker's CPU seconds over the phase, when its pid is known. */
  brokerS: number | undefined;
}

/** One client's produce and consume phases of a round. */
interface Sample {
  client: KafkaClientName;
  produce: Phase;
  consume: Phase;
}

/** Runs one child to its done line. */
async function phase(role: "produce" | "consume", env: NodeJS.ProcessEnv, args: string[], broker: number | undefined): Promise<Phase> {
  const b0 = broker === undefined ? undefined : cpuSeconds(broker);
  const child = await spawnReady({
    label: `kafka ${role}`,
    script: "bench/support/kafka-child.ts",
    args: [role, ...args],
    env,
    isReady: (l) => l.includes('"done":true'),
    timeoutMs: 600_000,
  });
  const b1 = broker === undefined ? undefined : cpuSeconds(broker);
  await child.stop();
  const r = child.ready as { records: number; cpuS: number; wallS: number };
  return { records: r.records, cpuS: r.cpuS, wallS: r.wallS, brokerS: b0 === undefined || b1 === undefined ? undefined : b1 - b0 };
}

/** One client's round: produce, then consume what was produced, on fresh topics. */
async function round(client: KafkaClientName, copies: number, broker: number | undefined): Promise<Sample> {
  const h = createHarness();
  try {
    const env = configEnv(h.config, { CHAINSIFT_KAFKA_CLIENT: client, LOG_LEVEL: "warn", KAFKAJS_NO_PARTITIONER_WARNING: "1" });
    const produce = await phase("produce", env, ["--copies", String(copies), "--start", String(START)], broker);
    const consume = await phase("consume", env, ["--records", String(produce.records)], broker);
    return { client, produce, consume };
  } finally {
    await h.cleanup();
  }
}

const us = (p: Phase) => (p.cpuS / p.records) * 1e6;
const brokerUs = (p: Phase) => (p.brokerS === undefined ? Number.NaN : (p.brokerS / p.records) * 1e6);

/** Runs the benchmark and prints its figures (module notes). */
export async function benchKafka(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const copies = numberArg(args, "--copies", 10);
  const rounds = numberArg(args, "--rounds", 4);
  const clients = stringArg(args, "--clients", KAFKA_CLIENTS.join(","))
    .split(",")
    .map((c) => c.trim()) as KafkaClientName[];
  for (const c of clients) if (!KAFKA_CLIENTS.includes(c)) throw new Error(`--clients: unknown client ${c} (${KAFKA_CLIENTS.join(", ")})`);
  const broker = kafkaPid();
  console.log(
    `bench kafka: ingest's messages of ${copies} copies of the mainnet fixture blocks, produced then consumed per client (${clients.join(", ")}), ${rounds} rounds alternated; broker pid ${broker ?? "unknown"}; load ${loadText()}`,
  );
  console.log("CPU µs per record (user + system of the client's process, chainsift's encoding left out); broker µs per record indicative");
  const samples: Sample[] = [];
  for (let r = 1; r <= rounds; r++) {
    const order = r % 2 === 1 ? clients : [...clients].reverse();
    for (const client of order) {
      const s = await round(client, copies, broker);
      samples.push(s);
      console.log(
        `round ${r} ${client.padEnd(12)}: produce ${us(s.produce).toFixed(2)} µs (${(s.produce.records / s.produce.wallS).toFixed(0)}/s), consume ${us(s.consume).toFixed(2)} µs (${(s.consume.records / s.consume.wallS).toFixed(0)}/s), broker ${brokerUs(s.produce).toFixed(2)} + ${brokerUs(s.consume).toFixed(2)} µs; ${s.produce.records} records; load ${loadText()}`,
      );
    }
  }
  console.log(`medians of ${rounds} rounds (load now ${loadText()}):`);
  const totals = new Map<KafkaClientName, number>();
  for (const client of clients) {
    const of = samples.filter((s) => s.client === client);
    const p = median(of.map((s) => us(s.produce)));
    const c = median(of.map((s) => us(s.consume)));
    const total = median(of.map((s) => us(s.produce) + us(s.consume)));
    totals.set(client, total);
    console.log(
      `  ${client.padEnd(12)}: produce ${p.toFixed(2)} µs + consume ${c.toFixed(2)} µs = Kafka client CPU ${(total / 1000).toFixed(4)} CPU-s per 1,000 records (median of sums); broker ${median(of.map((s) => brokerUs(s.produce) + brokerUs(s.consume))).toFixed(2)} µs/record`,
    );
  }
  const [a, b] = clients;
  if (a && b && totals.get(a) && totals.get(b))
    console.log(`  ${b} / ${a}: ${((totals.get(b) as number) / (totals.get(a) as number)).toFixed(2)}x the Kafka client CPU per record`);
}
