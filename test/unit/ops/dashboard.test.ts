/**
 * The Grafana dashboard and the Prometheus scrape config refer only to what chainsift serves:
 * every `chainsift_*` metric the dashboard queries is declared (a `"chainsift_…"` string) in the
 * pipeline's source, and the scrape config targets the metrics port docs/metrics.md names.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../..");

/** Every `"chainsift_…"` string literal (metric names) in the .ts files under a folder. */
function declaredMetrics(dir: string): Set<string> {
  const names = new Set<string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), "utf8");
    for (const m of text.matchAll(/"(chainsift_[a-z_]+)"/g)) names.add(m[1] as string);
  }
  return names;
}

describe("ops/grafana/chainsift.json", () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, "ops/grafana/chainsift.json"), "utf8")) as {
    panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  };
  const declared = declaredMetrics(join(ROOT, "pipeline"));

  it("queries only metrics the pipeline declares", () => {
    const used = new Set(
      dashboard.panels.flatMap((p) =>
        p.targets.flatMap((t) => [...t.expr.matchAll(/chainsift_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ""))),
      ),
    );
    expect(used.size).toBeGreaterThan(15);
    expect([...used].filter((n) => !declared.has(n))).toEqual([]);
  });
});

describe("ops/prometheus/prometheus.yml", () => {
  it("scrapes the compose services of every stage on the metrics port, and the API", () => {
    const yml = readFileSync(join(ROOT, "ops/prometheus/prometheus.yml"), "utf8");
    expect(yml).toContain("names: [ingest, decode, index, match, notify]");
    expect(yml).toMatch(/names: \[ingest, decode, index, match, notify\]\n\s+type: A\n\s+port: 9464/);
    expect(yml).toMatch(/names: \[api\]\n\s+type: A\n\s+port: 8080/);
  });
});
