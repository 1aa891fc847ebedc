/**
 * `chainsift alerts replay`: re-sends dead-lettered alerts. Reads the dead-letter topic from the
 * beginning with its own consumer group (so each dead letter is replayed once per group), and
 * re-produces every letter of the notify stage to the alerts topic with its original key and
 * bytes, and the `REPLAY_HEADER` header (topics/index.ts) so the notify stage queues its actions
 * again although they were finished (dead-lettered). The notify stage's delivery log skips actions
 * already delivered (on their own or in a storm-control digest), so only the failed actions are
 * sent again. The letters include the alerts held by a digest that was given up (`digests.ts`, one
 * letter per alert); a replayed alert goes through its action's storm control again, in the
 * window of the replay (sent on its own while the throttle allows, else in that window's digest).
 * @module
 */
import { REPLAY_HEADER } from "../../topics/index.js";
import type { Bus } from "../kafka/bus.js";

/** Options of {@link replayAlertDeadLetters}. */
export interface ReplayOptions {
  bus: Bus;
  /**
   * Consumer group that remembers what was replayed. Default `<groupPrefix>...alerts-replay`, or
   * `…alerts-replay-rule-<ruleId>` with {@link ReplayOptions.ruleId}: a replay of one rule commits
   * past the letters of every rule it reads, so it must not use the group of the all-rules replay
   * (it would swallow the other rules' letters). A later all-rules replay reads that rule's
   * letters again; the redelivery guard skips the actions already delivered.
   */
  groupId?: string;
  /** Stop after this long without a new message. Default 3000 ms. */
  idleMs?: number;
  /** Only replay letters whose alert belongs to this rule. */
  ruleId?: string;
}

/** What a replay did. */
export interface ReplayResult {
  /** Dead letters read. */
  read: number;
  /** Alerts re-sent to the alerts topic. */
  replayed: number;
}

/** Replays the notify stage's dead letters; resolves when the topic has been idle for `idleMs`. */
export async function replayAlertDeadLetters(opts: ReplayOptions): Promise<ReplayResult> {
  const { bus } = opts;
  const consumer = bus.kafka.consumer({
    groupId: opts.groupId ?? bus.groupId(opts.ruleId ? `alerts-replay-rule-${opts.ruleId}` : "alerts-replay"),
  });
  const producer = bus.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await Promise.all([consumer.connect(), producer.connect()]);
  const result: ReplayResult = { read: 0, replayed: 0 };
  let last = Date.now();
  try {
    await consumer.subscribe({ topic: bus.topic("dead-letter"), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        last = Date.now();
        result.read++;
        const letter = (await bus.decode(message.value)) as {
          stage: string;
          sourceTopic: string;
          key: Buffer | null;
          value: Buffer | null;
        };
        if (letter.stage !== "notify" || letter.sourceTopic !== bus.topic("alerts") || !letter.value) return;
        if (opts.ruleId) {
          const alert = (await bus.decode(letter.value)) as { ruleId: string };
          if (alert.ruleId !== opts.ruleId) return;
        }
        await producer.send({
          topic: bus.topic("alerts"),
          acks: -1,
          messages: [{ key: letter.key, value: letter.value, headers: { [REPLAY_HEADER]: "1" } }],
        });
        result.replayed++;
      },
    });
    const idle = opts.idleMs ?? 3000;
    while (Date.now() - last < idle) await new Promise((r) => setTimeout(r, 200));
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
  return result;
}
