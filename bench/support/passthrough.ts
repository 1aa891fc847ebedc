/**
 * The pass-through floor of the search benchmark: a minimal HTTP proxy with zero logic, run as its
 * own process (`node --import tsx bench/support/passthrough.ts <es-url> [connections]`, see
 * `spawnPassthrough` in api-child.ts). It measures what one more HTTP hop costs on this machine:
 * a Node `node:http` server in front of Elasticsearch, talking to it through an undici keep-alive
 * pool, like the API does, but with nothing else in the request path.
 *
 * For every request it forwards the method, path + query string (after the path of the
 * Elasticsearch URL, if any), `content-type` and body bytes verbatim to Elasticsearch, and writes
 * back Elasticsearch's status, `content-type`, `content-length` (when present, so the framing is
 * the same as Elasticsearch's own) and body bytes verbatim, streamed. No JSON parsing, no
 * authentication, no other headers. A failed upstream request is answered 502; a client that
 * goes away aborts its upstream request (so that its pool connection is freed).
 *
 * Arguments: the Elasticsearch URL (default: env `ELASTICSEARCH_URL`, else `http://127.0.0.1:9200`)
 * and the pool's connection count (default 16). Listens on 127.0.0.1 on a free port and prints
 * one JSON line `{"url": "...", "pid": N}` on stdout once it listens. SIGTERM / SIGINT close it and exit 0.
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { buffer } from "node:stream/consumers";
import { pipeline } from "node:stream/promises";
import { type Dispatcher, Pool } from "undici";

const esUrl = new URL(process.argv[2] ?? process.env.ELASTICSEARCH_URL ?? "http://127.0.0.1:9200");
const connections = Number(process.argv[3] ?? 16);
/** Path prefix of the Elasticsearch URL without the trailing slash ("" for `http://host:9200`). */
const basePath = esUrl.pathname.replace(/\/$/, "");
const pool = new Pool(esUrl.origin, { connections });

const server = createServer(async (req, res) => {
  // A client that goes away mid-request (autocannon drops its connections, requests in flight, at
  // the end of every run) must abort the upstream request: otherwise the unread answer keeps its
  // pool connection busy for good, and after a few runs the pool is exhausted.
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  try {
    const body = await buffer(req);
    const contentType = req.headers["content-type"];
    const upstream = await pool.request({
      method: req.method as Dispatcher.HttpMethod,
      path: `${basePath}${req.url ?? "/"}`,
      headers: contentType !== undefined ? { "content-type": contentType } : {},
      ...(body.length > 0 ? { body } : {}),
      signal: gone.signal,
    });
    const headers: Record<string, string | string[]> = {};
    const { "content-type": type, "content-length": length } = upstream.headers;
    if (type !== undefined) headers["content-type"] = type;
    if (length !== undefined) headers["content-length"] = length;
    res.writeHead(upstream.statusCode, headers);
    await pipeline(upstream.body, res);
  } catch (err) {
    if (!res.headersSent && !res.destroyed) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`pass-through: ${(err as Error).message}`);
    } else {
      res.destroy(err as Error);
    }
  }
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});

const stop = (): void => {
  server.close();
  server.closeAllConnections();
  void pool.destroy().finally(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
