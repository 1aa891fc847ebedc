/** The validation kit (lib/validation): JSON Pointers as paths, the problem collector and its result (jsonPath itself: test/unit/api/dsl/validate.test.ts). */
import { describe, expect, it } from "vitest";
import { pointerSegments, pointerToPath, segmentsPath } from "../../../../lib/validation/path.js";
import { isJsonObject, ProblemCollector } from "../../../../lib/validation/problems.js";

describe("JSON paths", () => {
  it("turns JSON Pointers into paths (canonical indexes only)", () => {
    expect(pointerSegments("")).toEqual([]);
    expect(pointerSegments("/a~1b/c~0d/0")).toEqual(["a/b", "c~d", "0"]);
    expect(pointerToPath("/config/targetMap/0/value")).toBe("config.targetMap[0].value");
    expect(pointerToPath("/x/01")).toBe('x["01"]');
    expect(pointerToPath("/rule_id", "params")).toBe("params.rule_id");
    expect(segmentsPath("", [])).toBe("");
  });
});

describe("ProblemCollector", () => {
  it("collects in order up to its cap and answers a result", () => {
    const out = new ProblemCollector<"A" | "B">(2);
    expect(out.ok).toBe(true);
    expect(out.result(7)).toEqual({ ok: true, value: 7 });
    out.add("A", "first", "x");
    expect(out.fail("B", "second", null)).toBeUndefined();
    out.addAll([{ code: "A", message: "dropped", path: "" }]);
    expect(out.ok).toBe(false);
    expect(out.result(7)).toEqual({
      ok: false,
      errors: [
        { code: "A", message: "first", path: "x" },
        { code: "B", message: "second", path: null },
      ],
    });
  });

  it("isJsonObject accepts objects only", () => {
    expect([{}, { a: 1 }].map(isJsonObject)).toEqual([true, true]);
    expect([null, [], "x", 1, undefined].map(isJsonObject)).toEqual([false, false, false, false, false]);
  });
});
