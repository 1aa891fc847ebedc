/**
 * A faulty JSON-RPC node for tests and benchmarks (issue 19 §4): an HTTP proxy on 127.0.0.1 (free
 * port) in front of a real upstream node (anvil, or the mainnet replay server of rpc-replay.ts) that
 * forwards single calls and batches and injects seeded faults, each at a configurable rate, the way
 * load-balanced public endpoints and struggling self-hosted nodes misbehave:
 *
 * | mode | per | what the client gets |
 * |---|---|---|
 * | `lagging` | call | `null` for `eth_getBlockByNumber` / `eth_getBlockReceipts` of one of the newest `laggingDepth` blocks (a backend that lags behind the one that answered `eth_blockNumber`, which is passed through: the head comes from the backend that is ahead) |
 * | `stale-branch` | call | for a recent height (newest `recentDepth` blocks): a block with a made-up hash (and its transactions' `blockHash`), `eth_getBlockReceipts` whose `blockHash` (receipts and logs) is made up, or that lacks its last receipt (a backend on another branch, a load balancer mixing backends) |
 * | `rate-limit` | HTTP request | HTTP 429 with `Retry-After: 1` |
 * | `unavailable` | HTTP request | HTTP 503 |
 * | `hang` | HTTP request | no answer; the socket is closed after `hangMs` (past the client's timeout) |
 * | `truncated` | HTTP request | HTTP 200 with the upstream's JSON cut short (never valid JSON) |
 * | `head-backwards` | call | `eth_blockNumber` 1–3 lower than the highest head answered before |
 *
 * Rates: {@link FaultyNode.setFaults}`(mode, rate)` — one mode at `rate` (0..1): an HTTP-level mode
 * rolls once per HTTP request, a call-level mode once per call it applies to; several modes
 * (`setFaults(["lagging", "hang"], 0.2)`): each rolls on its own at `rate` (the first HTTP-level
 * hit answers the request; per call, the first call-level hit). `mixed`: each HTTP
 * request is faulted with probability `rate`, the mode drawn uniformly among the seven, or among
 * {@link FaultyNodeOptions.mixedModes} (a call-level
 * mode then hits one call of the request it applies to; none applicable: nothing is injected).
 * Every injection is counted in {@link FaultyNode.injected} (by mode), so tests compare it with
 * chainsift's metrics. Randomness comes from one seeded PRNG (bench/support/prng.ts, mulberry32);
 * the seed is printed when the node starts. A made-up block hash never equals a real one (random
 * 32 bytes from the PRNG); an empty full block is never given a made-up hash (with no receipt to
 * contradict it, it would be a consistent block of another branch, i.e. a real reorg).
 *
 * A hanging request never keeps a test alive: its timer is unref'd, and {@link FaultyNode.close}
 * destroys every open socket.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { prng } from "../../bench/support/prng.js";
import { callKind } from "../../lib/rpc/transport.js";

/** The fault modes (module doc). */
export const FAULT_MODES = ["lagging", "stale-branch", "rate-limit", "unavailable", "hang", "truncated", "head-backwards"] as const;
/** One fault mode (module doc). */
export type FaultMode = (typeof FAULT_MODES)[number];
/**
 * A fault mode, several modes (each at the rate, independently), `mixed` (all of them, one per
 * faulted request) or `none`.
 */
export type FaultSetting = FaultMode | readonly FaultMode[] | "mixed" | "none";

const HTTP_MODES: ReadonlySet<FaultMode> = new Set(["rate-limit", "unavailable", "hang", "truncated"]);

