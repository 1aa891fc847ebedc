/**
 * The repository's source files, for tests that check a rule over all of them (file size, error classes).
 * @module
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (absolute, with a trailing slash). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The folders of production TypeScript (the web console's browser code, console/src, aside). */
export const SOURCE_FOLDERS = ["api", "cli", "es", "lib", "pipeline", "topics", "bench", "scripts"];

/** The `.ts` files under `dir` (recursively), test files and node_modules left out. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") out.push(...sourceFiles(path));
    } else if (entry.isFile() && entry.name.endsWith(".ts") && !/\.(test|spec)\.ts$/.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}
