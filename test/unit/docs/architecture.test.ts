import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * docs/architecture.md tells a newcomer where each kind of change goes, so what it cites must
 * exist: every path in backticks or in a link (`lib/alerting/channels.ts`, `lib/match/`;
 * `channels/channel.ts` relative to a folder cited in the same table row or paragraph), and every
 * exported name it cites — a code name in backticks with a capital letter or an underscore
 * (`createDeliverer`, `ALERT_TYPES`, `MAPPINGS[kind]`, `servedChains()`), exported by a file the
 * same row or paragraph cites (any file when it cites none); for `A.b`, `A` is exported there and
 * `b` is named in its file. Placeholders (`pipeline/<stage>/`) and error codes are skipped.
 */
const root = new URL("../../../", import.meta.url).pathname;
const doc = readFileSync(join(root, "docs/architecture.md"), "utf8");
const SOURCE_DIRS = ["lib", "pipeline", "api", "topics", "es", "cli", "bench", "console"];
const PATH = /^[\w.-]+(\/[\w.-]*)+$|^[\w.-]+\.(ts|md|cjs|json)$/;
const NAME = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?(?:\(\S*\)|\[\w+\])?$/;

/** Every .ts/.tsx file under `dir` (node_modules and build output skipped). */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (name === "node_modules" || name === "dist") return [];
    if (statSync(join(root, rel)).isDirectory()) return sourceFiles(rel);
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [rel] : [];
  });
}
const allFiles = SOURCE_DIRS.flatMap(sourceFiles);
const text = (file: string) => readFileSync(join(root, file), "utf8");

/** The names a file exports (declarations and `export { … }` lists). */
function exportsOf(file: string): Set<string> {
  const src = text(file);
  const names = [
    ...src.matchAll(
      /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm,
    ),
  ].map((m) => m[1]!);
  for (const m of src.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const part of m[1]!.split(",")) {
      const name = part
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)
        .pop()
        ?.trim();
      if (name) names.push(name);
    }
  }
  return new Set(names);
}

/** The doc's tables rows and paragraphs (the picture left out), each with its backticked spans and link targets. */
const blocks = doc
  .replace(/```[\s\S]*?```/g, "")
  .split(/\n\s*\n|\n(?=\|)/)
  .map((block) =>
    [...block.matchAll(/`([^`\n]+)`|\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map((m) =>
      m[1] !== undefined ? { text: m[1], link: false } : { text: join("docs", m[2]!), link: true },
    ),
  );

/**
 * A cited path as it exists in the repository, from the root or relative to a folder (or a parent
 * of one) cited in the same block (`channels/channel.ts` beside `pipeline/notify/channels/<name>.ts`); or null.
 */
function resolve(path: string, block: { text: string }[]): string | null {
  if (existsSync(join(root, path))) return path;
  const dirs = block.flatMap((s) => {
    const parts = s.text.split("/").slice(0, -1);
    return parts.map((_, i) => `${parts.slice(0, i + 1).join("/")}/`);
  });
  const dir = dirs.find((d) => !d.includes("<") && existsSync(join(root, d, path)));
  return dir === undefined ? null : join(dir, path);
}

describe("docs/architecture.md", () => {
  it("cites only paths that exist", () => {
    const paths = blocks.flatMap((block) => block.filter((s) => PATH.test(s.text) && !s.text.includes("<")).map((s) => ({ s, block })));
    expect(paths.length).toBeGreaterThan(40);
    expect(paths.filter(({ s, block }) => resolve(s.text, block) === null).map(({ s }) => s.text)).toEqual([]);
  });

  it("cites only exported names that exist, in the files cited beside them", () => {
    let checked = 0;
    const missing = blocks.flatMap((block) => {
      const cited = block
        .filter((s) => PATH.test(s.text) && !s.text.includes("<"))
        .map((s) => resolve(s.text, block))
        .filter((p): p is string => p !== null && /\.tsx?$|\/$/.test(p));
      const scope =
        cited.length === 0 ? allFiles : allFiles.filter((f) => cited.some((c) => f === c || (c.endsWith("/") && f.startsWith(c))));
      return block
        .filter((s) => !s.link && !PATH.test(s.text))
        .map((s) => NAME.exec(s.text))
        .filter((m): m is RegExpExecArray => m !== null && /[A-Z_]/.test(m[1]!) && !/^(CS|CHAINSIFT)_/.test(m[1]!))
        .filter(([, head, member]) => {
          checked++;
          const files = scope.filter((f) => exportsOf(f).has(head!));
          return files.length === 0 || (member !== undefined && !files.some((f) => new RegExp(`\\b${member}\\b`).test(text(f))));
        })
        .map(([t]) => t);
    });
    expect(checked).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });
});
