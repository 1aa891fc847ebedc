/**
 * Summaries of V8 CPU profiles (the `.cpuprofile` JSON that `node --cpu-prof` writes on exit;
 * format: https://chromedevtools.github.io/devtools-protocol/tot/Profiler/#type-Profile): the
 * self time of each function (summed over every node of the call tree with the same function
 * name and script URL) and of each module (npm package or repository file), for the benchmark's
 * `--profile` report.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The part of a V8 `Profile` this module reads. */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  /** Start and end, microseconds on V8's monotonic clock. */
  startTime: number;
  endTime: number;
  /** Node id of each sample. */
  samples?: number[];
  /** Microseconds since the previous sample (the first: since `startTime`), one per sample. */
  timeDeltas?: number[];
}

/** One row of a summary. */
export interface SelfTime {
  /** `functionName url:line` (the line of the first node seen, 1-based; no line for `.ts` files), or a module name. */
  name: string;
  /** Self time, milliseconds. */
  selfMs: number;
  /** Share of the busy time (every sample but `(idle)`), 0..1; for a caller: share of the function's self time. */
  share: number;
  /**
   * For functions: the first callers outside Node's built-ins (the nearest ancestor in the call
   * tree whose script is neither `node:*` nor native), top 3 by the self time they account for.
   */
  callers?: SelfTime[];
}

/** A profile's totals and its top functions and modules by self time. */
export interface ProfileSummary {
  /** Sampled time, milliseconds (idle included). */
  totalMs: number;
  /** Time in `(idle)` (the event loop waiting), milliseconds. */
  idleMs: number;
  /** `totalMs - idleMs`. */
  busyMs: number;
  /** Functions by self time, largest first, at most `top`. */
  functions: SelfTime[];
  /** Modules by self time, largest first, at most `top`. */
  modules: SelfTime[];
}

/**
 * The module a script URL belongs to: `node_modules/<package>` (scoped packages keep their
 * scope), `node:<builtin>` for Node's own scripts, chainsift's files from their top folder
 * (`pipeline/decode/decoder.ts`), `(native)` for frames without a URL (`(garbage collector)`,
 * `(program)`, natives); any other URL as given.
 */
