/**
 * Head discovery by subscription: `eth_subscribe("newHeads")` over WebSocket
 * (https://geth.ethereum.org/docs/interacting-with-geth/rpc/pubsub; anvil offers it on its HTTP
 * port), through ethers 6's `WebSocketProvider` (its "block" event is that subscription). It only
 * wakes the follower early: the head is still read by `eth_blockNumber` over the one JSON-RPC
 * client (./client.ts), which stays the fallback and the check that the subscription is alive
 * (docs/reorgs.md "Keeping pace"). ethers does not reconnect a closed socket: here a closed or
 * failed socket, or one that announced nothing while the polled head moved on by more than
 * {@link STALE_BLOCKS} blocks, is opened again after a delay doubling from 1 s up to 60 s.
 * @module
 */
import { Network, WebSocketProvider } from "ethers";
import type { Logger } from "../logger.js";
import { redactRpcUrl } from "./transport.js";

/** The subscription is taken for dead when the polled head is this many blocks past the last head it announced. */
export const STALE_BLOCKS = 3;
const RECONNECT_MIN_MS = 1000;
const RECONNECT_MAX_MS = 60_000;

/** A `newHeads` subscription (see the module notes). */
export interface NewHeads {
  /**
   * Resolves after `ms`, or earlier when the node announces a new head, or when `signal` aborts.
   * @param ms - the longest wait (the poll interval).
   */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  /** The head the follower polled: a subscription that fell {@link STALE_BLOCKS} behind it is opened again. */
  polled(head: number): void;
  /** The highest head announced so far, null before the first. */
  last(): number | null;
  /** Closes the socket; no reconnect after. */
  close(): void;
}

/**
 * Whether a subscription is stale (pure): the polled head is more than {@link STALE_BLOCKS} past
 * the last head it announced (or it never announced one while the polled head moved that far
 * from the first polled).
 */
export function headsStale(lastAnnounced: number | null, firstPolled: number | null, polled: number): boolean {
  const base = lastAnnounced ?? firstPolled;
  return base !== null && polled - base > STALE_BLOCKS;
}

/**
 * Subscribes to `newHeads` at a WebSocket URL (ws/wss).
 * @param url - the node's WebSocket endpoint, e.g. `ws://127.0.0.1:8545` (config `CHAINSIFT_RPC_WS_URL`).
 * @param logger - connection changes: info when subscribed, warn when it fails or goes stale (with the redacted URL).
 * @returns the subscription; it connects in the background and never throws.
 */
export function subscribeNewHeads(url: string, logger?: Logger): NewHeads {
  const label = redactRpcUrl(url);
  const waiters = new Set<() => void>();
  let provider: WebSocketProvider | undefined;
  let announced: number | null = null;
  let firstPolled: number | null = null;
  let closed = false;
  let reconnectMs = RECONNECT_MIN_MS;
  let timer: NodeJS.Timeout | undefined;

  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const drop = () => {
    const p = provider;
    provider = undefined;
    p?.destroy();
  };
  const reconnect = (why: string) => {
    if (closed || timer) return;
    drop();
    logger?.warn({ endpoint: label, why, retryInMs: reconnectMs }, "newHeads subscription lost: polling meanwhile");
    timer = setTimeout(() => {
      timer = undefined;
      connect();
    }, reconnectMs);
    timer.unref();
    reconnectMs = Math.min(reconnectMs * 2, RECONNECT_MAX_MS);
  };
  const connect = () => {
    if (closed) return;
    firstPolled = null;
    let p: WebSocketProvider;
    try {
      p = new WebSocketProvider(url, new Network("chainsift-ws", 0n), { staticNetwork: true });
    } catch (err) {
      reconnect((err as Error).message);
      return;
    }
    provider = p;
    const ws = p.websocket as unknown as { addEventListener?(type: string, fn: (e: unknown) => void): void };
    ws.addEventListener?.("error", () => reconnect("socket error"));
    ws.addEventListener?.("close", () => {
      if (provider === p) reconnect("socket closed");
    });
    p.on("block", (n: number) => {
      if (provider !== p) return;
      if (announced === null) logger?.info({ endpoint: label, head: n }, "newHeads subscription: the follower wakes at every new head");
      reconnectMs = RECONNECT_MIN_MS;
      if (announced === null || n > announced) announced = n;
      wake();
    }).catch((err: Error) => reconnect(err.message));
  };
  connect();

  return {
    wait: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const done = () => {
          clearTimeout(t);
          waiters.delete(done);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const t = setTimeout(done, ms);
        waiters.add(done);
        signal?.addEventListener("abort", done, { once: true });
      }),
    polled(head) {
      if (closed || !provider) return;
      firstPolled ??= head;
      if (headsStale(announced, firstPolled, head)) {
        announced = null;
        reconnect(`no new head announced while the polled head reached ${head}`);
      }
    },
    last: () => announced,
    close() {
      closed = true;
      clearTimeout(timer);
      drop();
      wake();
    },
  };
}
