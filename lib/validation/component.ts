/**
 * Names for shared JSON Schemas in the API's OpenAPI document. A schema carrying
 * `"x-component": "<Name>"` (an annotation: validators ignore it) is written once under
 * `components/schemas/<Name>` and referenced with `$ref` wherever it is used (api/plugins/openapi.ts
 * `hoistComponents`), so clients generated from the document get one model per named schema
 * instead of one per place it appears.
 * @module
 */

/** The annotation keyword that names a shared schema. */
export const COMPONENT_KEY = "x-component";

/**
 * The schema option that names a shared schema, to spread into TypeBox options:
 * `Type.Object({...}, { ...component("Rule"), description })`.
 * @param name - the name under `components/schemas` (a valid OpenAPI component name: letters, digits, `.`, `_`, `-`).
 */
export function component(name: string): { [COMPONENT_KEY]: string } {
  return { [COMPONENT_KEY]: name };
}
