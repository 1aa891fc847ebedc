/**
 * A member of the `@platformatic/kafka` transport whose rejoin fails keeps trying until it is back
 * in its group (pipeline/kafka/platformatic-consumer.ts), on the stack's Kafka.
 *
 * The set-up is what a SIGKILLed stage process leaves behind: a member that never left (the
 * "zombie", a kafkajs consumer in a child process killed with SIGKILL) holds the group's next
 * rebalance until its session times out, since the coordinator waits for every member to rejoin.
 * A new member joins; the live member (ours) is told to rejoin, and its JoinGroup is held that
 * long. With a request timeout shorter than the hold (a member's own rebalance timeout + 5 s,
 * {@link groupRequestTimeoutMs}, with a zombie whose session is longer) and the library's retries
 * off, the library's rejoin and the consumer's own first join time out. Before the fix the consumer
 * joined once more and then idled for good: out of its group, consuming nothing, while its stage
 * still said ready. Now it joins again after each failure, and once the zombie's session ended it
 * has partitions and consumes. (Found while looking for why a CI chaos run's index stopped
 * converging, stop 43; not shown to be that run's cause: with the library's 8 retries the stall
 * needs minutes of failed joins.)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkajsTransport } from "../../../pipeline/kafka/kafkajs.js";
import { platformaticTransport } from "../../../pipeline/kafka/platformatic.js";
import { groupRequestTimeoutMs } from "../../../pipeline/kafka/platformatic-consumer.js";
import type { TransportConsumer } from "../../../pipeline/kafka/transport.js";
import { createHarness, type Harness, probeStack, skipMessage, waitFor } from "../../support/harness.js";

const up = await probeStack();

const PARTITIONS = 4;
/** The zombie's session timeout: how long the coordinator holds the rebalance for it, ms. */
const ZOMBIE_SESSION_MS = 30_000;
/**
 * Our member's request timeout. Its group requests get its rebalance timeout (6 s) + 5 s = 11 s
 * ({@link groupRequestTimeoutMs}), well below the hold: the library's rejoin times out, then the
 * consumer's first join too, and a later one succeeds once the zombie is gone.
 */
const REQUEST_TIMEOUT_MS = 2_000;
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** A kafkajs member of `group` in a child process; prints `joined` once it has its assignment. */
const ZOMBIE = `
import { Kafka, logLevel } from "kafkajs";
const [brokers, group, topic, session] = process.argv.slice(1);
const kafka = new Kafka({ clientId: "zombie", brokers: brokers.split(","), logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: group, sessionTimeout: Number(session), rebalanceTimeout: Number(session), heartbeatInterval: 1000 });
consumer.on(consumer.events.GROUP_JOIN, () => console.log("joined"));
await consumer.connect();
await consumer.subscribe({ topics: [topic], fromBeginning: true });
await consumer.run({ eachMessage: async () => {} });
`;

