/**
 * The rule routes' resolution of a view-call state subject without an inline `abi` (docs/rules.md,
 * "State conditions"): the function is looked up in the ABI registered for the call's `to` address
 * (lib/abis: the caller's own registration first, then the global one), and its JSON fragment is
 * copied into the stored rule as `abi`, so the match stage reads with the ABI the rule was saved with
 * (a later re-registration changes no saved rule: PUT the rule again to pick it up). No registration,
 * or none with a `view`/`pure` function of that name, answers `400 CS_RULE_STATE_ABI_UNKNOWN` at
 * `stateCondition.subject.function`, so a rule never stores a call it cannot encode.
 * @module
 */
import { GLOBAL_NAMESPACE } from "../../../lib/abis/model.js";
import type { AbiEntry } from "../../../lib/abis/schema.js";
import type { AbiStore } from "../../../lib/abis/store.js";
import { ApiError } from "../../errors.js";

/** What {@link resolveStateAbi} needs of the ABI registry. */
export type AbiLookup = Pick<AbiStore, "get">;

/** A function entry a state read can call: a `view` or `pure` function (or an old-style `constant` one) named `name`. */
function viewFunctions(abi: readonly AbiEntry[], name: string): AbiEntry[] {
  return abi.filter(
    (e) =>
      e.type === "function" && e.name === name && (e.stateMutability === "view" || e.stateMutability === "pure" || e.constant === true),
  );
}

/**
 * Fills `stateCondition.subject.abi` of a checked rule body (create, or an update that carries a
 * `stateCondition`) from the registry when the subject is a `call` without `abi`. Changes `body` in place.
 * @param store - the ABI registry (`get`).
 * @param accountId - the caller: its namespace is looked up before `global`.
 * @param body - a body that passed `validateRuleInput`.
 * @throws {ApiError} `CS_RULE_STATE_ABI_UNKNOWN` when neither registration has such a function.
 */
export async function resolveStateAbi(store: AbiLookup, accountId: string, body: object): Promise<void> {
  const subject = ((body as { stateCondition?: unknown }).stateCondition as { subject?: Record<string, unknown> } | null | undefined)
    ?.subject;
  if (subject?.type !== "call" || subject.abi !== undefined) return;
  const to = String(subject.to).toLowerCase();
  const name = String(subject.function);
  for (const namespace of [accountId, GLOBAL_NAMESPACE]) {
    const registration = await store.get(namespace, to);
    const found = registration === null ? [] : viewFunctions(registration.abi, name);
    if (found.length > 0) {
      subject.abi = found;
      return;
    }
  }
  throw new ApiError([
    {
      code: "CS_RULE_STATE_ABI_UNKNOWN",
      message: `no ABI registered for ${to} (in the account or global) has a view function ${name}: register it (PUT /abis/${to}) or give the fragment inline as abi`,
      path: "stateCondition.subject.function",
    },
  ]);
}
