/**
 * console/src/rule-model.ts `ruleBody` (what the rule form sends) and console/build.ts `apiExamples`
 * (the docs/api.md examples the editor offers): pure functions.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { apiExamples } from "../../../console/build.js";
import { newRule, type RuleDraft, ruleBody } from "../../../console/src/rule-model.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };

describe("ruleBody", () => {
  it("drops the service's fields and empty values, keeps Inspect levels and useScaledValue at level 2", () => {
    const d: RuleDraft = {
      ...newRule(chain),
      id: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
      version: 3,
      accountId: "static",
      createdAt: "2026-01-01T00:00:00.000Z",
      name: "r",
      config: {
        targetType: "Event",
        targetMap: [
          { name: "to", operator: "Equals", value: "" },
          {
            name: "args",
            operator: "Inspect",
            value: "ignored",
            operatorParameters: [
              { name: "name", operator: "Equals any", value: ["value", "amount"] },
              { name: "value", operator: "Greater", value: "1", useScaledValue: true },
            ],
          },
        ],
        alerts: [{ type: "Email", parameters: { recipients: ["a@example.com"], subject: "" }, payload: [] }],
      },
    };
    const body = ruleBody(d);
    expect(body).not.toHaveProperty("id");
    expect(body).not.toHaveProperty("accountId");
    expect(body).not.toHaveProperty("createdAt");
    expect(body.version).toBe(3);
    expect(body.description).toBeNull();
    expect(body.config).toEqual({
      targetType: "Event",
      targetMap: [
        { name: "to", operator: "Equals" },
        {
          name: "args",
          operator: "Inspect",
          operatorParameters: [
            { name: "name", operator: "Equals any", value: ["value", "amount"] },
            { name: "value", operator: "Greater", value: "1", useScaledValue: true },
          ],
        },
      ],
      alerts: [{ type: "Email", parameters: { recipients: ["a@example.com"] } }],
    });
  });

  it("sends no version for a new rule and confirmOn only when set", () => {
    const body = ruleBody({ ...newRule(chain), name: "n" });
    expect(body).not.toHaveProperty("version");
    expect(body).not.toHaveProperty("confirmOn");
    expect(ruleBody({ ...newRule(chain), confirmOn: "finalized" }).confirmOn).toBe("finalized");
  });
});

describe("apiExamples", () => {
  it("finds the POST search examples of docs/api.md with their kinds and JSON bodies", () => {
    const md = readFileSync(join(import.meta.dirname, "../../../docs/api.md"), "utf8");
    const examples = apiExamples(md);
    const curlPosts = (md.slice(md.indexOf("### Examples"), md.indexOf("## Response: the hits envelope")).match(/-X POST "\$BASE\//g) ?? [])
      .length;
    expect(examples.length).toBe(curlPosts);
    for (const ex of examples) {
      expect(ex.title).not.toBe("");
      expect(ex.kinds).toMatch(/^[a-z]+(,[a-z]+)*$/);
      if (ex.body !== null) expect(() => JSON.parse(ex.body?.replaceAll("…", "") ?? "")).not.toThrow();
    }
    expect(examples.some((e) => e.kinds === "block,tx")).toBe(true);
    expect(examples.some((e) => e.body === null)).toBe(true);
  });
});
