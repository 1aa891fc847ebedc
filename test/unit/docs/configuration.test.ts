import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * docs/configuration.md is the operators' list of settings: every environment variable that
 * lib/config.ts reads (the only reader of process.env) has a row there.
 */
describe("docs/configuration.md", () => {
  it("has a row for every environment variable lib/config.ts reads", () => {
    const source = readFileSync(new URL("../../../lib/config.ts", import.meta.url), "utf8");
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
