/**
 * `npm run bench -- console [--runs N]`: the web console's weight and speed (docs/console.md).
 * - JavaScript (and CSS) shipped: the bundle console/build.ts writes, raw and gzip-compressed (KB);
 *   target ≤ 300 KB gzip of JavaScript.
 * - Time to the first rendered search results in headless Chromium (Debian's, scripts/browser.sh;
 *   driven by playwright-core) on localhost: from the navigation to `/console/#/search` (a fresh
 *   browser context each run, so nothing cached; the token already in the tab's sessionStorage)
 *   through loading the bundle, the token check (`GET /chains/`), the editor, one click on Search
 *   (`POST …/event/search/` with the default body, 20 events) to the first table row in the DOM.
 *   N runs (default 5): min / median / max ms; target ≤ 1000 ms median. Then the medians of the steps
 *   (token check answered, search sent — the click handled —, search answered, first row) and the
 *   load average, to tell the API's share from the page's.
 * The API is `npm start -- --no-stack` (two embedded chains with traffic) over the real stack,
 * under a unique topic/index/Redis prefix (test/support/harness.ts) removed at the end.
 * @module
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { buildConsole } from "../console/build.js";
import { createHarness, probeStack, waitFor } from "../test/support/harness.js";
import { npmStartEnv, startNpmStart } from "../test/support/npm-start.js";
import { numberArg } from "./support/data.js";

/** Target: gzip-compressed JavaScript shipped, in KB. */
export const JS_GZIP_TARGET_KB = 300;
/** Target: median time to the first rendered search results, in ms. */
export const FIRST_RESULTS_TARGET_MS = 1000;

const TOKEN = "bench-console-token";

export async function benchConsole(args: string[]): Promise<void> {
  const runs = numberArg(args, "--runs", 5);
  const outDir = join(import.meta.dirname, "../dist/console");
  await buildConsole(outDir);
  const size = (file: string) => {
    const bytes = readFileSync(join(outDir, file));
    return { raw: bytes.length / 1024, gzip: gzipSync(bytes, { level: 9 }).length / 1024 };
  };
  // app.js and the shared chunks it imports load first; the editor and charts chunks when their page needs them.
  const js = size("app.js");
  const chunks = readdirSync(outDir).filter((f) => f.startsWith("chunk-") && f.endsWith(".js"));
  const chunkGzip = chunks.reduce((a, f) => a + size(f).gzip, 0);
  const css = size("app.css");
  console.log(
    `console bundle: app.js ${js.raw.toFixed(0)} KB (${js.gzip.toFixed(1)} KB gzip), ${chunks.length} chunks shared or loaded on demand (${chunkGzip.toFixed(1)} KB gzip), app.css ${css.raw.toFixed(0)} KB (${css.gzip.toFixed(1)} KB gzip)`,
  );

  const up = await probeStack();
  if (!up.ok) {
    console.log(`time to first results: skipped (services not up: ${up.missing.join(", ")})`);
    return;
  }
  const executablePath = execFileSync("bash", [join(import.meta.dirname, "../scripts/browser.sh")], { encoding: "utf8" }).trim();
  const h = createHarness();
  const app = await startNpmStart(npmStartEnv(h.config, TOKEN));
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  try {
    // Wait until there are events to show.
    await waitFor(async () => {
      const res = await fetch(`${app.apiUrl}/ethereum/ethereum/anvil/es/event/search/`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: '{"size":1}',
      });
      return ((await res.json()) as { hits: { hits: unknown[] } }).hits.hits.length > 0;
    }, 120_000);
    const times: number[] = [];
    /** Per run, ms from the navigation: the token check answered, the click handled (search sent), the search answered. */
    const steps = { chains: [] as number[], sent: [] as number[], answered: [] as number[] };
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext();
      await context.addInitScript((t) => sessionStorage.setItem("chainsift.console.token", t), TOKEN);
      const page = await context.newPage();
      const started = performance.now();
      const at = () => performance.now() - started;
      page.on("request", (r) => r.method() === "POST" && r.url().endsWith("/search/") && steps.sent.push(at()));
      page.on("requestfinished", (r) => {
        if (r.url().endsWith("/chains/")) steps.chains.push(at());
        else if (r.method() === "POST" && r.url().endsWith("/search/")) steps.answered.push(at());
      });
      await page.goto(`${app.apiUrl}/console/#/search`);
      await page.click("#search-run");
      await page.waitForSelector("#search-results tbody tr");
      times.push(at());
      await context.close();
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
    times.sort((a, b) => a - b);
    const median = med(times);
    console.log(
      `time to first rendered search results (${runs} cold runs): min ${times[0]?.toFixed(0)} ms, median ${median.toFixed(0)} ms, max ${times[times.length - 1]?.toFixed(0)} ms`,
    );
    console.log(
      `  medians from the navigation: token check answered ${med(steps.chains).toFixed(0)} ms, search sent ${med(steps.sent).toFixed(0)} ms, search answered ${med(steps.answered).toFixed(0)} ms, first row ${median.toFixed(0)} ms; load average ${loadavg()[0]?.toFixed(1)}`,
    );
    console.log(
      `targets: JavaScript ≤ ${JS_GZIP_TARGET_KB} KB gzip: ${js.gzip <= JS_GZIP_TARGET_KB ? "met" : "MISSED"}; first results ≤ ${FIRST_RESULTS_TARGET_MS} ms: ${median <= FIRST_RESULTS_TARGET_MS ? "met" : "MISSED"}`,
    );
  } finally {
    await browser.close();
    await app.stop();
    await h.cleanup();
  }
}
