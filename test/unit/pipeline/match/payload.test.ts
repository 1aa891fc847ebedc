/**
 * Unit tests of payload selection (lib/match/payload.ts): Field, Sub Field over objects and
 * arrays, two levels deep, missing fields, defaults per target type, and a rule's merged payload.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_PAYLOAD_FIELDS, rulePayload, selectPayload } from "../../../../lib/match/payload.js";
import type { PayloadItem, Rule, TargetType } from "../../../../lib/rules/model.js";

const entity = {
  entityId: "0xabc_e_1",
  event: "Transfer",
  address: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  blockNumber: { num: 17053184, raw: "0x1043600" },
  blockHash: "0xcd",
  args: [
    { name: "from", pos: 0, value: { hex: "0x01", num: null, scaled: null, type: "address" } },
    { name: "to", pos: 1, value: { hex: "0x02", num: null, scaled: null, type: "address" } },
    { name: "value", pos: 2, value: { hex: "0x5", num: 5, scaled: 0.000005, type: "uint256" } },
  ],
};

describe("selectPayload", () => {
  it("Field copies a property; dotted names read nested properties; missing ones are null", () => {
    const items: PayloadItem[] = [
      { fieldType: "Field", fieldName: "event" },
      { fieldType: "Field", fieldName: "blockNumber.num" },
      { fieldType: "Field", fieldName: "nope" },
    ];
    expect(selectPayload(items, entity)).toEqual({ event: "Transfer", "blockNumber.num": 17053184, nope: null });
  });

  it("Sub Field steps into an object, and maps over an array", () => {
    expect(
      selectPayload(
        [{ fieldType: "Sub Field", fieldName: "blockNumber", subPayloads: [{ fieldType: "Field", fieldName: "raw" }] }],
        entity,
      ),
    ).toEqual({ blockNumber: { raw: "0x1043600" } });
    expect(
      selectPayload(
        [
          {
            fieldType: "Sub Field",
            fieldName: "args",
            subPayloads: [
              { fieldType: "Field", fieldName: "name" },
              { fieldType: "Sub Field", fieldName: "value", subPayloads: [{ fieldType: "Field", fieldName: "scaled" }] },
            ],
          },
        ],
        entity,
      ),
    ).toEqual({
      args: [
        { name: "from", value: { scaled: null } },
        { name: "to", value: { scaled: null } },
        { name: "value", value: { scaled: 0.000005 } },
      ],
    });
  });

  it("Sub Field on a scalar or missing property is null; without subPayloads it is the whole property", () => {
    expect(
      selectPayload([{ fieldType: "Sub Field", fieldName: "event", subPayloads: [{ fieldType: "Field", fieldName: "x" }] }], entity),
    ).toEqual({
      event: null,
    });
    expect(selectPayload([{ fieldType: "Sub Field", fieldName: "blockNumber", subPayloads: [] }], entity)).toEqual({
      blockNumber: entity.blockNumber,
    });
  });

  it("no items: the default fields of the target type, or {} without one", () => {
    expect(selectPayload(null, entity)).toEqual({});
    const p = selectPayload([], entity, "Event");
    expect(Object.keys(p)).toEqual([...DEFAULT_PAYLOAD_FIELDS.Event]);
    expect(p.address).toBe(entity.address);
    expect(p.transactionHash).toBeNull();
    for (const t of Object.keys(DEFAULT_PAYLOAD_FIELDS) as TargetType[]) {
      expect(DEFAULT_PAYLOAD_FIELDS[t]).toContain("blockHash");
      expect(DEFAULT_PAYLOAD_FIELDS[t]).toContain("blockNumber");
    }
  });
});

describe("rulePayload", () => {
  const rule = (payloads: (PayloadItem[] | null)[]): Pick<Rule, "config"> => ({
    config: {
      targetType: "Event",
      targetMap: [],
      alerts: payloads.map((payload) => ({ type: "Webhook (POST)" as const, parameters: { url: "http://x" }, payload })),
    },
  });

  it("merges the selections of all alert definitions", () => {
    expect(
      rulePayload(rule([[{ fieldType: "Field", fieldName: "event" }], null, [{ fieldType: "Field", fieldName: "address" }]]), entity),
    ).toEqual({
      event: "Transfer",
      address: entity.address,
    });
  });

  it("falls back to the default payload of the target type", () => {
    expect(Object.keys(rulePayload(rule([null, []]), entity))).toEqual([...DEFAULT_PAYLOAD_FIELDS.Event]);
  });
});