describe.skipIf(!up.ok)(`a @platformatic/kafka member whose rejoin times out${up.ok ? "" : ` (${skipMessage(up.missing)})`}`, () => {
  let h: Harness;
  let topic: string;
  let group: string;
  let zombie: ChildProcess | undefined;
  const open: TransportConsumer[] = [];
  let kafka: Kafka;

  /** Runs `consumer` on the topic from the beginning, every message's value appended to `into`, every batch resolved. */
  const readInto = async (consumer: TransportConsumer, into: string[]) => {
    await consumer.connect();
    await consumer.subscribe([topic], true);
    await consumer.run({
      autoCommitIntervalMs: 200,
      eachBatch: async (batch, control) => {
        for (const m of batch.messages) into.push(m.value?.toString() ?? "");
        const last = batch.messages.at(-1);
        if (last) control.resolveOffset(last.offset);
      },
    });
  };

  beforeAll(async () => {
    h = createHarness();
    topic = `${h.config.kafka.topicPrefix}rejoin`;
    group = `${h.config.kafka.groupPrefix}.rejoin`;
    kafka = new Kafka({ clientId: `${h.id}-rejoin`, brokers: h.config.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }] });
    await admin.disconnect();
  });
  afterAll(async () => {
    if (zombie?.pid !== undefined && zombie.exitCode === null && zombie.signalCode === null) process.kill(zombie.pid, "SIGKILL");
    for (const c of open) await c.disconnect().catch(() => {});
    await h?.cleanup();
  });

  it("the group requests of a consumer wait at least its rebalance timeout + 5 s", () => {
    expect(groupRequestTimeoutMs(30_000, 60_000)).toBe(65_000);
    expect(groupRequestTimeoutMs(90_000, 60_000)).toBe(90_000);
  });

  it("joins again after its joins timed out and consumes once the zombie's session ended", async () => {
    const producer = kafka.producer();
    await producer.connect();
    /** One message per partition, values tagged `tag`. */
    const produce = (tag: string) =>
      producer.send({ topic, messages: Array.from({ length: PARTITIONS }, (_, p) => ({ partition: p, value: `${tag}-${p}` })) });

    // Ours: session and rebalance timeout 6 s.
    const ours = platformaticTransport({
      clientId: `${h.id}-ours`,
      brokers: h.config.kafka.brokers,
      logger: h.logger,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      // No retries of a request: a join that times out fails at once (the library's retries would
      // otherwise outlast the zombie here; in production they run out after minutes of trouble).
      retries: 0,
    }).consumer({ groupId: group, maxWaitTimeMs: 200, sessionTimeoutMs: 6_000, rebalanceTimeoutMs: 6_000 });
    open.push(ours);
    const seen: string[] = [];
    let joins = 0;
    let lost = 0;
    ours.on("groupJoin", () => {
      joins++;
    });
    // Emitted when the library's rejoin failed (the membership is lost): the case under test.
    ours.on("crash", () => {
      lost++;
    });
    await readInto(ours, seen);
    await produce("first");
    await waitFor(async () => seen.filter((v) => v.startsWith("first")).length === PARTITIONS, 30_000);

    // The zombie joins (ours rejoins alongside it), then dies without leaving.
    zombie = spawn(
      process.execPath,
      ["--input-type=module", "-e", ZOMBIE, h.config.kafka.brokers.join(","), group, topic, String(ZOMBIE_SESSION_MS)],
      {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const zombieJoined = new Promise<void>((resolve) =>
      zombie?.stdout?.on("data", (d: Buffer) => d.toString().includes("joined") && resolve()),
    );
    await zombieJoined;
    const exited = new Promise((resolve) => zombie?.once("exit", resolve));
    if (zombie.pid !== undefined) process.kill(zombie.pid, "SIGKILL");
    await exited;
    const killedAt = Date.now();

    // A new member: the rebalance it starts waits for the zombie; ours is told to rejoin meanwhile.
    const joinsBefore = joins;
    const newcomer = kafkajsTransport(kafka).consumer({ groupId: group, maxWaitTimeMs: 200, sessionTimeoutMs: 30_000 });
    open.push(newcomer);
    const theirs: string[] = [];
    await readInto(newcomer, theirs);

    // After the zombie's session: both members hold partitions, and ours consumes what it holds.
    await waitFor(async () => Date.now() - killedAt > ZOMBIE_SESSION_MS + 2_000, ZOMBIE_SESSION_MS + 5_000, 500);
    await waitFor(async () => joins > joinsBefore, 60_000, 200);
    expect(lost).toBeGreaterThan(0);
    let round = 0;
    await waitFor(
      async () => {
        await produce(`after-${++round}`);
        return seen.some((v) => v.startsWith("after-"));
      },
      60_000,
      2_000,
    );
    await producer.disconnect();
    expect(seen.some((v) => v.startsWith("after-"))).toBe(true);
    // Nothing is lost meanwhile: every message of the first round after the kill is read by one of the two.
    const firstRound = () => new Set([...seen, ...theirs].filter((v) => v.startsWith("after-1-")));
    await waitFor(async () => firstRound().size === PARTITIONS, 30_000);
    expect(firstRound().size).toBe(PARTITIONS);
  }, 180_000);
});
