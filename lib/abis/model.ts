/**
 * User ABIs: what a registration is, the checks a schema cannot express, and the event fragments a
 * registration contributes to decoding. The body's shape is {@link AbiRegistrationBodySchema}
 * (./schema.ts); {@link validateAbiBody} checks both (the CLI uses it; the API lets Fastify check
 * the schema and then calls {@link abiProblems}).
 * @module
 */
import { EventFragment } from "ethers";
import { jsonPath } from "../validation/path.js";
import type { Problem, ValidationResult } from "../validation/problems.js";
import { checkAgainstSchema } from "../validation/schema-check.js";
import { type AbiEntry, type AbiParam, type AbiRegistrationBody, AbiRegistrationBodySchema } from "./schema.js";

/** The address segment of an event ABI that applies to logs of every contract. */
export const ABI_ANY_ADDRESS = "any";
/** The namespace of the global registrations (written with the admin token only). */
export const GLOBAL_NAMESPACE = "global";

/** Code of every ABI validation problem (400 on the API). */
export const ABI_INVALID = "CS_ABI_INVALID";

/** A stored registration: one ABI for one address (or {@link ABI_ANY_ADDRESS}) in one namespace. */
export interface AbiRegistration {
  /** `global`, or the id of the account that registered it (lib/accounts; `static` for static tokens). */
  namespace: string;
  /** Lower-case `0x` + 40 hex digits, or `any` (event ABIs applying to every contract). */
  address: string;
  /** Label given at registration, or null. */
  name: string | null;
  /** The JSON ABI as registered. */
  abi: AbiEntry[];
  /** How many non-anonymous events of {@link abi} decoding uses. */
  events: number;
  /** First registration of this address in this namespace, ISO 8601 UTC (a replacement keeps it). */
  createdAt: string;
  /** Last registration (replacement), ISO 8601 UTC. */
  updatedAt: string;
}

/**
 * The canonical form of an address path segment: lower-case `0x` + 40 hex digits, `any`, or
 * undefined when `raw` is neither (any letter case is accepted, EIP-55 or not).
 */
export function normalizeAbiAddress(raw: string): string | undefined {
  const s = raw.trim().toLowerCase();
  if (s === ABI_ANY_ADDRESS) return s;
  return /^0x[0-9a-f]{40}$/.test(s) ? s : undefined;
}

type AbiProblem = Problem<typeof ABI_INVALID, string>;

function paramProblems(params: readonly AbiParam[] | undefined, base: string, inEvent: boolean, out: AbiProblem[]): void {
  (params ?? []).forEach((p, i) => {
    const path = jsonPath(base, i);
    const tuple = p.type.startsWith("tuple");
    if (tuple && (!p.components || p.components.length === 0)) {
      out.push({ code: ABI_INVALID, message: `a ${p.type} needs a non-empty components array`, path: jsonPath(path, "components") });
    }
    if (!tuple && p.components !== undefined) {
      out.push({ code: ABI_INVALID, message: `only a tuple has components, not a ${p.type}`, path: jsonPath(path, "components") });
    }
    if (p.indexed !== undefined && !inEvent) {
      out.push({ code: ABI_INVALID, message: "indexed is allowed on event inputs only", path: jsonPath(path, "indexed") });
    }
    if (tuple && p.components) paramProblems(p.components, jsonPath(path, "components"), false, out);
  });
}

/**
 * The problems of an ABI that its schema cannot express, with the JSON path of each
 * (`abi[3].inputs[1].components`): tuples without components and components on other types,
 * `indexed` outside event inputs, events without a name or with more than 3 indexed inputs (4
 * when anonymous), non-event entries where `address` is `any`, and whatever ethers' `EventFragment`
 * still refuses (path: the entry). Expects a value that passed {@link AbiRegistrationBodySchema}.
 * @param abi - the ABI array.
 * @param address - the registration's address (`any` allows event entries only).
 * @param base - the path of the ABI in the body; default `abi`.
 * @returns every problem found, in document order (empty when the ABI is usable).
 */
export function abiProblems(abi: readonly AbiEntry[], address: string, base = "abi"): AbiProblem[] {
  const out: AbiProblem[] = [];
  abi.forEach((entry, i) => {
    const path = jsonPath(base, i);
    const isEvent = entry.type === "event";
    if (address === ABI_ANY_ADDRESS && !isEvent) {
      out.push({
        code: ABI_INVALID,
        message: `only event entries can be registered for any address, not a ${entry.type}`,
        path: jsonPath(path, "type"),
      });
      return;
    }
    const before = out.length;
    paramProblems(entry.inputs, jsonPath(path, "inputs"), isEvent, out);
    paramProblems(entry.outputs, jsonPath(path, "outputs"), false, out);
    if (!isEvent) return;
    if (!entry.name) out.push({ code: ABI_INVALID, message: "an event needs a name", path: jsonPath(path, "name") });
    const indexed = (entry.inputs ?? []).filter((p) => p.indexed === true).length;
    const most = entry.anonymous ? 4 : 3;
    if (indexed > most)
      out.push({
        code: ABI_INVALID,
        message: `an event has at most ${most} indexed inputs, got ${indexed}`,
        path: jsonPath(path, "inputs"),
      });
    if (out.length > before) return;
    try {
      EventFragment.from(entry);
    } catch (err) {
      const e = err as { shortMessage?: string; message?: string };
      out.push({ code: ABI_INVALID, message: `not a valid event: ${e.shortMessage ?? e.message ?? String(err)}`.slice(0, 300), path });
    }
  });
  return out;
}

/**
 * Checks a registration body against {@link AbiRegistrationBodySchema} (every problem at the
 * deepest offending path, e.g. `abi[3].inputs[1].type`) and then {@link abiProblems}.
 * @param body - the parsed JSON body (or a CLI file's content).
 * @param address - the canonical address it is registered for (see {@link normalizeAbiAddress}).
 * @returns the body, or every problem (code `CS_ABI_INVALID`).
 */
export function validateAbiBody(body: unknown, address: string): ValidationResult<AbiRegistrationBody, AbiProblem> {
  const issues = checkAgainstSchema(body, AbiRegistrationBodySchema);
  if (issues.length > 0) return { ok: false, errors: issues.map((i) => ({ code: ABI_INVALID, message: i.message, path: i.path })) };
  const value = body as AbiRegistrationBody;
  const errors = abiProblems(value.abi, address);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value };
}

/**
 * The event fragments decoding uses: every non-anonymous `event` entry (anonymous events have no
 * topic0 to recognise them by), with unnamed arguments named `arg<position>`.
 * @param abi - a validated ABI.
 * @throws the ethers error when an entry is not a valid event (never for a validated ABI).
 */
export function eventFragments(abi: readonly AbiEntry[]): EventFragment[] {
  const out: EventFragment[] = [];
  for (const entry of abi) {
    if (entry.type !== "event" || entry.anonymous === true) continue;
    const inputs = (entry.inputs ?? []).map((p, i) => (p.name ? p : { ...p, name: `arg${i}` }));
    out.push(EventFragment.from({ ...entry, inputs }));
  }
  return out;
}