/** Options of {@link startFaultyNode}. */
export interface FaultyNodeOptions {
  /** The upstream JSON-RPC URL (http). */
  upstream: string;
  /** PRNG seed (printed). Default: random, or env-free callers pass `FAULT_SEED` themselves. */
  seed?: number;
  /** Initial setting. Default `none` (a plain proxy until {@link FaultyNode.setFaults}). */
  mode?: FaultSetting;
  /** Initial rate, 0..1. Default 0. */
  rate?: number;
  /** The modes `mixed` draws from. Default all of {@link FAULT_MODES}. */
  mixedModes?: readonly FaultMode[];
  /** `lagging`: how many of the newest blocks a lagging backend lacks. Default 2. */
  laggingDepth?: number;
  /** `stale-branch`: how many of the newest blocks count as recent. Default 4. */
  recentDepth?: number;
  /** `hang`: how long a request stays unanswered before its socket is closed, ms. Default 10000. */
  hangMs?: number;
  /** Where the start line (seed) goes. Default console.log. */
  log?: (line: string) => void;
  /** Name in the start line. Default `faulty-node`. */
  name?: string;
}

/** A running faulty node. */
export interface FaultyNode {
  /** `http://127.0.0.1:<port>` */
  url: string;
  seed: number;
  /** Faults injected so far, by mode (a `mixed` run counts each under its drawn mode). */
  injected: Record<FaultMode, number>;
  /**
   * Call-level faults by mode and what they hit: `<mode>:block` (eth_getBlockByNumber with full
   * transactions, as ingest's fetchBlock asks), `<mode>:hash` (without: a hash or header read),
   * `<mode>:receipts`, `<mode>:head` (eth_blockNumber). HTTP-level faults by mode and the kind of
   * request they hit (lib/rpc/transport.ts `callKind`: `head`, `block`, `traces`, `call`, `other`),
   * as `<mode>@<kind>`, e.g. `hang@traces`, `rate-limit@head`: every kind of call can be faulted.
   */
  injectedOn: Record<string, number>;
  /** HTTP requests and JSON-RPC calls received so far. */
  requests: number;
  calls: number;
  /** JSON-RPC calls received so far, by method. */
  methods: Record<string, number>;
  /** Highest `eth_blockNumber` the upstream answered through the proxy (-1: none yet). */
  upstreamHead: number;
  /** Changes the fault setting (counters are kept). */
  setFaults(mode: FaultSetting, rate?: number): void;
  /** Total of {@link FaultyNode.injected}. */
  total(): number;
  /** Stops listening and destroys every open socket (hanging ones included). */
  close(): Promise<void>;
}

type Call = { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown[] };
type Answer = { jsonrpc: string; id?: unknown; result?: unknown; error?: unknown };
type Obj = Record<string, unknown>;

const hexOf = (n: number) => `0x${n.toString(16)}`;
const numberParam = (p: unknown): number | undefined => (typeof p === "string" && /^0x[0-9a-f]+$/i.test(p) ? Number(p) : undefined);

