/**
 * The rule body schemas published in the OpenAPI document (api/routes/rules/schema.ts
 * `ruleBodySchemas`, lib/rules/validate.ts `ruleSchemasFor`) describe what `validateRuleInput`
 * accepts: bodies generated from the schemas alone (test/support/schema-arbitrary.ts, the way an
 * independent client would) are all accepted, for one served chain and for served chains that are
 * not every combination of their fields. The same check against the document a running app serves
 * is in test/integration/rules-api/rules.test.ts.
 */
import fc from "fast-check";
import { Compile } from "typebox/compile";
import { describe, expect, it } from "vitest";
import { ruleBodySchemas } from "../../../../../api/routes/rules/schema.js";
import type { ChainId } from "../../../../../lib/config/index.js";
import { RULE_LIMITS, validateRuleInput } from "../../../../../lib/rules/validate.js";
import { type JsonSchema, schemaArbitrary } from "../../../../support/schema-arbitrary.js";

const MAINNET: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const AMOY: ChainId = { technology: "ethereum", blockchain: "polygon", network: "amoy" };

/** The schema as the OpenAPI document carries it (plain JSON). */
const json = (schema: unknown): JsonSchema => JSON.parse(JSON.stringify(schema));

describe("rule body schemas of the OpenAPI document", () => {
  for (const chains of [[MAINNET], [MAINNET, AMOY]]) {
    const label = chains.map((c) => c.network).join("+");
    const { create, update } = ruleBodySchemas(chains);

    for (const [method, mode, schema, numRuns] of [
      ["POST", "create", create, 150],
      ["PUT", "update", update, 100],
    ] as const) {
      it(`${method}: every body generated from the schema is accepted by validateRuleInput (${label})`, () => {
        fc.assert(
          fc.property(schemaArbitrary(json(schema)), (body) => {
            const res = validateRuleInput(body, mode, chains);
            if (!res.ok) throw new Error(`refused ${JSON.stringify(res.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
          }),
          { numRuns },
        );
      });
    }
  }

  it("limits the chain fields to the served chains (and their combinations)", () => {
    const one = json(ruleBodySchemas([MAINNET]).create) as { properties: Record<string, JsonSchema>; anyOf?: unknown };
    expect(one.properties.network?.enum).toEqual(["mainnet"]);
    expect(one.anyOf).toBeUndefined();
    const two = json(ruleBodySchemas([MAINNET, AMOY]).create) as { properties: Record<string, JsonSchema>; anyOf?: unknown[] };
    expect(two.properties.blockchain?.enum).toEqual(["ethereum", "polygon"]);
    expect(two.anyOf).toHaveLength(2); // ethereum/amoy and polygon/mainnet are not served
    // Both refuse a combination that is not served, and accept the served ones, also partially (PUT).
    const update = Compile(ruleBodySchemas([MAINNET, AMOY]).update);
    for (const [body, ok] of [
      [{ blockchain: "polygon", network: "mainnet" }, false],
      [{ technology: "ethereum", blockchain: "ethereum", network: "amoy" }, false],
      [{ network: "sepolia" }, false],
      [{ blockchain: "polygon", network: "amoy" }, true],
      [{ network: "mainnet" }, true],
      [{ name: "only a name" }, true],
    ] as const) {
      expect(validateRuleInput(body, "update", [MAINNET, AMOY]).ok, JSON.stringify(body)).toBe(ok);
      expect(update.Check(body), JSON.stringify(body)).toBe(ok);
    }
    expect(Compile(ruleBodySchemas([]).update).Check({ network: "mainnet" })).toBe(false);
  });

  it("carries every documented limit", () => {
    const create = json(ruleBodySchemas([MAINNET]).create);
    const text = JSON.stringify(create);
    expect(create.maxProperties).toBe(34);
    expect(create["x-chainsift-maxAdditionalProperties"]).toBe(RULE_LIMITS.extraPropertiesMax);
    expect(create["x-chainsift-maxAdditionalPropertiesBytes"]).toBe(RULE_LIMITS.extraPropertiesMaxBytes);
    expect(create["x-chainsift-maxBodyBytes"]).toBe(RULE_LIMITS.bodyMaxBytes);
    for (const key of [
      "nameMaxLength",
      "descriptionMaxLength",
      "definitionNameMaxLength",
      "valueMaxLength",
      "urlMaxLength",
      "emailMaxLength",
      "slackTextMaxLength",
      "slackNameMaxLength",
      "fieldNameMaxLength",
    ] as const) {
      expect(text, key).toContain(`"maxLength":${RULE_LIMITS[key]}`);
    }
    for (const n of [RULE_LIMITS.targetMapMax, RULE_LIMITS.alertsMax, RULE_LIMITS.payloadMax, RULE_LIMITS.recipientsMax]) {
      expect(text).toContain(`"maxItems":${n}`);
    }
  });
});
