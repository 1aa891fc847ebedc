/**
 * Builders of the alerting-rule pieces the tests and benchmarks write again and again (the wire
 * shapes of lib/rules/model.ts): the `args` Inspect condition on one decoded argument, the
 * "ERC-20 Transfer" target maps, and a whole {@link RuleInput} for "every Transfer of a token"
 * posting to one webhook. They only build plain objects; nothing is validated here.
 * @module
 */
import type { ChainId } from "../../lib/config/index.js";
import type { RuleInput, SecondLevelDefinition, TargetDefinition } from "../../lib/rules/model.js";

/** Options of {@link argIs}. */
export interface ArgIsOptions {
  /** Compare the argument's scaled value (`useScaledValue: true` on the value condition); default false (key absent). */
  useScaledValue?: boolean;
  /** Write `operatorParameters: null` on both inner conditions (the stored form of a rule); default false (key absent). */
  explicitNulls?: boolean;
}

/**
 * The `args` Inspect condition: one decoded argument named `name` whose value satisfies
 * `operator value` (the name compared with `Equals`).
 * @example argIs("value", "Greater", "1000", { useScaledValue: true }) // an ERC-20 amount above 1000 tokens
 */
export function argIs(
  name: string,
  operator: SecondLevelDefinition["operator"],
  value: string | string[],
  options: ArgIsOptions = {},
): TargetDefinition {
  const nulls = options.explicitNulls ? { operatorParameters: null } : {};
  return {
    name: "args",
    operator: "Inspect",
    operatorParameters: [
      { name: "name", operator: "Equals", value: name, ...nulls },
      { name: "value", operator, value, ...(options.useScaledValue ? { useScaledValue: true } : {}), ...nulls },
    ],
  };
}

/**
 * The `args` Inspect condition on the argument named `name` whose value object (`{hex, num,
 * scaled, type}`) satisfies every one of `conditions` (a nested Inspect, two levels deep).
 */
export function argValueInspect(name: string, conditions: SecondLevelDefinition["operatorParameters"]): TargetDefinition {
  return {
    name: "args",
    operator: "Inspect",
    operatorParameters: [
      { name: "name", operator: "Equals", value: name },
      { name: "value", operator: "Inspect", operatorParameters: conditions },
    ],
  };
}

/** `event Equals Transfer`, the first condition of every Transfer rule (a new object each call). */
export function isTransfer(): TargetDefinition {
  return { name: "event", operator: "Equals", value: "Transfer" };
}

/** Target map of the ERC-20 Transfer events whose `to` argument satisfies `operator to` (default `Equals (ignore case)`). */
export function transferTo(to: string, operator: SecondLevelDefinition["operator"] = "Equals (ignore case)"): TargetDefinition[] {
  return [isTransfer(), argIs("to", operator, to)];
}

/** Target map of the ERC-20 Transfer events of `token` whose scaled amount (`value`) is above `minTokens` (a decimal string). */
export function transferAbove(token: string, minTokens: string): TargetDefinition[] {
  return [
    isTransfer(),
    { name: "address", operator: "Equals (ignore case)", value: token },
    argIs("value", "Greater", minTokens, { useScaledValue: true }),
  ];
}

/** What {@link tokenTransferRule} builds a rule from. */
export interface TokenTransferRuleSpec {
  name: string;
  chain: ChainId;
  /** The token contract whose Transfer events match (compared ignoring case). */
  token: string;
  /** Confirmations before `confirmed`. */
  maxConfirmationCount: number;
  /** Send `pending` alerts before `confirmed`; default true. */
  sendPendingAlerts?: boolean;
  /** The Webhook (POST) URL (no payload items: `payload: null`). */
  url: string;
  /** Only the transfers to this address (compared ignoring case); default every transfer. */
  to?: string;
}

/**
 * An enabled {@link RuleInput} in its stored form (`operatorParameters: null` on every leaf
 * condition): the Transfer events of one token, optionally only to one address, posted to one
 * webhook.
 */
export function tokenTransferRule(spec: TokenTransferRuleSpec): RuleInput {
  const targetMap: TargetDefinition[] = [
    { ...isTransfer(), operatorParameters: null },
    { name: "address", operator: "Equals (ignore case)", value: spec.token, operatorParameters: null },
  ];
  if (spec.to !== undefined) targetMap.push(argIs("to", "Equals (ignore case)", spec.to, { explicitNulls: true }));
  return {
    name: spec.name,
    maxConfirmationCount: spec.maxConfirmationCount,
    sendPendingAlerts: spec.sendPendingAlerts ?? true,
    state: "enabled",
    ...spec.chain,
    config: {
      targetType: "Event",
      targetMap,
      alerts: [{ type: "Webhook (POST)", parameters: { url: spec.url }, payload: null }],
    },
  };
}

/**
 * An absence rule over {@link tokenTransferRule}: "no transfer to `to` for `blocks` blocks", 2
 * confirmations, no `pending` alerts (so a retracted silence sends nothing).
 */
export function absenceTransferRule(
  spec: Omit<TokenTransferRuleSpec, "name" | "maxConfirmationCount" | "sendPendingAlerts"> & { to: string; blocks: number },
): RuleInput & { absence: { blocks: number } } {
  const { blocks, ...rest } = spec;
  const name = `no transfer to one address for ${blocks} blocks`;
  return { ...tokenTransferRule({ ...rest, name, maxConfirmationCount: 2, sendPendingAlerts: false }), absence: { blocks } };
}

/**
 * A sequence {@link RuleInput} (issue 33): a Transfer event to an address (`config`, correlate
 * `args.to`) followed by an Approval event by that address (`sequence.followedBy`, correlate
 * `args.owner`) within `within` (`{blocks}` or `{seconds}`), posted to one webhook, maxConfirmationCount 0.
 * @param extra - top-level members to set or override (e.g. `maxConfirmationCount`).
 */
export function transferThenApprovalRule(
  chain: ChainId,
  within: { blocks: number } | { seconds: number },
  extra: Partial<RuleInput> = {},
): RuleInput {
  return {
    name: "transfer then approval",
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    state: "enabled",
    ...chain,
    config: {
      targetType: "Event",
      targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/s" } }],
    },
    sequence: {
      followedBy: { targetType: "Event", targetMap: [{ name: "event", operator: "Equals", value: "Approval" }] },
      within,
      correlate: { first: "args.to", followedBy: "args.owner" },
    },
    ...extra,
  } as RuleInput;
}
