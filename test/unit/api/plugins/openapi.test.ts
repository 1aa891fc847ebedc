/**
 * hoistComponents: named schemas (lib/validation/component.ts) become `components/schemas` entries
 * referenced with `$ref`, innermost first; one name with two different schemas gets a suffix.
 */
import { describe, expect, it } from "vitest";
import { hoistComponents } from "../../../../api/plugins/openapi.js";
import { COMPONENT_KEY } from "../../../../lib/validation/component.js";

describe("hoistComponents", () => {
  it("writes each named schema once and references it from every place, nested names too", () => {
    const item = { type: "object", properties: { a: { type: "string" } }, [COMPONENT_KEY]: "Item" };
    const list = { type: "array", items: item, [COMPONENT_KEY]: "List" };
    const doc = {
      paths: { "/x": { get: { responses: { 200: { schema: list } } } }, "/y": { post: { body: item, other: { type: "integer" } } } },
      components: { securitySchemes: { bearer: { type: "http" } } },
    };
    const out = hoistComponents(doc);
    expect(out.paths).toEqual({
      "/x": { get: { responses: { 200: { schema: { $ref: "#/components/schemas/List" } } } } },
      "/y": { post: { body: { $ref: "#/components/schemas/Item" }, other: { type: "integer" } } },
    });
    expect(out.components).toEqual({
      securitySchemes: { bearer: { type: "http" } },
      schemas: {
        Item: { type: "object", properties: { a: { type: "string" } } },
        List: { type: "array", items: { $ref: "#/components/schemas/Item" } },
      },
    });
    expect(JSON.stringify(doc)).toContain(COMPONENT_KEY); // the input is left as it was
  });

  it("two different schemas under one name: the second gets <name>_2", () => {
    const out = hoistComponents({
      paths: { a: { type: "string", [COMPONENT_KEY]: "X" }, b: { type: "integer", [COMPONENT_KEY]: "X" } },
    });
    expect(out.paths).toEqual({ a: { $ref: "#/components/schemas/X" }, b: { $ref: "#/components/schemas/X_2" } });
    expect(out.components?.schemas).toEqual({ X: { type: "string" }, X_2: { type: "integer" } });
  });
});
