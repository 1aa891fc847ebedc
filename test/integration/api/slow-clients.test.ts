/**
 * Slow and idle clients against a real listening API (`startApi` on 127.0.0.1, port 0) with small
 * configured timeouts, driven by raw `node:net` sockets: a body that never completes, headers that
 * never complete, a connection that never sends anything, and an idle keep-alive connection must
 * each be answered (408 with the error envelope) or closed by the server, well before a generous
 * bound (10× the timeout). Oversized headers and non-HTTP bytes get the error envelope too. Needs Redis and Elasticsearch like every API test; skipped otherwise.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApi, startApi } from "../../../api/server.js";
import { type Config, loadConfig } from "../../../lib/config/index.js";
import { deleteRedisKeys, searchStackUp } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);

const ID = `t${randomBytes(4).toString("hex")}`;
const TOKEN = `test-${ID}`;
/** The configured timeouts of this test's server, in ms. */
const TIMEOUT_MS = 500;
/** Generous bound on how long the server may take to act on an expired timeout. */
const BOUND_MS = 10 * TIMEOUT_MS;
const config: Config = {
  ...base,
  redisKeyPrefix: `${ID}:`,
  api: {
    ...base.api,
    host: "127.0.0.1",
    port: 0,
    tokens: [TOKEN],
    rateLimitMax: 100_000,
    headersTimeoutMs: TIMEOUT_MS,
    requestTimeoutMs: TIMEOUT_MS,
    keepAliveTimeoutMs: TIMEOUT_MS,
    connectionTimeoutMs: 4 * TIMEOUT_MS,
  },
};

/** What happened on a raw connection until the server closed it (or the bound passed). */
interface Outcome {
  /** Whether the server closed the connection within the bound. */
  closed: boolean;
  /** Milliseconds from the last write to the close (or to the bound). */
  elapsedMs: number;
  /** Everything the server sent. */
  received: string;
}

/**
 * Opens a raw TCP connection, writes `chunks` (each after the previous one is flushed), then waits
 * for the server to close the connection, at most {@link BOUND_MS}.
 */
async function rawExchange(url: string, chunks: string[]): Promise<Outcome> {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect({ host: hostname, port: Number(port) });
  socket.setEncoding("utf8");
  let received = "";
  socket.on("data", (d: string) => {
    received += d;
  });
  socket.on("error", () => {}); // a reset after a 408 is a close too
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  for (const chunk of chunks) await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
  const start = Date.now();
  const closed = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), BOUND_MS);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  const elapsedMs = Date.now() - start;
  socket.destroy();
  return { closed, elapsedMs, received };
}

/** The status code and JSON body of a raw HTTP/1.1 answer (`null` when nothing was answered). */
function parseAnswer(raw: string): { status: number; body: unknown } | null {
  const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(raw);
  if (!m) return null;
  return { status: Number(m[1]), body: m[2] ? JSON.parse(m[2]) : null };
}

describe.skipIf(!up)("slow and idle clients (real server, raw sockets)", () => {
  let api: RunningApi;
  let searchPath: string;

  beforeAll(async () => {
    api = await startApi({ config }, { logger: false });
    searchPath = `/${config.chain.technology}/${config.chain.blockchain}/${config.chain.network}/es/block/search/`;
  });

  afterAll(async () => {
    await api?.app.close();
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("a body shorter than its Content-Length is answered 408 CS_REQUEST_TIMEOUT and the connection closed", async () => {
    const head =
      `POST ${searchPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    const r = await rawExchange(api.url, [head, "{}"]);
    expect(r.closed, `still open after ${BOUND_MS} ms; received ${JSON.stringify(r.received)}`).toBe(true);
    expect(r.elapsedMs).toBeLessThan(BOUND_MS);
    const answer = parseAnswer(r.received);
    expect(answer?.status).toBe(408);
    expect(answer?.body).toMatchObject({ error: { code: "CS_REQUEST_TIMEOUT", path: null }, errors: [{ code: "CS_REQUEST_TIMEOUT" }] });
  });

  it("headers that never end are answered 408 and the connection closed", async () => {
    const r = await rawExchange(api.url, [`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `]);
    expect(r.closed, `still open after ${BOUND_MS} ms`).toBe(true);
    expect(parseAnswer(r.received)?.status).toBe(408);
  });

  it("a connection that never sends a byte is closed", async () => {
    const r = await rawExchange(api.url, []);
    expect(r.closed, `still open after ${BOUND_MS} ms`).toBe(true);
  });

  it("an idle keep-alive connection is closed after a complete exchange", async () => {
    const r = await rawExchange(api.url, ["GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"]);
    expect(r.closed, `still open after ${BOUND_MS} ms`).toBe(true);
    expect(parseAnswer(r.received)).toEqual({ status: 200, body: { status: "ok" } });
  });

  it("oversized headers and garbage are answered with the error envelope (431, 400) and the connection closed", async () => {
    const big = await rawExchange(api.url, [`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`]);
    expect(big.closed).toBe(true);
    expect(parseAnswer(big.received)).toMatchObject({ status: 431, body: { error: { code: "CS_HEADERS_TOO_LARGE" } } });
    const garbage = await rawExchange(api.url, ["NOT HTTP AT ALL\r\n\r\n"]);
    expect(garbage.closed).toBe(true);
    expect(parseAnswer(garbage.received)).toMatchObject({ status: 400, body: { error: { code: "CS_BAD_REQUEST" } } });
  });

  it("a complete request is served normally", async () => {
    const res = await fetch(`${api.url}/healthz`);
    expect([res.status, await res.json()]).toEqual([200, { status: "ok" }]);
  });
});
