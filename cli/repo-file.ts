/**
 * Files of the chainsift checkout that are not compiled (scripts/, …), found from an entry point
 * that runs either from source (`cli/*.ts` under tsx) or from the build (`dist/cli/*.js`, one
 * folder deeper): see docs/build.md.
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The absolute path of a file of the checkout, searched in this module's folder and each folder
 * above it (so it is found from `cli/` and from `dist/cli/` alike).
 * @param relative - path from the repository root, e.g. `scripts/stack.sh`.
 * @throws {Error} when no folder above this module holds the file (e.g. an image that copied only
 *   `dist/`).
 */
export function repoFile(relative: string): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, relative);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${relative} not found in any folder above ${import.meta.dirname}`);
  }
}
