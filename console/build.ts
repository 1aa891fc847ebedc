/**
 * Builds the web console (docs/console.md) into `dist/console/`: esbuild bundles console/src/main.tsx
 * (Preact, CodeMirror 6, uPlot — all from node_modules, nothing fetched at run time) into a
 * minified `app.js` (the shell and the light pages), `chunk-<hash>.js` files loaded on demand (the
 * editor with CodeMirror, the charts page with uPlot) and `app.css`, copies `index.html`, and writes two data files the console reads
 * as static assets:
 * - `fields.json`: the searchable fields of every record kind from the index mappings
 *   (es/mappings.ts `mappedFields`), the editor's completion list when the API has no `_mapping` route;
 * - `examples.json`: the query examples of docs/api.md ("### Examples"), one click away in the editor.
 *
 * Run by `npm run build:console`, by `npm install` (`prepare`) and by `npm run build`.
 * Usage: `tsx console/build.ts [outDir]` (default `dist/console`).
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { mappedFields } from "../es/mappings.js";
import { RECORD_KINDS } from "../lib/records.js";

const here = dirname(fileURLToPath(import.meta.url));

/** One example of docs/api.md: its comment, record kind(s) of the path and body (null: no body). */
export interface ConsoleExample {
  /** The `# …` comment line above the curl command. */
  title: string;
  /** The kinds segment of the path, e.g. `tx` or `block,tx`. */
  kinds: string;
  /** The request body as JSON text, or null for a body-less search. */
  body: string | null;
}

/**
 * The POST search examples of the "### Examples" section of a docs/api.md text (GET examples, such
 * as block by hash, are left out: the editor sends searches). Bodies with `…` placeholders are kept
 * as written (the user fills them in).
 * @param markdown - the text of docs/api.md.
 */
export function apiExamples(markdown: string): ConsoleExample[] {
  const start = markdown.indexOf("### Examples");
  const fence = markdown.indexOf("```sh", start);
  const end = markdown.indexOf("```\n", fence + 5);
  if (start < 0 || fence < 0 || end < 0) return [];
  const out: ConsoleExample[] = [];
  let title = "";
  // A command spans its continuation lines (trailing backslash, or an open -d '…' quote).
  const commands = markdown.slice(fence + 5, end).split(/\n(?=#|curl)/);
  for (const chunk of commands) {
    const lines = chunk.trim().split("\n");
    for (const line of lines.filter((l) => l.startsWith("#"))) title = line.replace(/^#\s*/, "");
    const cmd = lines.filter((l) => !l.startsWith("#")).join("\n");
    if (!cmd.includes("-X POST")) continue;
    const path = /\$BASE\/([a-z,]+)\/search\//.exec(cmd);
    if (!path) continue;
    const data = /-d '([\s\S]*?)'/.exec(cmd);
    out.push({ title, kinds: path[1] as string, body: data ? (data[1] as string) : null });
  }
  return out;
}

/** The searchable field paths of every record kind (es/mappings.ts), nested parents included. */
export function fieldLists(): Record<string, string[]> {
  return Object.fromEntries(
    RECORD_KINDS.map((k) => [
      k,
      mappedFields(k)
        .filter((f) => f.searchable)
        .map((f) => f.path),
    ]),
  );
}

/**
 * Bundles the console into `outDir` (created if missing). The `chunk-<hash>.js` files of earlier
 * builds that this build did not write are removed (a changed chunk gets a new name), so that the
 * directory — which the API serves, the Docker image ships and bench/console.ts weighs — holds this build only.
 * @returns the files written, with their sizes in bytes.
 * @throws when esbuild reports an error.
 */
export async function buildConsole(outDir = resolve(here, "../dist/console")): Promise<Record<string, number>> {
  mkdirSync(outDir, { recursive: true });
  const result = await build({
    entryPoints: { app: join(here, "src/main.tsx") },
    bundle: true,
    minify: true,
    format: "esm",
    // Code splitting: the pages that need CodeMirror (search) and uPlot (charts) load them with a
    // dynamic import(), as `chunk-<hash>.js` files next to app.js, so the first page is not held up
    // by them (docs/console.md, "Loading").
    splitting: true,
    chunkNames: "chunk-[hash]",
    target: "es2022",
    outdir: outDir,
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "linked",
    metafile: true,
    logLevel: "warning",
  });
  const written = new Set(Object.keys(result.metafile.outputs).map((f) => basename(f)));
  for (const f of readdirSync(outDir)) if (/^chunk-.*\.js(\.map|\.LEGAL\.txt)?$/.test(f) && !written.has(f)) rmSync(join(outDir, f));
  // The chunks app.js imports statically (Preact, shared with the lazy pages) are named in index.html
  // as modulepreload links, so the browser fetches them with app.js instead of after parsing it
  // (one round trip less before the first page; https://html.spec.whatwg.org/multipage/links.html#link-type-modulepreload).
  const app = Object.entries(result.metafile.outputs).find(([f]) => basename(f) === "app.js")?.[1];
  const preloads = (app?.imports ?? [])
    .filter((i) => i.kind === "import-statement")
    .map((i) => `    <link rel="modulepreload" href="/console/${basename(i.path)}" />\n`)
    .join("");
  const html = readFileSync(join(here, "src/index.html"), "utf8");
  writeFileSync(
    join(outDir, "index.html"),
    html.replace(/(\s*<script type="module" src="\/console\/app\.js"><\/script>\n)/, `$1${preloads}`),
  );
  writeFileSync(join(outDir, "fields.json"), JSON.stringify(fieldLists()));
  writeFileSync(join(outDir, "examples.json"), JSON.stringify(apiExamples(readFileSync(resolve(here, "../docs/api.md"), "utf8"))));
  const sizes: Record<string, number> = {};
  for (const [file, info] of Object.entries(result.metafile.outputs)) sizes[file] = info.bytes;
  return sizes;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const sizes = await buildConsole(process.argv[2] ? resolve(process.argv[2]) : undefined);
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  console.log(`console built: ${Object.keys(sizes).length} bundle files, ${(total / 1024).toFixed(0)} KiB`);
}
