import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { MAPPINGS } from "../../../es/mappings.js";
import { RECORD_KINDS, type RecordKind } from "../../../lib/records.js";
import { TOPICS, type TopicKind } from "../../../topics/index.js";
import { stripWireFields } from "../../../topics/wire.js";
import { REPO_ROOT } from "../../support/source-files.js";

/**
 * Issue 36 §2: the record shape is kept by hand three times — the TypeScript interfaces
 * (lib/records.ts), the Avro schemas (topics/schemas.ts) and the Elasticsearch mappings
 * (es/mappings.ts). This test reads each and compares their field trees (nested records, array items
 * and nullable unions included), so a field added to one and forgotten in another fails here with its path.
 *
 * The interfaces are read from their source with the TypeScript parser (no fourth list to keep);
 * which interface a kind uses comes from `RecordByKind` (lib/records.ts) and `TopicRecords`
 * (topics/index.ts) themselves. Avro's wire-only fields (`dec`, `timestampMs`) are left out with
 * topics/wire.ts `stripWireFields`, as the consumers read them.
 */

/** A field tree: field name → its sub-fields (null for a leaf). */
type Shape = Map<string, Shape | null>;

/** The interfaces and type aliases of a source file, by name. */
function declarations(path: string): Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration> {
  const file = ts.createSourceFile(path, readFileSync(join(REPO_ROOT, path), "utf8"), ts.ScriptTarget.Latest, true);
  const out = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration>();
  for (const s of file.statements) if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) out.set(s.name.text, s);
  return out;
}

const RECORDS = declarations("lib/records.ts");
const TOPIC_DECLS = declarations("topics/index.ts");
const resolve = (name: string) => RECORDS.get(name) ?? TOPIC_DECLS.get(name);

/** The members of an interface or type literal as a shape. */
function membersShape(members: ts.NodeArray<ts.TypeElement>): Shape {
  const shape: Shape = new Map();
  for (const m of members) if (ts.isPropertySignature(m) && m.type) shape.set(m.name.getText(), typeShape(m.type));
  return shape;
}

/** The shape of a property's type: null for scalars; arrays and `| null` unwrapped; local interfaces resolved. */
function typeShape(t: ts.TypeNode): Shape | null {
  if (ts.isUnionTypeNode(t)) {
    const shapes = t.types.map(typeShape).filter((s): s is Shape => s !== null);
    return shapes[0] ?? null;
  }
  if (ts.isArrayTypeNode(t)) return typeShape(t.elementType);
  if (ts.isParenthesizedTypeNode(t)) return typeShape(t.type);
  if (ts.isTypeLiteralNode(t)) return membersShape(t.members);
  if (ts.isTypeReferenceNode(t)) {
    const decl = resolve(t.typeName.getText());
    if (!decl) return null; // Buffer, a string-literal alias such as EventSource, …
    if (ts.isInterfaceDeclaration(decl)) return membersShape(decl.members);
    return typeShape(decl.type);
  }
  return null;
}

