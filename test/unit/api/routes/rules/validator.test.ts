/**
 * The rules routes' validator compiler (api/routes/rules/index.ts `rulesValidatorCompiler`): bodies
 * unchecked, params and query strings checked against their schema after a strict conversion.
 */
import { describe, expect, it } from "vitest";
import { rulesValidatorCompiler } from "../../../../../api/routes/rules/index.js";
import { DeliveryListQuery, RuleListQuery, RuleParams } from "../../../../../api/routes/rules/schema.js";

type Validate = (value: unknown) => { value?: unknown; error?: Array<{ instancePath: string }> } | boolean;
const compile = (schema: unknown, httpPart: string) =>
  rulesValidatorCompiler({ schema, httpPart, method: "GET", url: "/" } as never) as unknown as Validate;

describe("rulesValidatorCompiler", () => {
  it("lets every body through", () => {
    expect(compile(RuleParams, "body")({ anything: [1] })).toBe(true);
  });

  it("converts decimal digits for integers, drops empty values, converts nothing else", () => {
    const list = compile(RuleListQuery, "querystring");
    expect(list({ limit: "500", cursor: "abc" })).toEqual({ value: { limit: 500, cursor: "abc" } });
    expect(list({ limit: "", cursor: "" })).toEqual({ value: {} });
    for (const limit of ["0", "501", "1.5", "-1", "1e2", " 5", "+5", "abc", ["1", "2"]]) {
      expect((list({ limit }) as { error: Array<{ instancePath: string }> }).error[0]?.instancePath, String(limit)).toBe("/limit");
    }
    expect((list({ cursor: ["a", "b"] }) as { error: unknown[] }).error).toHaveLength(1);
    const deliveries = compile(DeliveryListQuery, "querystring");
    expect(deliveries({ limit: "1000", offset: "0" })).toEqual({ value: { limit: 1000, offset: 0 } });
    expect((deliveries({ offset: "-1" }) as { error: Array<{ instancePath: string }> }).error[0]?.instancePath).toBe("/offset");
  });

  it("checks :rule_id is a UUID (either case)", () => {
    const params = compile(RuleParams, "params");
    expect(params({ rule_id: "6F1C2C1E-1B1A-4C1A-9C1A-1A1A1A1A1A1A" })).toEqual({
      value: { rule_id: "6F1C2C1E-1B1A-4C1A-9C1A-1A1A1A1A1A1A" },
    });
    for (const rule_id of ["123", "", "urn:uuid:6f1c2c1e-1b1a-4c1a-9c1a-1a1a1a1a1a1a", "00000000-0000-0000-0000-00000000000g"]) {
      expect((params({ rule_id }) as { error: unknown[] }).error.length, rule_id).toBeGreaterThan(0);
    }
  });
});
