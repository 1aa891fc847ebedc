/**
 * console/build.ts: a build writes app.js and its chunks, and removes the `chunk-*.js` files an
 * earlier build left that this one did not write (so the served directory and the benchmark's
 * weighing hold one build), keeping every file the new app.js imports; index.html preloads the
 * chunks app.js imports statically.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildConsole } from "../../../console/build.js";

describe("buildConsole", () => {
  const dir = mkdtempSync(join(tmpdir(), "console-build-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("removes the chunks of an earlier build and keeps the ones app.js imports", { timeout: 60_000 }, async () => {
    writeFileSync(join(dir, "chunk-STALE000.js"), "export const old = 1;");
    const sizes = await buildConsole(dir);
    const files = readdirSync(dir);
    expect(files).not.toContain("chunk-STALE000.js");
    const chunks = files.filter((f) => f.startsWith("chunk-") && f.endsWith(".js"));
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.sort()).toEqual(
      Object.keys(sizes)
        .map((f) => f.split("/").pop() as string)
        .filter((f) => f.startsWith("chunk-") && f.endsWith(".js"))
        .sort(),
    );
    // Every chunk app.js names (static or dynamic import) is there.
    const named = [...readFileSync(join(dir, "app.js"), "utf8").matchAll(/chunk-[A-Z0-9]+\.js/g)].map((m) => m[0]);
    expect(named.length).toBeGreaterThan(0);
    for (const f of named) expect(existsSync(join(dir, f))).toBe(true);
    // index.html preloads the chunks app.js imports statically (not the lazy ones), each one there.
    const preloads = [
      ...readFileSync(join(dir, "index.html"), "utf8").matchAll(/<link rel="modulepreload" href="\/console\/([^"]+)"/g),
    ].map((m) => m[1] as string);
    expect(preloads.length).toBeGreaterThan(0);
    expect(preloads.length).toBeLessThan(chunks.length);
    for (const f of preloads) expect(chunks).toContain(f);
  });
});
