/** Unit tests of the pure renderers: URL templating, webhook body, chat body, e-mail. */
import { type AddressInfo, createServer } from "node:net";
import fc from "fast-check";
import { request } from "undici";
import { describe, expect, it } from "vitest";
import type { Alert as NotifyAlert } from "../../../../lib/alerting/alert.js";
import {
  emailMessage,
  entityLabel,
  payloadLines,
  renderUrl,
  resolvePath,
  slackBody,
  summaryLine,
} from "../../../../lib/alerting/render.js";
import { webhookBody, webhookJson } from "../../../../lib/alerting/webhook.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import { DOCUMENTED_WEBHOOK_FIELDS } from "../../../support/webhook-fields.js";
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

  /** The code of the error `fn` throws (fails the test when it throws none or not a NonRetryableError). */
  const codeOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(NonRetryableError);
      return (e as NonRetryableError).code;
    }
    throw new Error("expected renderUrl to throw");
  };

  it("fails with CS_TEMPLATE_DOT_SEGMENT when a value makes a path segment . or .. (URL parsing would drop it)", () => {
    for (const [template, v] of [
      ["https://x.example/api/{v}/notify", ".."],
      ["https://x.example/api/{v}/notify", "."],
      ["https://x.example/api/{v}", ".."],
      ["https://x.example/{v}/notify", ".."],
      ["https://x.example/api/.{v}/notify", "."],
      ["https://x.example/api/{v}./notify", "."],
      ["https://x.example/api/%2e{v}/notify", "."],
      ["https://x.example/api/%2E{v}/notify", ""],
      ["https://x.example/api/.{v}./notify", ""],
      ["https://x.example/api/{v}{v}/notify", "."],
      ["https://x.example\\api\\{v}\\notify", ".."],
      ["https://x.example/api/{v}\t/notify", ".."],
    ] as const) {
      expect(
        codeOf(() => renderUrl(template, { v })),
        `${template} with ${JSON.stringify(v)}`,
      ).toBe("CS_TEMPLATE_DOT_SEGMENT");
    }
  });

  it("lets dots through where they are no dot segment: longer runs, inside a segment, query, fragment, the template's own text", () => {
    const r = (template: string, v: unknown) => renderUrl(template, { v });
    expect(r("https://x.example/api/{v}/notify", "...")).toBe("https://x.example/api/.../notify");
    expect(r("https://x.example/api/{v}/notify", "..a")).toBe("https://x.example/api/..a/notify");
    expect(r("https://x.example/api/{v}/notify", "%2e%2e")).toBe("https://x.example/api/%252e%252e/notify");
    expect(r("https://x.example/api/{v}/notify", "../..")).toBe("https://x.example/api/..%2F../notify");
    expect(r("https://x.example/api?q={v}#{v}", "..")).toBe("https://x.example/api?q=..#..");
    expect(r("https://x.example/api/../x/{v}", "a")).toBe("https://x.example/api/../x/a");
    expect(r("https://x.example/api/{v}/notify", 1.5)).toBe("https://x.example/api/1.5/notify");
  });

  it("property: a rendered path keeps the template's segments after WHATWG URL parsing, or is refused", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[.%2eE/\\?#]{0,6}$/)), (v) => {
        let url: string;
        try {
          url = renderUrl("https://x.example/api/{v}/notify?x={v}", { v });
        } catch (e) {
          expect((e as NonRetryableError).code).toBe("CS_TEMPLATE_DOT_SEGMENT");
          expect([".", ".."]).toContain(v);
          return;
        }
        const parsed = new URL(url);
        expect(parsed.host).toBe("x.example");
        const segments = parsed.pathname.split("/");
        expect(segments).toHaveLength(4);
        expect([segments[1], segments[3]]).toEqual(["api", "notify"]);
        expect(decodeURIComponent(segments[2] ?? "")).toBe(v);
        expect(parsed.searchParams.get("x")).toBe(v);
      }),
      { numRuns: 500 },
    );
  });

  it("on the wire (undici): an accepted rendering is sent with its path as rendered; %2E would not have survived", async () => {
    const lines: string[] = [];
    const server = createServer((socket) =>
      socket.once("data", (d) => {
        lines.push(d.toString("latin1").split("\r\n")[0] ?? "");
        socket.end("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const send = async (url: string) => (await request(url)).body.dump();
      const template = `http://127.0.0.1:${port}/api/{v}/notify`;
      const values = ["...", "%2e%2e", "..%2f", "a/..", " .."];
      for (const v of values) await send(renderUrl(template, { v }));
      // What a naive %2E encoding of ".." would have sent:
      await send(`http://127.0.0.1:${port}/api/%2E%2E/notify`);
      expect(lines).toEqual([...values.map((v) => `GET /api/${encodeURIComponent(v)}/notify HTTP/1.1`), "GET /notify HTTP/1.1"]);
    } finally {
      server.close();
    }
  });

  it("fails with CS_TEMPLATE_HOST when a token stands in the scheme, user info, host or port", () => {
    for (const template of [
      "https://{event}/x",
      "https://hooks.{event}.example.com/x",
      "https://x.example:{logIndex.num}/x",
      "https://{event}@x.example/x",
      "https://user:{event}@x.example/x",
      "{event}://x.example/x",
      "http{event}://x.example/x",
      "https:{event}/x",
      "https:/{event}/x",
      "https:\\\\{event}/x",
      "https://x.example{event}/x",
      "//{event}/x",
      "{event}",
    ]) {
      expect(
        codeOf(() => renderUrl(template, alert.entity)),
        template,
      ).toBe("CS_TEMPLATE_HOST");
    }
    expect(renderUrl("https://[2001:db8::1]:8443/{event}", alert.entity)).toBe("https://[2001:db8::1]:8443/Transfer");
    expect(renderUrl("https://x.example?e={event}", alert.entity)).toBe("https://x.example?e=Transfer");
    expect(renderUrl("https://x.example#{event}", alert.entity)).toBe("https://x.example#Transfer");
    expect(renderUrl("https:x.example/{event}", alert.entity)).toBe("https:x.example/Transfer");
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
    expect(Object.keys(b)).toEqual(DOCUMENTED_WEBHOOK_FIELDS);
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

  it("a removed alert that names its replacing block also carries replacedBy, after the documented fields; no other does", () => {
    const replacedBy = { number: 123, hash: "0x5b1c" };
    const removed = webhookBody({ ...alert, status: "removed", confirmations: 0, replacedBy });
    expect(Object.keys(removed)).toEqual([...DOCUMENTED_WEBHOOK_FIELDS, "replacedBy"]);
    expect(removed.replacedBy).toEqual(replacedBy);
    expect(webhookBody({ ...alert, status: "removed", replacedBy: { number: 123, hash: null } }).replacedBy).toEqual({
      number: 123,
      hash: null,
    });
    expect(Object.keys(webhookBody({ ...alert, replacedBy }))).toEqual(DOCUMENTED_WEBHOOK_FIELDS);
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
