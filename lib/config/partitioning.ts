/**
 * The index-partitioning variables of `loadConfig` (lib/config/index.ts): blocks per backing index,
 * primaries and replicas per record kind (issue 22; es/partitions.ts, docs/operations.md "Shards and
 * partitions").
 * @module
 */
import { DEFAULT_PARTITIONING, type KindPartitioning, type Partitioning } from "../partitioning.js";
import { RECORD_KINDS, type RecordKind } from "../records.js";
import { ConfigError } from "./parse.js";

/**
 * One value per record kind from an env variable: an integer for every kind, or a JSON object by
 * kind (kinds left out keep `fallback`'s value).
 * @throws {ConfigError} for anything else, an unknown kind or an integer below `min`.
 */
function perKind(env: NodeJS.ProcessEnv, name: string, fallback: Record<RecordKind, number>, min: number): Record<RecordKind, number> {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return { ...fallback };
  const check = (v: unknown, what: string): number => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < min)
      throw new ConfigError(name, `${what}: expected an integer >= ${min}, got ${JSON.stringify(v)}`);
    return v;
  };
  if (/^\d+$/.test(raw)) {
    const n = check(Number(raw), "value");
    return Object.fromEntries(RECORD_KINDS.map((k) => [k, n])) as Record<RecordKind, number>;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(name, `expected an integer or a JSON object by kind, got ${JSON.stringify(raw)}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new ConfigError(name, `expected an integer or a JSON object by kind, got ${JSON.stringify(raw)}`);
  const out = { ...fallback };
  for (const [k, v] of Object.entries(parsed)) {
    if (!(RECORD_KINDS as readonly string[]).includes(k))
      throw new ConfigError(name, `unknown kind ${JSON.stringify(k)}; kinds: ${RECORD_KINDS.join(", ")}`);
    out[k as RecordKind] = check(v, k);
  }
  return out;
}

/** `elasticsearch.partitioning` from `CHAINSIFT_INDEX_PARTITION_BLOCKS`, `CHAINSIFT_INDEX_SHARDS`, `CHAINSIFT_INDEX_REPLICAS`. */
export function partitioningOf(env: NodeJS.ProcessEnv): Partitioning {
  const pick = (f: keyof KindPartitioning) =>
    Object.fromEntries(RECORD_KINDS.map((k) => [k, DEFAULT_PARTITIONING[k][f]])) as Record<RecordKind, number>;
  const blocks = perKind(env, "CHAINSIFT_INDEX_PARTITION_BLOCKS", pick("blocks"), 1);
  const shards = perKind(env, "CHAINSIFT_INDEX_SHARDS", pick("shards"), 1);
  const replicas = perKind(env, "CHAINSIFT_INDEX_REPLICAS", pick("replicas"), 0);
  return Object.fromEntries(RECORD_KINDS.map((k) => [k, { blocks: blocks[k], shards: shards[k], replicas: replicas[k] }])) as Partitioning;
}
