/**
 * Lua scripts whose KEYS and ARGV are declared once, by name, in a {@link LuaLayout}: the layout
 * generates both the Lua prelude that binds every key and argument to a local of its name and the
 * TypeScript side's `keys` / `arguments` arrays, so no position is ever written (or matched) by hand.
 *
 * A layout has fixed keys and arguments (passed once) and, for batches, an `item` group of keys and
 * arguments repeated once per item after the fixed ones. The prelude then defines `itemCount` and
 * `item(i)` (1-based), which returns the i-th item's values as a table keyed by their names:
 *
 * ```lua
 * -- layout {keys: ["matches"], args: ["ttl"], item: {keys: ["state"], args: ["member"]}} gives:
 * local matches = KEYS[1]
 * local ttl = ARGV[1]
 * local itemCount = (#KEYS - 1) / 1
 * local function item(i)
 *   local k, a = 1 + (i - 1) * 1, 1 + (i - 1) * 1
 *   return { state = KEYS[k + 1], member = ARGV[a + 1] }
 * end
 * ```
 * @module
 */
import { type MatchRedis, runScript, type Script, script } from "./redis.js";

/** Names of the KEYS and ARGV of a script, in the order they are passed. */
export interface LuaLayout<FK extends string = string, FA extends string = string, IK extends string = string, IA extends string = string> {
  /** Keys passed once: `KEYS[1]`, `KEYS[2]`, … */
  keys: readonly FK[];
  /** Arguments passed once: `ARGV[1]`, `ARGV[2]`, … */
  args: readonly FA[];
  /** Keys and arguments repeated once per item of a batch, after the fixed ones (at least one name). */
  item?: { keys: readonly IK[]; args: readonly IA[] };
}

/** A value passed to a script (Redis receives every key and argument as a string). */
export type LuaValue = string | number;

/** The values of some names of a layout. */
export type LuaValues<N extends string> = Readonly<Record<N, LuaValue>>;

/** A prepared script with its layout. */
export interface LuaScript<FK extends string = string, FA extends string = string, IK extends string = string, IA extends string = string>
  extends Script {
  layout: LuaLayout<FK, FA, IK, IA>;
  /**
   * The KEYS and ARGV of one call, in layout order.
   * @param fixed - a value for every fixed key and argument.
   * @param items - a value for every item key and argument, per item (scripts with an `item` group).
   */
  params(fixed: LuaValues<FK | FA>, items?: ReadonlyArray<LuaValues<IK | IA>>): { keys: string[]; args: string[] };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Lua 5.1 reserved words, plus the names the prelude defines. */
const RESERVED = new Set(
  "and break do else elseif end false for function if in local nil not or repeat return then true until while KEYS ARGV redis item itemCount".split(
    " ",
  ),
);

/**
 * The Lua prelude of a layout (see the module doc): one `local` per fixed key and argument, then
 * `itemCount` and `item(i)` when the layout has an item group.
 * @throws {Error} when a name is not a Lua identifier, is reserved, or appears twice, or when the
 *   item group is empty.
 */
export function luaPrelude(layout: LuaLayout): string {
  const item = layout.item;
  const names = [...layout.keys, ...layout.args, ...(item?.keys ?? []), ...(item?.args ?? [])];
  for (const name of names) {
    if (!IDENTIFIER.test(name) || RESERVED.has(name)) throw new Error(`Lua layout: ${JSON.stringify(name)} cannot name a local`);
  }
  if (new Set(names).size !== names.length) throw new Error(`Lua layout: a name appears twice in ${names.join(", ")}`);
  const bind = (locals: readonly string[], table: "KEYS" | "ARGV") =>
    locals.length === 0 ? [] : [`local ${locals.join(", ")} = ${locals.map((_, i) => `${table}[${i + 1}]`).join(", ")}`];
  const lines = [...bind(layout.keys, "KEYS"), ...bind(layout.args, "ARGV")];
  if (item) {
    const perKeys = item.keys.length;
    const perArgs = item.args.length;
    if (perKeys + perArgs === 0) throw new Error("Lua layout: an item group needs at least one key or argument");
    const count = perKeys > 0 ? `(#KEYS - ${layout.keys.length}) / ${perKeys}` : `(#ARGV - ${layout.args.length}) / ${perArgs}`;
    const fields = [...item.keys.map((n, j) => `${n} = KEYS[k + ${j + 1}]`), ...item.args.map((n, j) => `${n} = ARGV[a + ${j + 1}]`)];
    lines.push(
      `local itemCount = ${count}`,
      "local function item(i)",
      `  local k, a = ${layout.keys.length} + (i - 1) * ${perKeys}, ${layout.args.length} + (i - 1) * ${perArgs}`,
      `  return { ${fields.join(", ")} }`,
      "end",
    );
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Prepares a script: the prelude of `layout` followed by `body`, which uses the names of the layout.
 * @throws {Error} as {@link luaPrelude}.
 */
export function luaScript<
  const FK extends string,
  const FA extends string,
  const IK extends string = never,
  const IA extends string = never,
>(layout: LuaLayout<FK, FA, IK, IA>, body: string): LuaScript<FK, FA, IK, IA> {
  const prepared = script(luaPrelude(layout) + body);
  return {
    ...prepared,
    layout,
    params(fixed, items = []) {
      const keys = layout.keys.map((k) => String(fixed[k]));
      const args = layout.args.map((a) => String(fixed[a]));
      for (const it of items) {
        for (const k of layout.item?.keys ?? []) keys.push(String(it[k]));
        for (const a of layout.item?.args ?? []) args.push(String(it[a]));
      }
      return { keys, args };
    },
  };
}

/**
 * Runs a {@link LuaScript} with the given values (EVALSHA, falling back to EVAL; see `redis.ts`).
 * @throws whatever the client throws (connection, script errors).
 */
export function runLua<FK extends string, FA extends string, IK extends string, IA extends string>(
  redis: MatchRedis,
  s: LuaScript<FK, FA, IK, IA>,
  fixed: LuaValues<FK | FA>,
  items?: ReadonlyArray<LuaValues<IK | IA>>,
): Promise<unknown> {
  const { keys, args } = s.params(fixed, items);
  return runScript(redis, s, keys, args);
}
