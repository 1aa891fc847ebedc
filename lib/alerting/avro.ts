/**
 * The alert's Avro record (topic `<chain>.alerts`, schema `alertSchema` in `topics/schemas.ts`),
 * derived from {@link Alert}: the same fields, with the parts whose shape depends on the rule and
 * the target type (`payload`, `entity`, `actions`) carried as JSON strings (`payloadJson`, …).
 * The match stage produces it; the notify stage consumes it and keeps it, byte for byte, in its
 * delivery jobs (for dead letters).
 * @module
 */
import { NonRetryableError } from "../errors.js";
import type { TargetType } from "../rules/model.js";
import type { Alert, ReplacingBlock } from "./alert.js";

/** The parts of an {@link Alert} that travel as JSON strings. */
type JsonParts = "payload" | "entity" | "actions";

/** The Avro record of an {@link Alert}. */
export type AlertAvro = Omit<Alert, JsonParts | "ruleName" | "targetType" | "replacedBy"> & {
  /** Always present on the wire; null when unknown. */
  ruleName: string | null;
  /** Always present on the wire (a field added with default null: older records read as null); null when absent. */
  replacedBy?: ReplacingBlock | null;
  /** An Avro string; {@link alertFromAvro} reads it as a target type. */
  targetType: string;
} & { [K in JsonParts as `${K}Json`]: string };

/** {@link Alert} → its Avro record (pure). */
export function alertToAvro(alert: Alert): AlertAvro {
  const { payload, entity, actions, ruleName, replacedBy, ...plain } = alert;
  return {
    ...plain,
    ruleName: ruleName ?? null,
    replacedBy: replacedBy ?? null,
    payloadJson: JSON.stringify(payload),
    entityJson: JSON.stringify(entity),
    actionsJson: JSON.stringify(actions),
  };
}

/**
 * Avro record → {@link Alert} (pure). `sequence` and `blockNumber` (Avro longs) become numbers; a
 * null `replacedBy` is left out (as on alerts that never had one).
 * @throws {NonRetryableError} `CS_ALERT_MALFORMED` when a JSON part does not parse.
 */
export function alertFromAvro(record: AlertAvro): Alert {
  const { payloadJson, entityJson, actionsJson, replacedBy, ...plain } = record;
  try {
    return {
      ...plain,
      ...(replacedBy ? { replacedBy: { number: Number(replacedBy.number), hash: replacedBy.hash ?? null } } : {}),
      sequence: Number(record.sequence),
      targetType: record.targetType as TargetType,
      blockNumber: Number(record.blockNumber),
      payload: JSON.parse(payloadJson) as Alert["payload"],
      entity: JSON.parse(entityJson) as Alert["entity"],
      actions: JSON.parse(actionsJson) as Alert["actions"],
    };
  } catch (err) {
    throw new NonRetryableError("CS_ALERT_MALFORMED", `alert ${record.id}: ${(err as Error).message}`, { cause: err });
  }
}
