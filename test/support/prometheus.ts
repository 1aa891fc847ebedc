/**
 * Reading a Prometheus text exposition (https://prometheus.io/docs/instrumenting/exposition_formats/)
 * in tests: scrape an endpoint, then sum the samples of a metric whose labels match.
 * @module
 */

/** One sample line: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the sample lines of a text exposition (comments and blank lines skipped). */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || line.startsWith("#")) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** A scrape: its samples, and the sum of one metric's samples whose labels include `labels`. */
export interface Scrape {
  samples: Sample[];
  /** Σ of the matching samples (0 when none match). */
  sum(name: string, labels?: Record<string, string>): number;
  /** The matching samples. */
  find(name: string, labels?: Record<string, string>): Sample[];
  /** The text, trimmed to the `chainsift_*` lines (for reports). */
  chainsiftLines(): string[];
}

/**
 * GETs `<baseUrl>/metrics` and parses it.
 * @throws when the answer is not 200.
 */
export async function scrape(baseUrl: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${baseUrl}/metrics: ${res.status} ${text.slice(0, 200)}`);
  const samples = parseSamples(text);
  const find = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    find,
    sum: (name, labels) => find(name, labels).reduce((n, s) => n + s.value, 0),
    chainsiftLines: () => text.split("\n").filter((l) => l.startsWith("chainsift_")),
  };
}
