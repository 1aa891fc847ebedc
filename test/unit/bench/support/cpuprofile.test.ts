import { describe, expect, it } from "vitest";
import { type CpuProfile, moduleOf, profilePid, summariseProfiles } from "../../../../bench/support/cpuprofile.js";

/** root → a (lib file) → b (package); idle and GC as V8 names them. */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: { functionName: "(root)", url: "", lineNumber: -1 }, children: [2, 4, 5] },
    { id: 2, callFrame: { functionName: "encode", url: "file:///repo/topics/wire.ts", lineNumber: 9 }, children: [7] },
    { id: 3, callFrame: { functionName: "crc32C", url: "file:///x/node_modules/kafkajs/src/crc32C.js", lineNumber: 0 } },
    { id: 4, callFrame: { functionName: "(idle)", url: "", lineNumber: -1 } },
    { id: 5, callFrame: { functionName: "(garbage collector)", url: "", lineNumber: -1 } },
    // The same function at another node of the call tree: summed with node 2.
    { id: 6, callFrame: { functionName: "encode", url: "file:///repo/topics/wire.ts", lineNumber: 9 } },
    // A built-in between encode (node 2) and crc32C (node 3): crc32C's caller is encode.
    { id: 7, callFrame: { functionName: "allocate", url: "node:buffer", lineNumber: 1 }, children: [3, 6] },
  ],
  startTime: 1000,
  endTime: 2000,
  // Sample i lasts timeDeltas[i + 1] µs: 2 → 100, 3 → 300, 4 → 200, 6 → 100, 5 → 100, 2 → 0 (last).
  samples: [2, 3, 4, 6, 5, 2],
  timeDeltas: [10, 100, 300, 200, 100, 100],
};

describe("summariseProfiles", () => {
  it("sums self time per function and module, idle apart, largest first", () => {
    const s = summariseProfiles([{ profile }]);
    expect(s.totalMs).toBeCloseTo(0.8);
    expect(s.idleMs).toBeCloseTo(0.2);
    expect(s.busyMs).toBeCloseTo(0.6);
    expect(s.functions.map((f) => [f.name, f.selfMs])).toEqual([
      ["crc32C file:///x/node_modules/kafkajs/src/crc32C.js:1", 0.3],
      ["encode file:///repo/topics/wire.ts", 0.2],
      ["(garbage collector)", 0.1],
    ]);
    expect(s.functions[0]?.share).toBeCloseTo(0.5);
    // crc32C under node:buffer under encode; encode once at the top (no caller) and once under itself.
    expect(s.functions[0]?.callers?.map((c) => [c.name, c.share])).toEqual([["encode file:///repo/topics/wire.ts", 1]]);
    expect(s.functions[1]?.callers?.map((c) => [c.name, c.share])).toEqual([
      ["(no caller outside node's built-ins)", 0.5],
      ["encode file:///repo/topics/wire.ts", 0.5],
    ]);
    expect(s.modules.map((m) => m.name)).toEqual(["node_modules/kafkajs", "topics/wire.ts", "(native)"]);
  });

  it("counts only the samples inside the window, merges profiles, and keeps `top` rows", () => {
    // Sample times: 1010, 1110, 1410, 1610, 1710, 1810; the window [1100, 1500] keeps crc32C and idle.
    const s = summariseProfiles(
      [
        { profile, fromUs: 1100, toUs: 1500 },
        { profile, fromUs: 1100, toUs: 1500 },
      ],
      1,
    );
    expect(s.totalMs).toBeCloseTo(1.0);
    expect(s.idleMs).toBeCloseTo(0.4);
    expect(s.functions).toHaveLength(1);
    expect(s.functions[0]?.selfMs).toBeCloseTo(0.6);
    expect(s.functions[0]?.share).toBeCloseTo(1);
  });

  it("gives zeros for a profile without samples", () => {
    const s = summariseProfiles([{ profile: { ...profile, samples: [], timeDeltas: [] } }]);
    expect([s.totalMs, s.busyMs, s.functions.length]).toEqual([0, 0, 0]);
  });
});

describe("moduleOf and profilePid", () => {
  it("names packages (scoped too), built-ins and repository files", () => {
    expect(moduleOf("file:///a/node_modules/@elastic/transport/lib/x.js")).toBe("node_modules/@elastic/transport");
    expect(moduleOf("file:///a/node_modules/tsx/node_modules/esbuild/x.js")).toBe("node_modules/esbuild");
    expect(moduleOf("node:internal/buffer")).toBe("node:internal/buffer");
    expect(moduleOf("file:///work/wt/x/pipeline/decode/decoder.ts")).toBe("pipeline/decode/decoder.ts");
    expect(moduleOf("")).toBe("(native)");
  });

  it("reads the pid from node's profile file name", () => {
    expect(profilePid("CPU.20261126.110526.7386.0.001.cpuprofile")).toBe(7386);
    expect(profilePid("other.cpuprofile")).toBeUndefined();
  });
});
