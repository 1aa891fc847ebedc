/** Unit tests of the pure renderers: URL templating, webhook body, chat body, e-mail. */
import { describe, expect, it } from "vitest";
import { NonRetryableError } from "../../../../pipeline/errors.js";
import {
  emailMessage,
  entityLabel,
  type NotifyAlert,
  payloadLines,
  renderUrl,
  resolvePath,
  slackBody,
  summaryLine,
  webhookBody,
  webhookJson,
} from "../../../../pipeline/notify/render.js";
import { BLOCK_HASH, FROM, RULE_ID, sampleAlert, TO, TX_HASH, USDT } from "./fixtures.js";

const alert = sampleAlert();

describe("renderUrl", () => {
  it("replaces plain and dotted tokens by URL-encoded entity values", () => {
    expect(renderUrl("https://hooks.example.com/tx/{transactionHash}?block={blockNumber.num}", alert.entity)).toBe(
      `https://hooks.example.com/tx/${TX_HASH}?block=123`,
    );
    expect(renderUrl("https://x.example/{args.0.value.hex}/{args.2.value.num}", alert.entity)).toBe(
      `https://x.example/${FROM}/250000000000`,
    );
  });

  it("encodes reserved characters so a value cannot add path segments, query or fragment", () => {
    expect(renderUrl("https://x.example/m/{memo}?q={memo}", alert.entity)).toBe(
      "https://x.example/m/a%20b%26c%2Fd%3Fe%23f?q=a%20b%26c%2Fd%3Fe%23f",
    );
  });

  it("renders null as empty, tolerates spaces inside braces and leaves text without tokens alone", () => {
    expect(renderUrl("https://x.example/?n={nothing}&e={ event }", alert.entity)).toBe("https://x.example/?n=&e=Transfer");
    expect(renderUrl("https://x.example/%7Bliteral%7D", alert.entity)).toBe("https://x.example/%7Bliteral%7D");
  });

  it("fails with CS_TEMPLATE_UNKNOWN_FIELD on a missing field, a bad path, or a prototype property", () => {
    for (const t of [
      "https://x.example/{nope}",
      "https://x.example/{blockNumber.nope}",
      "https://x.example/{args.9.name}",
      "https://x.example/{}",
      "https://x.example/{a b}",
      "https://x.example/{constructor}",
      "https://x.example/{__proto__}",
    ]) {
      let err: unknown;
      try {
        renderUrl(t, alert.entity);
      } catch (e) {
        err = e;
      }
      expect(err, t).toBeInstanceOf(NonRetryableError);
      expect((err as NonRetryableError).code, t).toBe("CS_TEMPLATE_UNKNOWN_FIELD");
    }
  });

  it("refuses objects and arrays with CS_TEMPLATE_NOT_SCALAR", () => {
    expect(() => renderUrl("https://x.example/{blockNumber}", alert.entity)).toThrow(
      expect.objectContaining({ code: "CS_TEMPLATE_NOT_SCALAR" }),
    );
    expect(() => renderUrl("https://x.example/{args}", alert.entity)).toThrow(expect.objectContaining({ code: "CS_TEMPLATE_NOT_SCALAR" }));
  });

  it("resolvePath follows own properties and array indexes only", () => {
    expect(resolvePath({ a: { b: [1, { c: 2 }] } }, "a.b.1.c")).toEqual({ found: true, value: 2 });
    expect(resolvePath({ a: [] }, "a.length")).toEqual({ found: false });
    expect(resolvePath({}, "toString")).toEqual({ found: false });
  });
});

describe("webhookBody", () => {
  it("has exactly the documented fields, in order, and no internal ones", () => {
    const named: NotifyAlert = { ...alert, ruleName: "not sent" };
    const b = webhookBody(named);
    expect(Object.keys(b)).toEqual([
      "id",
      "ruleId",
      "ruleVersion",
      "sequence",
      "status",
      "confirmations",
      "maxConfirmationCount",
      "chain",
      "targetType",
      "entityId",
      "blockHash",
      "blockNumber",
      "payload",
      "emittedAt",
    ]);
    expect(b).toMatchObject({
      id: alert.id,
      ruleId: RULE_ID,
      sequence: 42,
      status: "confirmed",
      blockHash: BLOCK_HASH,
      blockNumber: 123,
      payload: alert.payload,
    });
    expect(JSON.parse(webhookJson(alert))).toEqual(b);
  });

  it("writes bigints as decimal strings", () => {
    const json = webhookJson(sampleAlert({ payload: { value: 2n ** 70n } }));
    expect(JSON.parse(json).payload.value).toBe("1180591620717411303424");
  });
});

