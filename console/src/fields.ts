/**
 * The field names the editor completes, per record kind: from the API's Elasticsearch-compatible
 * `GET <searchPath><kind>/_mapping` when it answers, else from `fields.json`, written at build time
 * from the same index mappings (es/mappings.ts).
 * @module
 */
import { apiResponse, type ChainStatus } from "./api.js";

let built: Promise<Record<string, string[]>> | null = null;

/** Flattens an Elasticsearch mapping's `properties` (and multi-fields) into dotted paths. */
export function mappingPaths(properties: Record<string, unknown>, prefix = ""): string[] {
  const out: string[] = [];
  for (const [name, def] of Object.entries(properties)) {
    const d = def as { type?: string; properties?: Record<string, unknown>; fields?: Record<string, unknown> };
    const path = prefix + name;
    if (d.type === "nested" || !d.properties) out.push(path);
    if (d.properties) out.push(...mappingPaths(d.properties, `${path}.`));
    for (const sub of Object.keys(d.fields ?? {})) out.push(`${path}.${sub}`);
  }
  return out;
}

/** The field paths of one kind of a chain. */
export async function fieldsOf(chain: ChainStatus, kind: string): Promise<string[]> {
  try {
    const res = await apiResponse("GET", `${chain.searchPath}${kind}/_mapping`);
    const body = (await res.json()) as Record<string, { mappings?: { properties?: Record<string, unknown> } }>;
    const paths = new Set<string>();
    for (const index of Object.values(body)) for (const p of mappingPaths(index.mappings?.properties ?? {})) paths.add(p);
    if (paths.size > 0) return [...paths].sort();
  } catch {
    // no _mapping route (or not yet): the build-time list
  }
  built ??= fetch("/console/fields.json").then((r) => r.json() as Promise<Record<string, string[]>>);
  const lists = await built;
  return [...new Set(kind.split(",").flatMap((k) => lists[k] ?? []))].sort();
}
