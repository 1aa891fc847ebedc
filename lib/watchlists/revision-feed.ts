/**
 * The feed of watchlist changes in the match process: a Redis subscription to the store's change
 * channel (lib/watchlists/store.ts `changesChannel`), so the process's copies of its lists
 * (lib/match/watchlist-filters.ts) need not ask Redis for each list's revision at every batch.
 * Every add, remove and delete publishes `<rev> <list>` from the same script that writes it
 * (lib/watchlists/changes.ts), before the API answers, so by the time a block mined after the
 * change reaches the match stage, its message has long been on the subscriber's socket;
 * {@link RevisionFeed.drain} lets I/O already received run before a batch trusts the feed.
 *
 * Pub/sub delivers at most once: while the subscription is not known to be live, the feed says so
 * ({@link RevisionFeed.epoch} undefined) and readers ask Redis for every revision as before. It is
 * known live once a `hello <nonce>` it published itself comes back on the channel — after the
 * first subscribe and after every reconnection (the client's `error`, `reconnecting` and `end`
 * turn it off at once; a hello is sent every {@link RevisionFeedDeps.helloMs} until one returns).
 * Each live period has a new epoch, so a reader re-reads a revision learnt in an earlier period.
 * A connection that dies without the client noticing is covered by the readers' own re-read
 * every second (`recheckMs` of lib/match/watchlist-filters.ts).
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../logger.js";
import type { RedisClient } from "../redis.js";
import { changeMessage } from "./changes.js";

/** Most lists marked changed and not yet read before the feed starts a new live period. */
const MAX_MARKS = 100_000;

/** See the module comment. */
export interface RevisionFeed {
  /** The live period's number (1, 2, …), or undefined while the subscription is not known to be live. */
  epoch(): number | undefined;
  /**
   * Whether a change of the list was heard since the last call for it; forgets it (a change heard
   * later marks it again).
   * @param accountId - the owning account.
   * @param id - the watchlist id.
   */
  takeChanged(accountId: string, id: string): boolean;
  /** Resolves after the I/O that was ready when called has been handled (one `setImmediate` shared by the callers of a tick). */
  drain(): Promise<void>;
  /** Unsubscribes and closes the feed's connection (idempotent). */
  close(): Promise<void>;
}

/** Dependencies of {@link startRevisionFeed}. */
export interface RevisionFeedDeps {
  /** A connected client: duplicated for the subscription, and used to publish the hellos. */
  redis: Pick<RedisClient, "duplicate" | "publish">;
  /** The store's change channel (`changesChannel`). */
  channel: string;
  /** Told of connection errors of the subscription. */
  logger?: Pick<Logger, "warn">;
  /** How often a hello is sent while not live, in ms. Default 1,000. */
  helloMs?: number;
  /** The subscription's connection name (CLIENT SETNAME; what `CLIENT LIST` shows). Default `chainsift-watchlist-feed`. */
  connectionName?: string;
}

/**
 * Subscribes to the change channel on a connection of its own (see the module comment).
 * @param deps - see {@link RevisionFeedDeps}.
 * @returns the feed; it turns live when its first hello returns (usually within a millisecond).
 * @throws the client's error when the first connection or subscription fails.
 */
export async function startRevisionFeed(deps: RevisionFeedDeps): Promise<RevisionFeed> {
  const sub = deps.redis.duplicate({ name: deps.connectionName ?? "chainsift-watchlist-feed" });
  let live: number | undefined;
  let epochs = 0;
  let nonce: string | undefined;
  const changed = new Set<string>();
  const off = () => {
    live = undefined;
  };
  sub.on("error", (err: unknown) => {
    off();
    deps.logger?.warn({ err }, "watchlist change feed: redis connection error");
  });
  sub.on("reconnecting", off);
  sub.on("end", off);
  const hello = () => {
    if (live !== undefined) return;
    nonce = randomUUID();
    deps.redis.publish(deps.channel, `hello ${nonce}`).catch(() => {});
  };
  await sub.connect();
  try {
    await sub.subscribe(deps.channel, (message: string) => {
      const space = message.indexOf(" ");
      if (space < 0) return;
      if (message.startsWith("hello ")) {
        if (live === undefined && message.slice(space + 1) === nonce) live = ++epochs;
        return;
      }
      // Lists changed but never read pile up: past the cap, forget them all and start a new live period
      // (every reader then reads its revisions again), which loses nothing.
      if (changed.size >= MAX_MARKS) {
        changed.clear();
        off();
        hello();
      }
      changed.add(message.slice(space + 1));
    });
  } catch (err) {
    if (sub.isOpen) await sub.close().catch(() => {});
    throw err;
  }
  const timer = setInterval(hello, deps.helloMs ?? 1_000);
  timer.unref();
  hello();
  let draining: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  return {
    epoch: () => live,
    takeChanged(accountId, id) {
      return changed.delete(changeMessage(accountId, id));
    },
    drain() {
      draining ??= new Promise((resolve) =>
        setImmediate(() => {
          draining = undefined;
          resolve();
        }),
      );
      return draining;
    },
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        off();
        if (!sub.isOpen) return;
        await sub.unsubscribe(deps.channel).catch(() => {});
        await sub.close().catch(() => {});
      })();
      return closing;
    },
  };
}
