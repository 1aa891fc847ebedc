/** Unit tests of the delivery log helpers (entries, redaction, guard) with in-memory doubles; the per-job bookkeeping is tested with the scheduler (test/integration/notify/scheduler.test.ts). */
import { describe, expect, it } from "vitest";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import {
  createDeliveryLog,
  type DeliveryLogMulti,
  type DeliveryLogRedis,
  deliveryLogEntry,
  describeDestination,
  redactUrl,
} from "../../../../pipeline/notify/log.js";
import { sampleAlert, TX_HASH } from "./fixtures.js";

/** Just enough of Redis lists and strings for the log. */
function memoryRedis(): DeliveryLogRedis & { lists: Map<string, string[]>; strings: Map<string, { v: string; ex?: number }> } {
  const lists = new Map<string, string[]>();
  const strings = new Map<string, { v: string; ex?: number }>();
  const list = (k: string): string[] => {
    if (!lists.has(k)) lists.set(k, []);
    return lists.get(k)!;
  };
  const range = (a: string[], start: number, stop: number) => a.slice(start, stop < 0 ? a.length + stop + 1 : stop + 1);
  return {
    lists,
    strings,
    async lRange(k, start, stop) {
      return range(lists.get(k) ?? [], start, stop);
    },
    async lLen(k) {
      return lists.get(k)?.length ?? 0;
    },
    async exists(k) {
      return strings.has(k) ? 1 : 0;
    },
    async set(k, v, o) {
      if (o?.condition === "NX" && strings.has(k)) return null;
      strings.set(k, { v, ...(o?.expiration ? { ex: o.expiration.value } : {}) });
      return "OK";
    },
    multi() {
      const ops: (() => void)[] = [];
      const m: DeliveryLogMulti = {
        lPush(k, v) {
          ops.push(() => list(k).unshift(v));
          return m;
        },
        lTrim(k, a, b) {
          ops.push(() => lists.set(k, range(list(k), a, b)));
          return m;
        },
        exec: async () => ops.map((f) => f()),
      };
      return m;
    },
  };
}

describe("redaction", () => {
  it("removes credentials, query and fragment", () => {
    expect(redactUrl("https://u:p@hooks.example.com:8443/a/b?api_key=s3cret#frag")).toBe("https://hooks.example.com:8443/a/b?…");
    expect(redactUrl("https://hooks.slack.com/services/T/B/X", false)).toBe("https://hooks.slack.com/…");
    expect(redactUrl("::nope")).toBe("(invalid URL)");
  });

  it("describes each action kind", () => {
    const entity = { transactionHash: TX_HASH };
    expect(describeDestination({ type: "Webhook (GET)", parameters: { url: "https://h.example/{transactionHash}?k=1" } }, entity)).toBe(
      `https://h.example/${TX_HASH}?…`,
    );
    expect(describeDestination({ type: "Webhook (POST)", parameters: { url: "https://h.example/{nope}" } }, entity)).toBe(
      "https://h.example/%7Bnope%7D",
    );
    expect(describeDestination({ type: "Email", parameters: { recipients: ["a@x.example"] } })).toBe("1 recipient");
    expect(
      describeDestination({
        type: "Slack",
        parameters: { url: "https://hooks.slack.com/services/T/B/X", text: "", channel: "", username: "" },
      }),
    ).toBe("https://hooks.slack.com/…");
  });
});

describe("createDeliveryLog", () => {
  const alert = sampleAlert();
  const action: AlertDefinition = { type: "Webhook (POST)", parameters: { url: "https://h.example/x" } };

  it("lists newest first, pages, and trims to maxPerRule", async () => {
    const redis = memoryRedis();
    const log = createDeliveryLog({ redis, keyPrefix: "t:", maxPerRule: 3 });
    for (let i = 1; i <= 5; i++) {
      await log.record(
        "r1",
        deliveryLogEntry({ ...alert, sequence: i }, action, 0, { ok: true, attempts: 1, final: true, status: 200 }, new Date(i * 1000)),
      );
    }
    const page = await log.list("r1");
    expect(page.total).toBe(3);
    expect(page.entries.map((e) => e.sequence)).toEqual([5, 4, 3]);
    expect(page.entries[0]).toEqual({
      alertId: alert.id,
      sequence: 5,
      status: "confirmed",
      actionIndex: 0,
      type: "Webhook (POST)",
      destination: "https://h.example/x",
      ok: true,
      attempts: 1,
      final: true,
      httpStatus: 200,
      at: "1970-01-01T00:00:05.000Z",
    });
    expect((await log.list("r1", { limit: 1, offset: 1 })).entries.map((e) => e.sequence)).toEqual([4]);
    expect(await log.list("unknown")).toEqual({ total: 0, entries: [] });
  });

  it("marks deliveries once, for 7 days by default", async () => {
    const redis = memoryRedis();
    const log = createDeliveryLog({ redis, keyPrefix: "t:" });
    expect(await log.alreadyDelivered("a1", 0)).toBe(false);
    expect(await log.markDelivered("a1", 0)).toBe(true);
    expect(await log.markDelivered("a1", 0)).toBe(false);
    expect(await log.alreadyDelivered("a1", 0)).toBe(true);
    expect(await log.alreadyDelivered("a1", 1)).toBe(false);
    expect(redis.strings.get("t:notify:delivered:a1:0")?.ex).toBe(604_800);
  });
});
