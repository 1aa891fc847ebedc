import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../../..");
/** The source directories of the service, its CLIs and benchmarks (test/ holds JSON-RPC servers, not callers). */
const SOURCE_DIRS = ["lib", "pipeline", "cli", "api", "es", "topics", "bench", "scripts"];
/** The one JSON-RPC client: the only place that writes a request body. */
const CLIENT_DIR = "lib/rpc/";
/**
 * Files allowed to write their own requests, each with its reason. bench/support/floor-child.ts is
 * the library floor of `bench ingest --floor` (issue 23): it measures what Node's `fetch` +
 * `JSON.parse` cost without chainsift's client, so it must not use lib/rpc/.
 */
const EXEMPT: ReadonlySet<string> = new Set(["bench/support/floor-child.ts"]);
/** A JSON-RPC 2.0 request object written by hand (`jsonrpc: "2.0"`, `"jsonrpc":"2.0"`, …). */
const HAND_WRITTEN = /["']?\bjsonrpc\b["']?\s*:\s*["']2\.0["']/;

/** Every .ts file under `dir` (relative to the repository, `/`-separated). */
function sources(dir: string): string[] {
  const abs = join(ROOT, dir);
  let entries: string[];
  try {
    entries = readdirSync(abs, { recursive: true }) as string[];
  } catch {
    return [];
  }
  return entries.filter((f) => f.endsWith(".ts")).map((f) => relative(ROOT, join(abs, f)).split("\\").join("/"));
}

/**
 * issue 21: JSON-RPC is spoken one way. Every request goes through lib/rpc/client.ts (retries,
 * failover across all endpoints, metrics); a request body written anywhere else (a `fetch` with
 * `jsonrpc: "2.0"`) fails this test.
 */
describe("one JSON-RPC client", () => {
  it("no JSON-RPC request is written outside lib/rpc/", () => {
    const files = SOURCE_DIRS.flatMap(sources);
    expect(files.length).toBeGreaterThan(100); // the walk found the tree
    expect(files.some((f) => f.startsWith(CLIENT_DIR) && HAND_WRITTEN.test(readFileSync(join(ROOT, f), "utf8")))).toBe(true); // the pattern matches the client's own
    const offenders = files.filter(
      (f) => !f.startsWith(CLIENT_DIR) && !EXEMPT.has(f) && HAND_WRITTEN.test(readFileSync(join(ROOT, f), "utf8")),
    );
    expect(offenders).toEqual([]);
    // An exemption that no longer writes a request is stale: remove it.
    for (const f of EXEMPT) expect(HAND_WRITTEN.test(readFileSync(join(ROOT, f), "utf8")), f).toBe(true);
  });
});
