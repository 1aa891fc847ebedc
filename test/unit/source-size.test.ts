import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, SOURCE_FOLDERS, sourceFiles } from "../support/source-files.js";

/**
 * Issue 21 §2: "keep every source file at or under 600 lines". Every non-test `.ts` file under the
 * source folders counts, with no exemption; a file over the limit is named with its line count.
 */
const ROOT = REPO_ROOT;
const FOLDERS = SOURCE_FOLDERS;
const MAX_LINES = 600;

/** Lines of a text as `wc -l` counts them, plus a last line without its newline. */
function lineCount(text: string): number {
  const newlines = text.split("\n").length - 1;
  return text === "" || text.endsWith("\n") ? newlines : newlines + 1;
}

describe("source file size", () => {
  it("counts lines as wc -l does", () => {
    expect([lineCount(""), lineCount("a\n"), lineCount("a\nb"), lineCount("a\nb\n")]).toEqual([0, 1, 2, 2]);
  });

  it(`keeps every source file under ${FOLDERS.join(", ")} at or under ${MAX_LINES} lines`, () => {
    const files = FOLDERS.flatMap((f) => sourceFiles(join(ROOT, f)));
    expect(files.length).toBeGreaterThan(100);
    const tooLong = files
      .map((f) => ({ file: relative(ROOT, f), lines: lineCount(readFileSync(f, "utf8")) }))
      .filter((f) => f.lines > MAX_LINES)
      .map((f) => `${f.file}: ${f.lines} lines`)
      .sort();
    expect(tooLong).toEqual([]);
  });
});
