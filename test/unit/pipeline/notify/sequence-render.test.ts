import { describe, expect, it } from "vitest";
import { discordBody, emailMessage, plainText, slackBody, summaryLine, telegramBody } from "../../../../lib/alerting/render.js";
import { sequenceSummary } from "../../../../lib/alerting/sequence-summary.js";
import { webhookBody } from "../../../../lib/alerting/webhook.js";
import type { SequenceFiring } from "../../../../lib/match/sequences.js";
import { correlateValue, sequenceEntity, sequenceRecordOf } from "../../../../pipeline/match/sequences/evaluator.js";
import { DOCUMENTED_WEBHOOK_FIELDS } from "../../../support/webhook-fields.js";
import { BLOCK_HASH, sampleAlert } from "./fixtures.js";

const firing: SequenceFiring = {
  key: "0x7",
  first: { id: "0xa_e_1", blockNumber: 100, blockHash: "0xb100", timestamp: 1_700_000_000 },
  followedBy: { id: "0xc_e_4", blockNumber: 109, blockHash: BLOCK_HASH, timestamp: 1_700_000_108 },
};
const entity = sequenceEntity(firing);
const alert = sampleAlert({ entity, entityId: entity.entityId, blockNumber: 109 });
const line = "sequence 0x7: block 100 followed by block 109 (9 blocks, 108 s later) on ethereum/mainnet";

describe("sequence alerts in every channel", () => {
  it("the entity names both records and the followedBy block, with a search body that finds both", () => {
    expect(entity).toMatchObject({ entityId: "sequence:0xa_e_1:0xc_e_4", blockHash: BLOCK_HASH, blockNumber: 109 });
    expect(entity.sequenceMatch).toEqual({ ...firing, search: { query: { ids: { values: ["0xa_e_1", "0xc_e_4"] } } } });
  });
  it("the webhook JSON carries sequenceMatch after the documented fields", () => {
    const body = webhookBody(alert);
    expect(Object.keys(body)).toEqual([...DOCUMENTED_WEBHOOK_FIELDS, "sequenceMatch"]);
    expect(body.sequenceMatch).toEqual(entity.sequenceMatch);
  });
  it("the text channels show a one-line summary: correlate value, both blocks, the distance", () => {
    expect(sequenceSummary(alert)).toBe(line);
    expect(summaryLine(alert)).toBe(`${alert.status}: ${line}`);
    expect(sequenceSummary(sampleAlert())).toBe("");
    expect(plainText(alert, undefined)).toContain(line);
    for (const body of [
      slackBody(alert, { url: "https://hooks.slack.com/x" } as never),
      discordBody(alert, {}),
      telegramBody(alert, { chatId: "1" } as never),
    ])
      expect(JSON.stringify(body)).toContain("sequence 0x7: block 100 followed by block 109");
    expect(emailMessage(alert).text).toContain(line);
  });
  it("a record's correlate value: a decoded argument's hex lowercased, a plain attribute as text, absent when missing", () => {
    const e = {
      entityId: "0xd_e_2",
      blockHash: BLOCK_HASH,
      blockNumber: 5,
      transactionIndex: { num: 3, raw: "0x3" },
      logIndex: { num: 2, raw: "0x2" },
      from: "0xABCDEF0000000000000000000000000000000001",
      args: [{ name: "id", value: { hex: "0x2A", num: 42, scaled: null, type: "uint256" } }],
    };
    expect(correlateValue(e, "args.id")).toBe("0x2a");
    expect(correlateValue(e, "from")).toBe("0xabcdef0000000000000000000000000000000001");
    expect(correlateValue(e, "args.missing")).toBeUndefined();
    const seq = { correlate: { first: "from", followedBy: "args.id" } } as never;
    expect(sequenceRecordOf(seq, "followedBy", e)).toEqual({ id: "0xd_e_2", role: "followedBy", key: "0x2a", pos: [3, 2] });
    expect(sequenceRecordOf(seq, "first", { ...e, from: undefined, transactionIndex: undefined })).toBeUndefined();
  });
});
