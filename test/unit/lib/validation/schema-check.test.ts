import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import { checkAgainstSchema } from "../../../../lib/validation/schema-check.js";

describe("checkAgainstSchema: unions resolved by JSON type", () => {
  const Kind = Type.Union([Type.Literal("event"), Type.Literal("function"), Type.Literal("error")]);
  const Entry = Type.Object({ type: Kind, size: Type.Integer({ minimum: 0 }) });

  it("a value equal to a later literal of a union is no problem (only the real one is reported)", () => {
    expect(checkAgainstSchema({ type: "error", size: 1 }, Entry)).toEqual([]);
    expect(checkAgainstSchema({ type: "function", size: -1 }, Entry).map((i) => [i.keyword, i.path])).toEqual([["minimum", "size"]]);
  });

  it("a value that is none of the literals gets one enum problem listing them all", () => {
    const issues = checkAgainstSchema({ type: "constructor", size: 1 }, Entry);
    expect(issues.map((i) => [i.keyword, i.path])).toEqual([["enum", "type"]]);
    expect(issues[0]?.message).toContain("event");
    expect(issues[0]?.message).toContain("error");
  });

  it("a value of no branch's JSON type is an anyOf problem", () => {
    expect(checkAgainstSchema({ type: 7, size: 1 }, Entry).map((i) => i.keyword)).toEqual(["anyOf"]);
  });
});
