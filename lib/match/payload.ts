/**
 * Payload selection: which properties of a matched entity travel with an alert (contract
 * "Payload item"). Pure.
 * @module
 */
import type { PayloadItem, Rule, SubPayloadItem, TargetType } from "../rules/model.js";
import { targetTable } from "./targets.js";
import { readPath } from "./values.js";

/**
 * The payload sent when a rule's alert definitions name no payload items: the key fields of each
 * target type (attribute names as in docs/alerting-match.md). Missing attributes are sent as null.
 * Derived from `lib/match/targets.ts` (`TargetDescriptor.defaultPayload`).
 */
export const DEFAULT_PAYLOAD_FIELDS: Readonly<Record<TargetType, readonly string[]>> = targetTable((t) => t.defaultPayload);

type AnyItem = PayloadItem | SubPayloadItem | { fieldType: "Field"; fieldName: string; subPayloads?: null };

function read(source: unknown, fieldName: string): unknown {
  const v = readPath(source, fieldName.split("."));
  return v === undefined ? null : v;
}

function selectInto(out: Record<string, unknown>, items: readonly AnyItem[], source: unknown): void {
  for (const item of items) {
    if (!item || typeof item.fieldName !== "string") continue;
    const v = read(source, item.fieldName);
    const subs = item.fieldType === "Sub Field" ? (item as PayloadItem).subPayloads : null;
    if (!subs || subs.length === 0) {
      out[item.fieldName] = v;
      continue;
    }
    if (Array.isArray(v)) {
      out[item.fieldName] = v.map((el) => {
        const o: Record<string, unknown> = {};
        selectInto(o, subs as AnyItem[], el);
        return o;
      });
    } else if (v !== null && typeof v === "object") {
      const o: Record<string, unknown> = {};
      selectInto(o, subs as AnyItem[], v);
      out[item.fieldName] = o;
    } else {
      out[item.fieldName] = null;
    }
  }
}

/** Default payload of a saved search's `Block` alerts (docs/rules.md, "Saved searches"). */
export const BLOCK_PAYLOAD_FIELDS: readonly string[] = ["hash", "number", "timestamp", "miner", "transactionCount"];

/**
 * Selects the payload of an alert from the matched entity.
 *
 * - `Field`: `payload[fieldName] = entity[fieldName]` (a dotted name reads a nested property and is
 *   kept as the key, e.g. `blockNumber.num`).
 * - `Sub Field`: steps into `entity[fieldName]` and selects its `subPayloads` there; when the
 *   property is an array, the selection is applied to every element (an array of objects results);
 *   when it is neither an object nor an array, the result is null. A Sub Field without subPayloads
 *   selects the whole property.
 * - Missing properties are null. Values are the entity's (not copies).
 * - No items (null, undefined or empty): the default payload of `targetType`
 *   ({@link DEFAULT_PAYLOAD_FIELDS}), or `{}` when no target type is given.
 * @example selectPayload([{fieldType: "Sub Field", fieldName: "args", subPayloads: [{fieldType: "Field", fieldName: "name"}]}], ev)
 *   // { args: [{name: "from"}, {name: "to"}, {name: "value"}] }
 */
export function selectPayload(
  payloadItems: readonly PayloadItem[] | null | undefined,
  entity: object,
  targetType?: TargetType,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (payloadItems && payloadItems.length > 0) {
    selectInto(out, payloadItems, entity);
    return out;
  }
  // A saved search over blocks alerts with targetType `Block` (lib/searches/model.ts), which is not a rule target type.
  if (targetType) for (const f of DEFAULT_PAYLOAD_FIELDS[targetType] ?? BLOCK_PAYLOAD_FIELDS) out[f] = read(entity, f);
  return out;
}

/**
 * The payload of an alert record for a rule: the union of the selections of all its alert
 * definitions' payload items (later definitions win on equal names), or the default payload of
 * the target type when no definition names any item. Actions that need exactly their own selection
 * call {@link selectPayload} with their `payload` and the alert's `entity`.
 */
export function rulePayload(rule: Pick<Rule, "config">, entity: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let any = false;
  for (const a of rule.config.alerts ?? []) {
    if (a.payload && a.payload.length > 0) {
      any = true;
      Object.assign(out, selectPayload(a.payload, entity));
    }
  }
  return any ? out : selectPayload(null, entity, rule.config.targetType);
}