/** Name of the interface each key of an interface (`RecordByKind`, `TopicRecords`) maps to. */
function interfaceNames(table: string): Map<string, string> {
  const decl = resolve(table);
  if (!decl || !ts.isInterfaceDeclaration(decl)) throw new Error(`${table} is not an interface`);
  const out = new Map<string, string>();
  for (const m of decl.members) if (ts.isPropertySignature(m) && m.type) out.set(m.name.getText().replace(/"/g, ""), m.type.getText());
  return out;
}

function interfaceShape(name: string): Shape {
  const decl = resolve(name);
  if (!decl || !ts.isInterfaceDeclaration(decl)) throw new Error(`${name} is not an interface of lib/records.ts or topics/index.ts`);
  return membersShape(decl.members);
}

/** The shape of an Avro record schema (named types resolved in document order). */
function avroShape(schema: unknown): Shape {
  const named = new Map<string, Shape | null>();
  const walk = (t: unknown): Shape | null => {
    if (typeof t === "string") return named.get(t) ?? named.get(t.split(".").pop() as string) ?? null;
    if (Array.isArray(t)) {
      const shapes = t.map(walk).filter((s): s is Shape => s !== null);
      return shapes[0] ?? null;
    }
    const o = t as { type?: unknown; name?: string; fields?: Array<{ name: string; type: unknown }>; items?: unknown };
    if (o.type === "array") return walk(o.items);
    if (o.type === "record" && o.fields) {
      const shape: Shape = new Map();
      if (o.name) named.set(o.name, shape);
      for (const f of o.fields) shape.set(f.name, walk(f.type));
      return shape;
    }
    if (o.type === "enum") return null;
    return typeof o.type === "object" ? walk(o.type) : null;
  };
  return walk(stripWireFields(schema as Record<string, unknown>)) ?? new Map();
}

/** The shape of an Elasticsearch mapping's `properties` (multi-fields such as `.raw` are not record fields). */
function esShape(mapping: unknown): Shape {
  const shape: Shape = new Map();
  const props = (mapping as { properties?: Record<string, unknown> }).properties ?? {};
  for (const [name, m] of Object.entries(props)) shape.set(name, (m as { properties?: unknown }).properties ? esShape(m) : null);
  return shape;
}

/** Every path where two shapes differ, as `<path>: only in <a|b>` or `<path>: a record in <a|b> only`. */
function differences(a: Shape, b: Shape, names: [string, string], prefix = ""): string[] {
  const out: string[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const path = `${prefix}${key}`;
    if (!a.has(key)) out.push(`${path}: only in ${names[1]}`);
    else if (!b.has(key)) out.push(`${path}: only in ${names[0]}`);
    else {
      const x = a.get(key) ?? null;
      const y = b.get(key) ?? null;
      if (x && y) out.push(...differences(x, y, names, `${path}.`));
      else if (x && !y) out.push(`${path}: a record in ${names[0]} only`);
      else if (!x && y) out.push(`${path}: a record in ${names[1]} only`);
    }
  }
  return out.sort();
}

const BY_KIND = interfaceNames("RecordByKind");
const BY_TOPIC = interfaceNames("TopicRecords");
/** Topic kinds whose record type is an interface of lib/records.ts or topics/index.ts (alerts' AlertAvro is derived from Alert). */
const INTERFACE_TOPICS = (Object.keys(TOPICS) as TopicKind[]).filter((k) => {
  const decl = resolve(BY_TOPIC.get(k) ?? "");
  return decl !== undefined && ts.isInterfaceDeclaration(decl);
});

describe("record fields agree across lib/records.ts, topics/schemas.ts and es/mappings.ts", () => {
  it("reads every record kind and every topic kind from the type tables", () => {
    expect([...BY_KIND.keys()].sort()).toEqual([...RECORD_KINDS].sort());
    expect([...BY_TOPIC.keys()].sort()).toEqual(Object.keys(TOPICS).sort());
    expect(INTERFACE_TOPICS.sort()).toEqual(["blocks", "dead-letter", "events", "logs", "reorgs", "traces", "transactions"]);
    // The readers see fields: a broken reader would make every comparison vacuous.
    expect(interfaceShape("BlockRecord").get("number")?.get("raw")).toBeNull();
    expect(avroShape(TOPICS.blocks.schema).get("number")?.has("num")).toBe(true);
    expect(esShape(MAPPINGS.event).get("args")?.get("value")?.has("hex")).toBe(true);
  });

  it.each(INTERFACE_TOPICS)("topic %s: the record interface and the Avro schema have the same fields", (topic) => {
    const name = BY_TOPIC.get(topic) as string;
    expect(differences(interfaceShape(name), avroShape(TOPICS[topic].schema), [name, `Avro ${topic}`])).toEqual([]);
  });

  it.each(RECORD_KINDS as RecordKind[])("kind %s: the record interface and the ES mapping have the same fields", (kind) => {
    const name = BY_KIND.get(kind) as string;
    expect(differences(interfaceShape(name), esShape(MAPPINGS[kind]), [name, `ES ${kind}`])).toEqual([]);
  });
});