export function moduleOf(url: string): string {
  if (url === "") return "(native)";
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "/node_modules/".length).split("/");
    return `node_modules/${rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith("node:")) return url;
  for (const dir of ["/lib/", "/topics/", "/es/", "/pipeline/", "/api/", "/cli/", "/bench/", "/test/"]) {
    const i = url.lastIndexOf(dir);
    if (i >= 0) return url.slice(i + 1);
  }
  return url;
}

/** A profile and the part of it to summarise. */
export interface ProfileWindow {
  profile: CpuProfile;
  /**
   * Only samples taken at or after this time count, microseconds on the monotonic clock V8 stamps
   * profiles with (CLOCK_MONOTONIC on Linux, the clock of `process.hrtime.bigint() / 1000n` in any
   * process of the machine); default: from the start.
   */
  fromUs?: number;
  /** Only samples taken at or before this time count (same clock); default: to the end. */
  toUs?: number;
}

/**
 * `:<line>` (1-based) of a frame, or nothing for TypeScript files: tsx hands V8 each file compiled
 * to JavaScript whose lines are not the source's (every chainsift function shows line 1).
 */
function lineOf(url: string, lineNumber: number): string {
  return url.endsWith(".ts") ? "" : `:${lineNumber + 1}`;
}

/** `functionName url[:line]` of a frame (`(anonymous)` for a nameless one; no URL for natives). */
function frameName(frame: { functionName: string; url: string; lineNumber: number }): string {
  return `${frame.functionName || "(anonymous)"}${frame.url ? ` ${frame.url}${lineOf(frame.url, frame.lineNumber)}` : ""}`;
}

/**
 * Summarises profiles (merged, e.g. one stage's profiles from several rounds), each within its
 * window (e.g. from the stage's ready line to the last record, so that startup is left out).
 * @param profiles - parsed `.cpuprofile` documents and their windows.
 * @param top - rows kept per table; default 10.
 * @returns totals and the top functions and modules by self time; an empty profile gives zeros.
 */
export function summariseProfiles(profiles: readonly ProfileWindow[], top = 10): ProfileSummary {
  const byFunction = new Map<string, { name: string; us: number; callers: Map<string, number> }>();
  const byModule = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const { profile: p, fromUs = Number.NEGATIVE_INFINITY, toUs = Number.POSITIVE_INFINITY } of profiles) {
    const nodes = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const callerOf = (id: number): string => {
      for (let a = parent.get(id); a !== undefined; a = parent.get(a)) {
        const f = nodes.get(a);
        if (f?.url && !f.url.startsWith("node:")) return frameName(f);
      }
      return "(no caller outside node's built-ins)";
    };
    const samples = p.samples ?? [];
    const deltas = p.timeDeltas ?? [];
    let at = p.startTime;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i] ?? 0;
      const frame = nodes.get(samples[i] as number);
      // A sample's time is the delta to the next sample (V8's own attribution); the last one gets none.
      const us = Math.max(0, deltas[i + 1] ?? 0);
      if (!frame || at < fromUs || at > toUs) continue;
      totalUs += us;
      if (frame.functionName === "(idle)") {
        idleUs += us;
        continue;
      }
      const key = `${frame.functionName}\u0000${frame.url}`;
      let row = byFunction.get(key);
      if (!row) {
        row = { name: frameName(frame), us: 0, callers: new Map() };
        byFunction.set(key, row);
      }
      row.us += us;
      const caller = callerOf(samples[i] as number);
      row.callers.set(caller, (row.callers.get(caller) ?? 0) + us);
      const mod = moduleOf(frame.url);
      byModule.set(mod, (byModule.get(mod) ?? 0) + us);
    }
  }
  const busyUs = totalUs - idleUs;
  const rows = (entries: Array<[string, number]>): SelfTime[] =>
    entries
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: us / 1000, share: busyUs > 0 ? us / busyUs : 0 }));
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    busyMs: busyUs / 1000,
    functions: [...byFunction.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((r) => ({
        name: r.name,
        selfMs: r.us / 1000,
        share: busyUs > 0 ? r.us / busyUs : 0,
        callers: [...r.callers.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 3)
          .map(([name, us]) => ({ name, selfMs: us / 1000, share: r.us > 0 ? us / r.us : 0 })),
      })),
    modules: rows([...byModule.entries()]),
  };
}

/** The pid in the name node gives a profile file: `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`. */
export function profilePid(file: string): number | undefined {
  const m = /^CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(file);
  return m ? Number(m[1]) : undefined;
}

/**
 * Reads every `.cpuprofile` file of a directory, with the pid of the process that wrote it.
 * @throws when the directory cannot be read or a file is not JSON.
 */
export function readProfiles(dir: string): Array<{ pid: number | undefined; profile: CpuProfile }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => ({ pid: profilePid(f), profile: JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile }));
}

/** A summary as printable lines (a header, then the function table with each row's callers, and the module table). */
export function formatSummary(label: string, s: ProfileSummary, files: number): string[] {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)} %`;
  return [
    `profile ${label}: ${files} file(s), ${(s.totalMs / 1000).toFixed(2)} s sampled, ${(s.busyMs / 1000).toFixed(2)} s busy, ${(s.idleMs / 1000).toFixed(2)} s idle`,
    "  top self time by function (share of busy):",
    ...s.functions.flatMap((r) => [
      `  ${r.selfMs.toFixed(0).padStart(7)} ms ${pct(r.share)}  ${r.name}`,
      `                     called from: ${(r.callers ?? []).map((c) => `${(c.share * 100).toFixed(0)} % ${c.name}`).join("; ")}`,
    ]),
    "  top self time by module:",
    ...s.modules.map((r) => `  ${r.selfMs.toFixed(0).padStart(7)} ms ${pct(r.share)}  ${r.name}`),
  ];
}
