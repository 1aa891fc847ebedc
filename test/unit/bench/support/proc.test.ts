import { describe, expect, it } from "vitest";
import { cpuSeconds, parseStackPids, parseStatTicks } from "../../../../bench/support/proc.js";

describe("parseStatTicks", () => {
  it("adds utime and stime, counting fields after the command name (which may hold spaces and parentheses)", () => {
    const stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 8 9 20 0 50 0 1000 1 1 1";
    expect(parseStatTicks(stat)).toBe(1234 + 567);
  });

  it("throws on text of another shape", () => {
    expect(() => parseStatTicks("nonsense")).toThrow(/not a \/proc/);
  });

  it("reads this process's own CPU time", () => {
    const s = cpuSeconds(process.pid);
    expect(s).toBeGreaterThan(0);
    expect(cpuSeconds(2 ** 30)).toBeUndefined();
  });
});

describe("parseStackPids", () => {
  it("takes the pids of the services that are up", () => {
    const status = [
      "redis          up          7.0.15  redis://127.0.0.1:6379                   pid 6399",
      "kafka          up          3.9.1   127.0.0.1:9092                           pid 6527",
      "elasticsearch  down",
      "registry       up          3.0.9   http://127.0.0.1:8081/apis/ccompat/v7    pid 6379",
    ].join("\n");
    expect([...parseStackPids(status)]).toEqual([
      ["redis", 6399],
      ["kafka", 6527],
      ["registry", 6379],
    ]);
  });
});