/** Starts the proxy on 127.0.0.1 with a free port (module doc). */
export async function startFaultyNode(opts: FaultyNodeOptions): Promise<FaultyNode> {
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31) + 1;
  const random = prng(seed);
  const laggingDepth = opts.laggingDepth ?? 2;
  const recentDepth = opts.recentDepth ?? 4;
  const hangMs = opts.hangMs ?? 10_000;
  const mixedModes = opts.mixedModes ?? FAULT_MODES;
  let setting: FaultSetting = opts.mode ?? "none";
  let rate = opts.rate ?? 0;
  let highestAnswered = -1;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const madeUpHash = () =>
    `0x${Array.from({ length: 8 }, () =>
      Math.floor(random() * 2 ** 32)
        .toString(16)
        .padStart(8, "0"),
    ).join("")}`;

  const node: FaultyNode = {
    url: "",
    seed,
    injected: Object.fromEntries(FAULT_MODES.map((m) => [m, 0])) as Record<FaultMode, number>,
    injectedOn: {},
    requests: 0,
    calls: 0,
    methods: {},
    upstreamHead: -1,
    setFaults(mode, r = rate) {
      setting = mode;
      rate = r;
    },
    total: () => Object.values(node.injected).reduce((a, b) => a + b, 0),
    close: async () => {
      closed = true;
      for (const t of timers) clearTimeout(t);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
      });
    },
  };

  /** Whether a call-level mode applies to a call (before its answer is known). */
  const applies = (mode: FaultMode, call: Call): boolean => {
    const n = numberParam(call.params?.[0]);
    const head = node.upstreamHead;
    switch (mode) {
      case "lagging":
        return (
          (call.method === "eth_getBlockByNumber" || call.method === "eth_getBlockReceipts") &&
          n !== undefined &&
          head >= 0 &&
          n > head - laggingDepth
        );
      case "stale-branch":
        return (
          (call.method === "eth_getBlockByNumber" || call.method === "eth_getBlockReceipts") &&
          n !== undefined &&
          head >= 0 &&
          n > head - recentDepth
        );
      case "head-backwards":
        return call.method === "eth_blockNumber" && highestAnswered > 3;
      default:
        return false;
    }
  };

  /** Applies a call-level fault to an upstream answer; false when it turned out not to apply (nothing counted). */
  const corrupt = (mode: FaultMode, call: Call, answer: Answer): boolean => {
    if (answer.error !== undefined) return false;
    if (mode === "lagging") {
      if (answer.result === null) return false;
      answer.result = null;
      return true;
    }
    if (mode === "head-backwards") {
      answer.result = hexOf(Math.max(0, highestAnswered - 1 - Math.floor(random() * 3)));
      return true;
    }
    // stale-branch
    const result = answer.result;
    if (call.method === "eth_getBlockByNumber") {
      const block = result as Obj | null;
      if (!block) return false;
      const txs = Array.isArray(block.transactions) ? (block.transactions as unknown[]) : [];
      const full = txs.length > 0 && typeof txs[0] === "object";
      if (call.params?.[1] === true && !full) return false; // an empty full block: see the module doc
      const hash = madeUpHash();
      answer.result = { ...block, hash, transactions: full ? txs.map((t) => ({ ...(t as Obj), blockHash: hash })) : txs };
      return true;
    }
    const receipts = result as Obj[] | null;
    if (!Array.isArray(receipts) || receipts.length === 0) return false;
    if (random() < 0.5) {
      answer.result = receipts.slice(0, -1);
    } else {
      const hash = madeUpHash();
      answer.result = receipts.map((r) => ({
        ...r,
        blockHash: hash,
        logs: Array.isArray(r.logs) ? (r.logs as Obj[]).map((l) => ({ ...l, blockHash: hash })) : r.logs,
      }));
    }
    return true;
  };

  const forward = async (body: Buffer): Promise<{ status: number; text: string; type: string }> => {
    const res = await fetch(opts.upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Uint8Array(body),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, text: await res.text(), type: res.headers.get("content-type") ?? "application/json" };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> => {
    node.requests++;
    let parsed: Call | Call[] | undefined;
    try {
      parsed = JSON.parse(body.toString("utf8")) as Call | Call[];
    } catch {
      parsed = undefined;
    }
    const calls = parsed === undefined ? [] : Array.isArray(parsed) ? parsed : [parsed];
    node.calls += calls.length;
    for (const c of calls) node.methods[String(c.method)] = (node.methods[String(c.method)] ?? 0) + 1;

    // Which fault, if any: an HTTP-level one for the request, or call-level ones per call (by index).
    let httpFault: FaultMode | undefined;
    const callFaults = new Map<number, FaultMode>();
    if (setting === "mixed") {
      if (rate > 0 && random() < rate) {
        const mode = mixedModes[Math.floor(random() * mixedModes.length)] as FaultMode;
        if (HTTP_MODES.has(mode)) httpFault = mode;
        else {
          const candidates = calls.map((c, i) => [c, i] as const).filter(([c]) => applies(mode, c));
          const pick = candidates[Math.floor(random() * candidates.length)];
          if (pick) callFaults.set(pick[1], mode);
        }
      }
    } else if (setting !== "none" && rate > 0) {
      // Several modes: each rolls on its own; the first HTTP-level hit wins, and per call the first call-level hit.
      const modes: readonly FaultMode[] = typeof setting === "string" ? [setting] : setting;
      for (const mode of modes) if (HTTP_MODES.has(mode) && httpFault === undefined && random() < rate) httpFault = mode;
      for (const mode of modes) {
        if (HTTP_MODES.has(mode)) continue;
        for (const [i, c] of calls.entries()) if (!callFaults.has(i) && applies(mode, c) && random() < rate) callFaults.set(i, mode);
      }
    }

    if (httpFault !== undefined) {
      const on = `${httpFault}@${callKind(calls.map((c) => String(c.method)))}`;
      // truncated: counted below, once the upstream answered (a body of one byte or less is not truncated).
      if (httpFault !== "truncated") node.injectedOn[on] = (node.injectedOn[on] ?? 0) + 1;
    }
    if (httpFault === "rate-limit" || httpFault === "unavailable") {
      node.injected[httpFault]++;
      const status = httpFault === "rate-limit" ? 429 : 503;
      res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "1" } : {}) });
      res.end(
        JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32005, message: status === 429 ? "rate limited" : "unavailable" } }),
      );
      return;
    }
    if (httpFault === "hang") {
      node.injected.hang++;
      const t = setTimeout(() => {
        timers.delete(t);
        req.socket.destroy();
      }, hangMs);
      t.unref();
      timers.add(t);
      return;
    }

    const upstream = await forward(body);
    let text = upstream.text;
    let answers: Answer | Answer[] | undefined;
    try {
      answers = JSON.parse(text) as Answer | Answer[];
    } catch {
      answers = undefined;
    }
    if (answers !== undefined && upstream.status === 200) {
      const list = Array.isArray(answers) ? answers : [answers];
      const byId = new Map(list.map((a) => [JSON.stringify(a.id ?? null), a]));
      let changed = false;
      for (const [i, c] of calls.entries()) {
        const a = byId.get(JSON.stringify(c.id ?? null));
        if (!a) continue;
        if (c.method === "eth_blockNumber" && typeof a.result === "string")
          node.upstreamHead = Math.max(node.upstreamHead, Number(a.result));
        const mode = callFaults.get(i);
        if (mode && corrupt(mode, c, a)) {
          node.injected[mode]++;
          const on =
            c.method === "eth_blockNumber"
              ? "head"
              : c.method === "eth_getBlockReceipts"
                ? "receipts"
                : c.params?.[1] === true
                  ? "block"
                  : "hash";
          node.injectedOn[`${mode}:${on}`] = (node.injectedOn[`${mode}:${on}`] ?? 0) + 1;
          changed = true;
        }
        if (c.method === "eth_blockNumber" && typeof a.result === "string") highestAnswered = Math.max(highestAnswered, Number(a.result));
      }
      if (changed) text = JSON.stringify(answers);
    }
    if (httpFault === "truncated" && text.length > 1) {
      node.injected.truncated++;
      const on = `truncated@${callKind(calls.map((c) => String(c.method)))}`;
      node.injectedOn[on] = (node.injectedOn[on] ?? 0) + 1;
      text = text.slice(0, 1 + Math.floor(random() * (text.length - 1)));
    }
    res.writeHead(upstream.status, { "content-type": upstream.type });
    res.end(text);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (closed) {
        req.socket.destroy();
        return;
      }
      handle(req, res, Buffer.concat(chunks)).catch((err: Error) => {
        if (res.headersSent || res.destroyed) return void req.socket.destroy();
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`faulty-node: upstream failed: ${err.message}`);
      });
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  node.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  (opts.log ?? console.log)(
    `[${opts.name ?? "faulty-node"}] seed ${seed} (${node.url} → ${opts.upstream}; ${String(setting)}${setting === "none" ? "" : ` at ${rate}`})`,
  );
  return node;
}
