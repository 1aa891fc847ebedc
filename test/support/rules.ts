/**
 * Builders of the alerting-rule pieces the tests and benchmarks write again and again (the wire
 * shapes of lib/rules/model.ts): the `args` Inspect condition on one decoded argument, the
 * "ERC-20 Transfer" target maps, a whole {@link RuleInput} for "every Transfer of a token"
 * posting to one webhook, a stored {@link Rule} as the match stage holds it, and the minimal
 * rule and saved-search request bodies of the validation tests. They only build plain objects;
 * nothing is validated here.
 * @module
 */
import type { ChainId } from "../../lib/config/index.js";
import type { Rule, RuleConfig, RuleInput, SecondLevelDefinition, TargetDefinition } from "../../lib/rules/model.js";

/** Ethereum mainnet, the default chain of {@link storedRule}, {@link ruleBody} and {@link searchBody}. */
export const MAINNET_CHAIN = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" } as const;

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

/** What {@link storedRule} takes: members of a {@link Rule} to set, `config` merged into the default config. */
export type StoredRuleOverrides = { [K in keyof Rule as K extends "config" ? never : K]?: Rule[K] } & { config?: Partial<RuleConfig> };

/**
 * A stored {@link Rule} as the match stage holds it: id `r-1` (also its name unless `name` is
 * given), account `acct-1`, version 1, enabled, pending alerts sent, 5 confirmations, on
 * {@link MAINNET_CHAIN}, created and updated 2024-01-01; its config selects `event Equals Transfer`
 * Events and posts to one webhook (`http://hook/x`, `payload: null`).
 * @param overrides - members to set (e.g. `window`, `sequence`); `config` members replace the
 *   default config's (`targetType`, `targetMap`, `alerts`).
 * @example storedRule({ id: "r-w", window: { blocks: 2, aggregate: { fn: "count" }, operator: "Greater", threshold: "1" } })
 */
export function storedRule(overrides: StoredRuleOverrides = {}): Rule {
  const { config, ...rest } = overrides;
  const id = rest.id ?? "r-1";
  return {
    id,
    accountId: "acct-1",
    name: id,
    version: 1,
    state: "enabled",
    sendPendingAlerts: true,
    description: null,
    maxConfirmationCount: 5,
    ...MAINNET_CHAIN,
    createdAt: "2024-01-01T00:00:00.000Z",
    updatedAt: "2024-01-01T00:00:00.000Z",
    ...rest,
    config: {
      targetType: "Event",
      targetMap: [isTransfer()],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "http://hook/x" }, payload: null }],
      ...config,
    },
  };
}

/**
 * The body of a minimal rule (`POST /alerting/rules/`, or `rule` of a backtest) on
 * {@link MAINNET_CHAIN}: name `r`, no confirmations, `event Equals Transfer` Events, one webhook
 * (`https://example.com/hook`), plus `extra` members.
 */
export function ruleBody(extra: Record<string, unknown> = {}) {
  return {
    name: "r",
    maxConfirmationCount: 0,
    ...MAINNET_CHAIN,
    config: { targetType: "Event", targetMap: [isTransfer()], alerts: exampleHook() },
    ...extra,
  };
}

/**
 * The body of a minimal saved search (`POST /alerting/searches/`) on {@link MAINNET_CHAIN}: name
 * `s`, no confirmations, kind `event`, `match_all`, one webhook (`https://example.com/hook`), plus
 * `extra` members.
 */
export function searchBody(extra: Record<string, unknown> = {}) {
  return { name: "s", maxConfirmationCount: 0, ...MAINNET_CHAIN, kind: "event", query: { match_all: {} }, alerts: exampleHook(), ...extra };
}

/** The alert definitions of {@link ruleBody} and {@link searchBody}: one webhook POST to `https://example.com/hook`. */
function exampleHook() {
  return [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
}