describe("summaries", () => {
  it("labels events by name and other targets by type", () => {
    expect(entityLabel(alert)).toBe("Transfer");
    expect(entityLabel(sampleAlert({ targetType: "Transaction", entity: { hash: TX_HASH } }))).toBe("Transaction");
    expect(summaryLine(alert)).toBe("confirmed: Transfer in block 123 on ethereum/mainnet (12/12 confirmations)");
    expect(summaryLine(sampleAlert({ status: "removed", confirmations: 0 }))).toContain("removed: Transfer in block 123");
    // maxConfirmationCount 0 confirms at first sight, like 1: the threshold shown is 1.
    expect(summaryLine(sampleAlert({ confirmations: 1, maxConfirmationCount: 0 }))).toContain("(1/1 confirmation)");
  });

  it("flattens payloads into dotted lines", () => {
    expect(payloadLines(alert.payload)).toEqual([
      { key: "transactionHash", value: TX_HASH },
      { key: "address", value: USDT },
      { key: "args.from", value: FROM },
      { key: "args.to", value: TO },
      { key: "args.value", value: "250000000000" },
    ]);
    expect(payloadLines({ list: [{ a: 1 }, 2], empty: {}, none: null })).toEqual([
      { key: "list[0].a", value: "1" },
      { key: "list[1]", value: "2" },
      { key: "empty", value: "{}" },
      { key: "none", value: "null" },
    ]);
    const many = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${i}`, i]));
    const lines = payloadLines(many);
    expect(lines).toHaveLength(51);
    expect(lines.at(-1)).toEqual({ key: "…", value: "10 more field(s)" });
  });
});

describe("slackBody", () => {
  const params = {
    url: "https://hooks.slack.com/services/T/B/X",
    text: ":rotating_light: Big USDT move",
    channel: "#alerts",
    username: "chainsift",
  };

  it("posts text (intro + readable summary + payload), channel and username", () => {
    const b = slackBody({ ...alert, ruleName: "Big <USDT> & co" }, params);
    expect(Object.keys(b)).toEqual(["text", "channel", "username"]);
    expect(b.channel).toBe("#alerts");
    expect(b.username).toBe("chainsift");
    expect(b.text.split("\n")[0]).toBe(":rotating_light: Big USDT move");
    expect(b.text).toContain("confirmed: Transfer in block 123 on ethereum/mainnet");
    expect(b.text).toContain("Big &lt;USDT&gt; &amp; co");
    expect(b.text).toContain(`• args.value: 250000000000`);
  });

  it("adds Block Kit blocks on request", () => {
    const b = slackBody(alert, params, { blocks: true });
    expect(b.blocks).toHaveLength(2);
    expect(JSON.stringify(b.blocks)).toContain("args.from");
  });
});

describe("emailMessage", () => {
  it("has a readable subject and lists the payload in text and HTML", () => {
    const m = emailMessage({ ...alert, ruleName: "Big USDT\r\nBcc: evil@example.com" }, { recipients: ["ops@example.com"] });
    expect(m.subject).toBe("[chainsift] confirmed: Big USDT Bcc: evil@example.com — Transfer in block 123");
    expect(m.subject).not.toMatch(/[\r\n]/);
    expect(emailMessage(alert).subject).toBe("[chainsift] confirmed: Transfer in block 123");
    for (const body of [m.text, m.html]) {
      expect(body).toContain(FROM);
      expect(body).toContain("250000000000");
      expect(body).toContain(alert.id);
      expect(body).toContain("args.to");
    }
    expect(m.text).toMatch(/^Confirmations: +12\/12$/m);
  });

  it("escapes HTML", () => {
    const m = emailMessage(sampleAlert({ payload: { note: "<script>alert(1)</script>" } }));
    expect(m.html).not.toContain("<script>");
    expect(m.html).toContain("&lt;script&gt;");
  });
});
