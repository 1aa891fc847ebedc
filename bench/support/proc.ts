/**
 * CPU time of processes from Linux's /proc (proc(5)): `utime + stime` of /proc/<pid>/stat, for
 * the benchmarks' CPU-seconds per 1,000 records of processes they did not start (the Java
 * services) and of child processes.
 * @module
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * The user + system CPU ticks in the text of /proc/<pid>/stat (fields 14 and 15, counted from 1;
 * field 2, the command name, may hold spaces and parentheses, so fields are counted after the
 * last `)`).
 * @throws {Error} when the text has not that shape.
 */
export function parseStatTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After ")": field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime) || fields.length < 13)
    throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 80)}`);
  return utime + stime;
}

let ticksPerSecond: number | undefined;

/** Clock ticks per second of /proc times (`getconf CLK_TCK`; 100 when getconf is missing). */
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU seconds (user + system) a live process has used, or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    return parseStatTicks(readFileSync(`/proc/${pid}/stat`, "utf8")) / clockTicks();
  } catch {
    return undefined;
  }
}

/**
 * The pids of the stack's services from the output of `bash scripts/stack.sh status` (lines
 * `<name>  up  <version>  <address>  pid <n>`); services that are down are absent.
 */
export function parseStackPids(status: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of status.split("\n")) {
    const m = /^(\S+)\s+up\s.*\bpid (\d+)\s*$/.exec(line);
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}
