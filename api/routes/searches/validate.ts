/**
 * Validation of saved-search bodies (`POST`/`PUT /alerting/searches/`, docs/rules.md "Saved
 * searches"). A body is a rule's top-level fields (name, description, state, technology,
 * blockchain, network, maxConfirmationCount, sendPendingAlerts, version, additional properties such
 * as `confirmOn`) plus `kind`, `query` and `alerts` in place of `config`:
 * - the rule fields and `alerts` are checked by the rules' own validator (`validateRuleInput`, with
 *   `alerts` as `config.alerts`), so they answer the same `CS_RULE_*` codes, with paths `alerts[…]`;
 * - `kind` must be one of {@link SEARCH_KINDS} (`CS_SEARCH_KIND`);
 * - `query` goes through the search API's allowlist and the evaluator (`compileSearchQuery`):
 *   `CS_QUERY_*` and `CS_SEARCH_INEXACT`, paths `query…`;
 * - `window` and `absence` (beside the query, as beside a rule's `config`) by the rules' validator
 *   too: the same `CS_RULE_WINDOW_TOO_LARGE`, `CS_RULE_AGGREGATE_NOT_NUMERIC`,
 *   `CS_RULE_GROUPBY_CARDINALITY`, `CS_RULE_INVALID` codes, paths `window…`, `absence…`;
 *   `stateCondition` is refused (`CS_RULE_NOT_SUPPORTED`);
 * - `sequence` (its second step a second search query) by ./validate-sequence.ts, paths `sequence…`.
 * @module
 */
import type { ChainId } from "../../../lib/config/index.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import { stateNotSupported } from "../../../lib/rules/schema-state.js";
import { validateRuleInput } from "../../../lib/rules/validate.js";
import { SEARCH_KINDS, type SearchConfig, type StoredSearch } from "../../../lib/searches/model.js";
import { isJsonObject } from "../../../lib/validation/problems.js";
import { compileSearchQuery } from "../../dsl/saved-search.js";
import type { ApiErrorDetail, ErrorCode } from "../../errors.js";
import { ruleValidationDetails } from "../rules/errors.js";
import { checkSearchSequence } from "./validate-sequence.js";

/** Service-added fields of a saved search, ignored in a body (so a fetched search can be PUT back). */
const IGNORED = ["esQuery", "config"] as const;

/** A checked body: the rule-store document (create) or patch (update) to write. */
export type SearchWrite = { ok: true; value: Record<string, unknown> } | { ok: false; errors: ApiErrorDetail[] };

/** `config.alerts…` (the rule validator's paths) → `alerts…`; `config` → `alerts`. */
function searchPath(path: string | null): string | null {
  if (path === null) return null;
  if (path.startsWith("config.alerts")) return path.slice("config.".length);
  return path === "config" ? "alerts" : path;
}

/**
 * Checks a saved-search body.
 * @param body - the parsed JSON body.
 * @param mode - `create` (POST: name, maxConfirmationCount, technology, blockchain, network, kind, query, alerts required) or `update` (PUT: any subset).
 * @param chains - the chains served.
 * @param stored - on update, the stored search (its kind, query and alerts complete the patch's `config`).
 * @returns the document to store (create) or the patch (update; `config` whole when kind, query or alerts change), or every problem.
 */
export function validateSearchInput(
  body: unknown,
  mode: "create" | "update",
  chains: readonly ChainId[],
  stored?: StoredSearch,
): SearchWrite {
  if (!isJsonObject(body)) {
    return { ok: false, errors: [{ code: "CS_RULE_INVALID", message: "a saved search must be a JSON object", path: null }] };
  }
  const { kind, query, alerts, sequence, ...rest } = body;
  for (const k of IGNORED) delete rest[k];
  const errors: ApiErrorDetail[] = [];
  const touchesConfig = mode === "create" || kind !== undefined || query !== undefined || alerts !== undefined;
  // The rule fields and the alerts, by the rules' validator (a stand-in target map it always accepts).
  const ruleBody: Record<string, unknown> = { ...rest };
  if (touchesConfig) {
    ruleBody.config = {
      targetType: "Event",
      targetMap: [{ name: "event", operator: "Equals", value: "x" }],
      ...(alerts !== undefined ? { alerts } : mode === "update" ? { alerts: stored?.config.alerts } : {}),
    };
  }
  const checked = validateRuleInput(ruleBody, mode, chains);
  if (!checked.ok) for (const d of ruleValidationDetails(checked.errors)) errors.push({ ...d, path: searchPath(d.path) });
  else for (const e of stateNotSupported(ruleBody, "saved searches")) errors.push({ code: e.code, message: e.message, path: e.path });
  const seq = checkSearchSequence(sequence, {
    window: rest.window !== undefined ? rest.window : stored?.window,
    absence: rest.absence !== undefined ? rest.absence : stored?.absence,
  });
  if (!seq.ok) errors.push(...seq.errors);
  const added = (["window", "absence"] as const).find((k) => rest[k] !== undefined && rest[k] !== null);
  if (sequence === undefined && stored?.sequence && added)
    errors.push({
      code: "CS_RULE_INVALID",
      path: added,
      message: `${added}: the saved search has a sequence (set sequence to null to replace it)`,
    });
  const effectiveKind = kind ?? stored?.config.kind;
  if (mode === "create" && kind === undefined)
    errors.push({ code: "CS_SEARCH_KIND", message: `kind is required: one of ${SEARCH_KINDS.join(", ")}`, path: "kind" });
  else if (!(SEARCH_KINDS as readonly unknown[]).includes(effectiveKind)) {
    errors.push({ code: "CS_SEARCH_KIND", message: `kind must be one of ${SEARCH_KINDS.join(", ")}`, path: "kind" });
  }
  let config: SearchConfig | undefined;
  if (mode === "create" && query === undefined) {
    errors.push({
      code: "CS_QUERY_INVALID",
      message: 'query is required (the search DSL; {"match_all": {}} for every record)',
      path: "query",
    });
  } else if (touchesConfig && (SEARCH_KINDS as readonly unknown[]).includes(effectiveKind)) {
    const q = query ?? stored?.config.query;
    const compiled = compileSearchQuery(q, effectiveKind as SearchConfig["kind"], "query");
    if (!compiled.ok) for (const e of compiled.errors) errors.push({ code: e.code as ErrorCode, message: e.message, path: e.path });
    else if (!isJsonObject(q)) errors.push({ code: "CS_QUERY_INVALID", message: "query must be an object", path: "query" });
    else {
      config = {
        kind: effectiveKind as SearchConfig["kind"],
        query: q,
        esQuery: compiled.value.query ?? null,
        alerts: ((alerts ?? stored?.config.alerts) as SearchConfig["alerts"]) ?? [],
      };
    }
  }
  if (errors.length > 0 || !checked.ok) return { ok: false, errors };
  const value: Record<string, unknown> = { ...(checked.value as RuleInput) };
  delete value.config;
  if (config) value.config = config;
  if (seq.ok && seq.value !== undefined) value.sequence = seq.value;
  return { ok: true, value };
}
