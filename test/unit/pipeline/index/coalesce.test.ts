/**
 * coalesceBatches (pipeline/index/coalesce.ts): partition batches handed over together become one
 * handler call; each caller gets its own records' failures, or the merged call's error.
 */
import { describe, expect, it } from "vitest";
import { NonRetryableError } from "../../../../lib/errors.js";
import { coalesceBatches } from "../../../../pipeline/index/coalesce.js";
import type { HandlerFailure, InputRecord } from "../../../../pipeline/kafka/consumer.js";

const input = (n: number) => ({ record: { n }, topicKind: "logs" }) as unknown as InputRecord;
const fail = (i: InputRecord): HandlerFailure => ({ input: i, error: new NonRetryableError("CS_ES_REJECTED", "refused") });

describe("coalesceBatches", () => {
  it("merges batches handed over together and those arriving during a call; calls never overlap", async () => {
    const calls: number[][] = [];
    let running = 0;
    let release: () => void = () => {};
    const handler = coalesceBatches(async (inputs) => {
      expect(running).toBe(0);
      running++;
      calls.push(inputs.map((i) => (i.record as unknown as { n: number }).n));
      if (calls.length === 1) await new Promise<void>((r) => (release = r));
      running--;
      return [];
    });
    const first = [handler([input(1)]), handler([input(2), input(3)]), handler([input(4)])];
    await new Promise((r) => setImmediate(r));
    // The first merged call is running: these wait and are merged into the next.
    const second = [handler([input(5)]), handler([input(6)])];
    release();
    await Promise.all([...first, ...second]);
    expect(calls).toEqual([
      [1, 2, 3, 4],
      [5, 6],
    ]);
  });

  it("hands each caller the failures of its own records", async () => {
    const [a, b, c] = [[input(1), input(2)], [input(3)], [input(4), input(5)]] as const;
    const handler = coalesceBatches(async (inputs) => [fail(inputs[1] as InputRecord), fail(inputs[4] as InputRecord)]);
    const [ra, rb, rc] = await Promise.all([handler([...a]), handler([...b]), handler([...c])]);
    expect(ra?.map((f) => f.input)).toEqual([a[1]]);
    expect(rb).toEqual([]);
    expect(rc?.map((f) => f.input)).toEqual([c[1]]);
  });

  it("rejects every caller of a merged call that throws; the next call runs again", async () => {
    let n = 0;
    const handler = coalesceBatches(async () => {
      n++;
      if (n === 1) throw new Error("es down");
      return undefined;
    });
    const results = await Promise.allSettled([handler([input(1)]), handler([input(2)])]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect((results[0] as PromiseRejectedResult).reason).toEqual(new Error("es down"));
    await expect(handler([input(3)])).resolves.toEqual([]);
    expect(n).toBe(2);
  });
});
