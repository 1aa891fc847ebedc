/**
 * The per-batch metric helpers of the decode and index stages: one `inc` per label set, with the
 * same totals as one `inc` per record (a real prom-client registry).
 */
import { Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { countEvents, decodeMetricsOf } from "../../../../pipeline/decode/metrics.js";
import { countByKind, indexMetricsOf } from "../../../../pipeline/index/metrics.js";

/** The counter's values by label set, `label=value,…` → value. */
async function values(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) {
    out[
      Object.entries(v.labels)
        .map(([k, x]) => `${k}=${x}`)
        .join(",")
    ] = v.value;
  }
  return out;
}

describe("countByKind (index stage)", () => {
  it("counts documents per record kind with one inc per kind; unknown indices as `unknown`", async () => {
    const registry = new Registry();
    const { documents } = indexMetricsOf(registry);
    const inc = vi.spyOn(documents, "inc");
    const kinds = new Map([
      ["p-block", "block"],
      ["p-log", "log"],
    ]);
    countByKind(documents, "written", ["p-log", "p-block", "p-log", "p-log", "elsewhere", undefined], (i) => kinds.get(i));
    countByKind(documents, "superseded", [], (i) => kinds.get(i));
    expect(inc).toHaveBeenCalledTimes(3);
    expect(await values(registry, "chainsift_index_documents_total")).toEqual({
      "kind=log,result=written": 3,
      "kind=block,result=written": 1,
      "kind=unknown,result=written": 2,
    });
  });
});

describe("countEvents (decode stage)", () => {
  it("counts events per source and outcome with one inc per pair", async () => {
    const registry = new Registry();
    const { events } = decodeMetricsOf(registry);
    const inc = vi.spyOn(events, "inc");
    countEvents(events, [
      { source: "standard", error: null },
      { source: "standard", error: null },
      { source: "standard", error: "bad data" },
      { source: "abi", error: null },
      { source: "signature", error: null },
      { source: "standard", error: null },
    ]);
    expect(inc).toHaveBeenCalledTimes(4);
    expect(await values(registry, "chainsift_decode_events_total")).toEqual({
      "source=standard,outcome=decoded": 3,
      "source=standard,outcome=error": 1,
      "source=abi,outcome=decoded": 1,
      "source=signature,outcome=decoded": 1,
    });
  });
});
