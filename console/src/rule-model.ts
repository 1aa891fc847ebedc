/**
 * The rule the form edits, in the API's own shape (docs/rules.md): the form reads and writes these
 * objects, and {@link ruleBody} is exactly what `POST /alerting/rules/` (or the backtest) is sent.
 * @module
 */

import type { AlertType, Operator, TargetType } from "../../lib/rules/model.js";

/**
 * The members of a string union in the order the record lists them. The record's type is
 * `Record<T, true>`, so the compiler rejects a list that misses a member of the service's union or
 * names one it does not have: the console cannot import the service's value lists (the import rules
 * allow types only), and this keeps its copies from drifting.
 */
function membersOf<T extends string>(members: Record<T, true>): readonly T[] {
  return Object.keys(members) as T[];
}

/** The operators of a target definition (docs/rules.md "Target definitions"), in the form's order. */
export const OPERATORS = membersOf<Operator>({
  Equals: true,
  "Equals (ignore case)": true,
  "Equals any": true,
  "Equals any (ignore case)": true,
  Greater: true,
  "Greater or Equal": true,
  Less: true,
  "Less or Equal": true,
  Inspect: true,
  "In watchlist": true,
});

/** The target types of a rule's config. */
export const TARGET_TYPES = membersOf<TargetType>({
  Event: true,
  Log: true,
  Transaction: true,
  Call: true,
  Contract: true,
  Token: true,
  Trace: true,
  Method: true,
});

/** The alert (action) types. */
export const ALERT_TYPES = membersOf<AlertType>({
  "Webhook (POST)": true,
  "Webhook (GET)": true,
  Slack: true,
  Email: true,
  Discord: true,
  Telegram: true,
  PagerDuty: true,
  Opsgenie: true,
  Teams: true,
  Kafka: true,
});

/** A target definition at any of the three levels. */
export interface Condition {
  name: string;
  operator: string;
  value?: string | string[] | null;
  useScaledValue?: boolean;
  operatorParameters?: Condition[] | null;
}

/** A payload item (levels 1 and 2 in the form). */
export interface PayloadItem {
  fieldType: "Field" | "Sub Field";
  fieldName: string;
  subPayloads?: PayloadItem[] | null;
}

/** An alert definition. */
export interface Action {
  type: string;
  parameters: Record<string, unknown>;
  payload?: PayloadItem[] | null;
  throttle?: { max: number; windowSec: number } | false;
  digest?: { windowSec: number; maxEntities?: number };
}

/** A rule as the form holds it (the service's fields `id`, `version`, … kept when editing). */
export interface RuleDraft {
  id?: string;
  version?: number;
  name: string;
  description?: string | null;
  technology: string;
  blockchain: string;
  network: string;
  maxConfirmationCount: number;
  confirmOn?: "finalized";
  sendPendingAlerts: boolean;
  state: "enabled" | "disabled";
  config: { targetType: string; targetMap: Condition[]; alerts: Action[] };
  [extra: string]: unknown;
}

/** Whether an operator takes an array of values. */
export const takesList = (operator: string): boolean => operator.startsWith("Equals any");

/** A new, empty condition. */
export const newCondition = (): Condition => ({ name: "", operator: "Equals", value: "" });

/** A new Webhook (POST) action. */
export const newAction = (): Action => ({ type: "Webhook (POST)", parameters: { url: "" } });

/** The parameters a fresh action of a type starts with (required ones empty). */
export function parametersFor(type: string): Record<string, unknown> {
  switch (type) {
    case "Slack":
      return { url: "", text: "", channel: "", username: "" };
    case "Email":
      return { recipients: [] };
    case "Telegram":
      return { chatId: "" };
    case "PagerDuty":
      return { routingKey: "" };
    case "Opsgenie":
      return { apiKey: "" };
    case "Kafka":
      return { brokers: [], topic: "" };
    default:
      return { url: "" };
  }
}

/** A new rule on a chain. */
export function newRule(chain: { technology: string; blockchain: string; network: string }): RuleDraft {
  return {
    name: "",
    description: null,
    technology: chain.technology,
    blockchain: chain.blockchain,
    network: chain.network,
    maxConfirmationCount: 1,
    sendPendingAlerts: false,
    state: "enabled",
    config: { targetType: "Event", targetMap: [newCondition()], alerts: [newAction()] },
  };
}

function cleanCondition(c: Condition, level: number): Condition {
  const out: Condition = { name: c.name, operator: c.operator };
  if (c.operator === "Inspect") {
    out.operatorParameters = (c.operatorParameters ?? []).map((p) => cleanCondition(p, level + 1));
    return out;
  }
  const v = c.value;
  const empty = v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
  if (!empty) out.value = takesList(c.operator) ? (Array.isArray(v) ? v : [String(v)]) : Array.isArray(v) ? v.join(",") : v;
  else if (level === 3) out.value = "";
  if (level === 2 && c.useScaledValue) out.useScaledValue = true;
  return out;
}

function cleanParameters(p: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) if (v !== "" && v !== undefined && v !== null) out[k] = v;
  return out;
}

function cleanPayload(items: PayloadItem[]): PayloadItem[] {
  return items.map((i) =>
    i.fieldType === "Sub Field"
      ? { fieldType: i.fieldType, fieldName: i.fieldName, subPayloads: cleanPayload(i.subPayloads ?? []) }
      : { fieldType: i.fieldType, fieldName: i.fieldName },
  );
}

/**
 * The body the form sends: the draft without the service's fields, conditions without empty values
 * (an equality without value means "has no value", docs/rules.md), empty optional parameters dropped.
 */
export function ruleBody(d: RuleDraft): Record<string, unknown> {
  const { id: _id, accountId: _a, createdAt: _c, updatedAt: _u, warnings: _w, version, ...rest } = d;
  const body: Record<string, unknown> = { ...rest };
  if (d.id && version !== undefined) body.version = version;
  if (!d.description) body.description = null;
  if (d.confirmOn !== "finalized") delete body.confirmOn;
  body.config = {
    targetType: d.config.targetType,
    targetMap: d.config.targetMap.map((c) => cleanCondition(c, 1)),
    alerts: d.config.alerts.map((a) => {
      const out: Action = { ...a, parameters: cleanParameters(a.parameters) };
      if (a.payload && a.payload.length > 0) out.payload = cleanPayload(a.payload);
      else delete out.payload;
      if (a.throttle === undefined) delete out.throttle;
      if (a.digest === undefined) delete out.digest;
      return out;
    }),
  };
  return body;
}
