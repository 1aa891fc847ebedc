import { describe, expect, it } from "vitest";
import {
  discordBody,
  emailMessage,
  plainText,
  slackBody,
  summaryLine,
  telegramBody,
  windowSummary,
} from "../../../../lib/alerting/render.js";
import { webhookBody } from "../../../../lib/alerting/webhook.js";
import type { WindowFiring } from "../../../../lib/match/windows.js";
import { firingEntity } from "../../../../pipeline/match/windows/evaluator.js";
import { DOCUMENTED_WEBHOOK_FIELDS } from "../../../support/webhook-fields.js";
import { BLOCK_HASH, sampleAlert } from "./fixtures.js";

const firing: WindowFiring = {
  group: "0x00000000000000000000000000000000000000f2",
  end: { number: 109, hash: BLOCK_HASH, timestamp: 1_700_000_108 },
  window: { fromBlock: 100, toBlock: 109, fromTimestamp: 1_700_000_000, toTimestamp: 1_700_000_108 },
  aggregate: "21",
  recordCount: 21,
  recordIds: ["0xa_e_1", "0xa_e_2"],
};
const entity = firingEntity(firing);
const alert = sampleAlert({ entity, entityId: entity.entityId, blockNumber: 109 });

describe("window alerts in every channel", () => {
  it("the entity of a firing names its closing block and group", () => {
    expect(entity).toMatchObject({ entityId: `window:109:${firing.group}`, blockHash: BLOCK_HASH, blockNumber: 109, window: firing });
    expect(firingEntity({ ...firing, group: null }).entityId).toBe("window:109");
  });
  it("the webhook JSON carries what crossed, after the documented fields", () => {
    const body = webhookBody(alert);
    expect(Object.keys(body)).toEqual([...DOCUMENTED_WEBHOOK_FIELDS, "window"]);
    expect(body.window).toEqual(firing);
    // Other alerts are unchanged.
    expect(Object.keys(webhookBody(sampleAlert()))).toEqual(DOCUMENTED_WEBHOOK_FIELDS);
  });
  it("the text channels show a one-line summary: aggregate, bounds, records, group", () => {
    const line = windowSummary(alert);
    expect(line).toBe(`window 21 over blocks 100–109 (21 records) on ethereum/mainnet, group ${firing.group}`);
    expect(summaryLine(alert)).toBe(`${alert.status}: ${line}`);
    expect(windowSummary(sampleAlert())).toBe("");
    expect(plainText(alert, undefined)).toContain(line);
    expect(JSON.stringify(slackBody(alert, { url: "https://hooks.slack.com/x" } as never))).toContain("window 21 over blocks 100–109");
    expect(JSON.stringify(discordBody(alert, {}))).toContain("window 21 over blocks 100–109");
    expect(JSON.stringify(telegramBody(alert, { chatId: "1" } as never))).toContain("window 21 over blocks 100–109");
    expect(emailMessage(alert).text).toContain(line);
  });
  it("an absence rule's silence says so", () => {
    const silent = firingEntity({ ...firing, group: null, aggregate: "0", recordCount: 0, recordIds: [] }, true);
    expect(silent).toMatchObject({ entityId: "absence:109", absence: true });
    const a = sampleAlert({ entity: silent, entityId: silent.entityId, blockNumber: 109 });
    expect(summaryLine(a)).toBe("confirmed: silence: no matching record in blocks 100–109 on ethereum/mainnet");
    expect(webhookBody(a).window).toMatchObject({ recordCount: 0 });
  });
});
