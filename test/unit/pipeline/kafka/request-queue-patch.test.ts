/**
 * kafkajs's request queue as patched by patches/kafkajs+2.2.4.patch (docs/kafka-client.md#the-kafkajs-patch):
 * the `RequestQueue` of one broker connection, driven directly with stub requests (no broker).
 * Without the patch, the first test fails (Node 24 warns `TimeoutNegativeWarning`, tulios/kafkajs#1751)
 * and so do the timer tests (a 1 ms `setTimeout` loop after the first response, tulios/kafkajs#1556).
 * The last two check that the patch keeps what the timer was for: a request held back by the
 * in-flight limit or by a client-side throttle is still sent.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";

/** The part of kafkajs's (untyped, internal) `src/network/requestQueue/index.js` these tests use. */
interface RequestQueue {
  push(request: { entry: Entry; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(clientSideThrottleTimeMs: number | null): void;
  destroy(): void;
  pending: unknown[];
  inflight: Map<number, unknown>;
}
interface Entry {
  apiKey: number;
  apiName: string;
  apiVersion: number;
  correlationId: number;
  resolve: (response: unknown) => void;
  reject: (error: Error) => void;
}
type RequestQueueClass = new (options: {
  maxInFlightRequests: number | null;
  requestTimeout: number;
  enforceRequestTimeout: boolean;
  clientId: string;
  broker: string;
  logger: Record<"debug" | "info" | "warn" | "error", () => void>;
}) => RequestQueue;

const RequestQueueImpl = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js") as RequestQueueClass;

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const newQueue = (maxInFlightRequests: number | null = null) =>
  new RequestQueueImpl({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: "test",
    broker: "b:9092",
    logger: silent,
  });

/** Pushes a request with `correlationId` (a Fetch, as a consumer sends them); `sent` lists the ids handed to the socket. */
function push(queue: RequestQueue, correlationId: number, sent: number[]): void {
  queue.push({
    entry: { apiKey: 1, apiName: "Fetch", apiVersion: 11, correlationId, resolve() {}, reject() {} },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  });
}
const respond = (queue: RequestQueue, correlationId: number) => queue.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("kafkajs RequestQueue (patched)", () => {
  // First in the file: Node warns once per process.
  it("schedules no negative timeout, so Node 24 prints no TimeoutNegativeWarning (tulios/kafkajs#1751)", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    const delays: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout);
    process.on("warning", onWarning);
    const queue = newQueue();
    try {
      const sent: number[] = [];
      push(queue, 1, sent);
      respond(queue, 1); // the first response: where 2.2.4 armed its timer with -1 - Date.now()
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    } finally {
      queue.destroy();
      process.off("warning", onWarning);
    }
    expect(warnings).not.toContain("TimeoutNegativeWarning");
    expect(delays.filter((ms) => ms < 0)).toEqual([]);
  });

  it("arms no timer while a request is in flight, after the first response (tulios/kafkajs#1556)", () => {
    vi.useFakeTimers();
    const queue = newQueue();
    const sent: number[] = [];
    push(queue, 1, sent);
    respond(queue, 1);
    push(queue, 2, sent); // held by the broker (a Fetch waiting for data): no response below
    const armed = vi.spyOn(globalThis, "setTimeout");
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(armed).not.toHaveBeenCalled();
    expect(sent).toEqual([1, 2]);
    expect(queue.inflight.size).toBe(1);
    queue.destroy();
  });

  it("arms no timer when idle, after the last response", () => {
    vi.useFakeTimers();
    const queue = newQueue();
    const sent: number[] = [];
    for (const id of [1, 2, 3]) {
      push(queue, id, sent);
      respond(queue, id);
    }
    const armed = vi.spyOn(globalThis, "setTimeout");
    vi.advanceTimersByTime(1_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(armed).not.toHaveBeenCalled();
    queue.destroy();
  });

  it("sends a request held back by maxInFlightRequests when the one in flight completes, without a timer", () => {
    vi.useFakeTimers();
    const queue = newQueue(1);
    const sent: number[] = [];
    push(queue, 1, sent);
    push(queue, 2, sent);
    expect(sent).toEqual([1]);
    expect(queue.pending).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
    respond(queue, 1);
    expect(sent).toEqual([1, 2]);
    expect(queue.pending).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
    queue.destroy();
  });

  it("sends requests held back by a client-side throttle when it ends (one timer, at its end)", () => {
    vi.useFakeTimers();
    const queue = newQueue();
    const sent: number[] = [];
    push(queue, 1, sent);
    queue.maybeThrottle(500); // a response said: throttled for 500 ms
    respond(queue, 1);
    push(queue, 2, sent);
    push(queue, 3, sent);
    expect(sent).toEqual([1]);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(499);
    expect(sent).toEqual([1]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([1, 2, 3]);
    expect(vi.getTimerCount()).toBe(0);
    queue.destroy();
  });
});
