import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * docs/configuration.md is the operators' list of settings: every environment variable that
 * lib/config/index.ts reads (the only reader of process.env) has a row there. `loadConfig` hands the
 * environment to the modules under lib/config/ too, so their reads count as well.
 */
describe("docs/configuration.md", () => {
  it("has a row for every environment variable lib/config/index.ts and lib/config/*.ts read", () => {
    const dir = new URL("../../../lib/config/", import.meta.url);
    const files = [
      new URL("../../../lib/config/index.ts", import.meta.url),
      ...readdirSync(dir)
        .filter((f) => f.endsWith(".ts"))
        .map((f) => new URL(f, dir)),
    ];
    expect(files.length).toBeGreaterThan(1);
    const source = files.map((f) => readFileSync(f, "utf8")).join("\n");
    const docs = readFileSync(new URL("../../../docs/configuration.md", import.meta.url), "utf8");
    // Reads look like str(env, "NAME", …), int(env, "NAME", …), bool(env, …) or env.NAME.
    const read = new Set(
      [...source.matchAll(/\(env, "([A-Z][A-Z0-9_]+)"/g), ...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]),
    );
    expect(read.size).toBeGreaterThan(20);
    const rows = new Set([...docs.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]));
    expect([...read].filter((v) => !rows.has(v as string)).sort()).toEqual([]);
  });
});
