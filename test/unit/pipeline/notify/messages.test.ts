/**
 * Unit tests of message templates (lib/alerting/template.ts) and of the chat and e-mail messages
 * built from them (lib/alerting/render.ts): placeholders, explorer links, scaled token
 * amounts, escaping per channel, and retractions reading as such in every channel.
 */
import { formatUnits } from "ethers";
import { describe, expect, it } from "vitest";
import type { Alert } from "../../../../lib/alerting/alert.js";
import { discordBody, emailMessage, retractionLine, slackBody, telegramBody } from "../../../../lib/alerting/render.js";
import { renderAction } from "../../../../lib/alerting/rendered.js";
import {
  decimalAmount,
  displayText,
  explorerLinks,
  renderTemplate,
  templateProblems,
  templateView,
  tokenAmounts,
} from "../../../../lib/alerting/template.js";
import { lookupToken } from "../../../../lib/chain/tokens.js";
import { DEFAULT_EXPLORER_URLS, loadConfig } from "../../../../lib/config/index.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import { createDecoder } from "../../../../pipeline/decode/decoder.js";
import { fixtureRecords } from "../../../support/fixture-records.js";
import { hasMainnetFixtures, loadCompleteBlocks } from "../../../support/fixtures.js";
import { BLOCK_HASH, FROM, sampleAlert, TX_HASH, USDT } from "./fixtures.js";

/** The fixture's USDT Transfer, with the decoder's `str` (the scaled amount and symbol). */
const transfer: Alert = sampleAlert({
  ruleName: "Big USDT",
  entity: {
    ...sampleAlert().entity,
    standard: "erc20",
    str: `Transfer(from=${FROM}, to=0xdfd5293d8e347dfe59e90efd55b2956a1343963d, value=250000000000 [250000 USDT])`,
  },
});
const removed: Alert = { ...transfer, status: "removed", confirmations: 0 };
/** A payload of 50 fields of 200 characters: a default message longer than any chat service takes. */
const BIG_PAYLOAD = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, "x".repeat(200)]));
const TEMPLATE = "{alert.status}: {amount.value} from {args.0.value.hex} in block {blockNumber} {explorer.tx}";

describe("templateProblems (checked when a rule is saved)", () => {
  it("accepts entity paths and the known computed fields", () => {
    expect(templateProblems(TEMPLATE)).toEqual([]);
    expect(templateProblems("no tokens, a lone { brace")).toEqual([]);
    expect(templateProblems("{ alert.ruleName } {explorer.token} {amount.wad} {args.2.value.scaled}")).toEqual([]);
  });

  it("refuses tokens that are not paths and unknown alert, explorer and amount fields", () => {
    expect(templateProblems("{a b}")).toHaveLength(1);
    expect(templateProblems("{}")).toHaveLength(1);
    expect(templateProblems("{alert.nope} {explorer} {amount} {amount.a.b}")).toHaveLength(4);
  });
});

describe("explorer links", () => {
  it("link the transaction, block, address and token on etherscan for mainnet by default", () => {
    expect(explorerLinks(transfer)).toEqual({
      tx: `https://etherscan.io/tx/${TX_HASH}`,
      block: "https://etherscan.io/block/123",
      address: `https://etherscan.io/address/${USDT}`,
      token: `https://etherscan.io/token/${USDT}`,
    });
  });

  it("are empty for a chain without explorer, and follow the configured base URL", () => {
    const other = { ...transfer, chain: { technology: "ethereum", blockchain: "ethereum", network: "devnet" } };
    expect(explorerLinks(other)).toEqual({ tx: "", block: "", address: "", token: "" });
    expect(explorerLinks(other, { "ethereum/ethereum/devnet": "http://scan.local/" }).tx).toBe(`http://scan.local/tx/${TX_HASH}`);
  });

  it("never put a value that is not a hash or an address in a link", () => {
    const odd = { ...transfer, entity: { ...transfer.entity, transactionHash: "0x12/../../evil", address: "javascript:x" } };
    expect(explorerLinks(odd)).toMatchObject({ tx: "", address: "", token: "" });
  });

  it("are configured per chain with CHAINSIFT_EXPLORER_URLS over the defaults", () => {
    const n = loadConfig({
      CHAINSIFT_EXPLORER_URLS: "ethereum/polygon/mainnet=https://polygonscan.com/, ethereum/ethereum/sepolia=",
    }).notify;
    expect(n.explorerUrls["ethereum/polygon/mainnet"]).toBe("https://polygonscan.com");
    expect(n.explorerUrls["ethereum/ethereum/mainnet"]).toBe(DEFAULT_EXPLORER_URLS["ethereum/ethereum/mainnet"]);
    expect(n.explorerUrls["ethereum/ethereum/sepolia"]).toBeUndefined();
    expect(() => loadConfig({ CHAINSIFT_EXPLORER_URLS: "mainnet=https://x" })).toThrow(/CHAINSIFT_EXPLORER_URLS/);
    expect(() => loadConfig({ CHAINSIFT_EXPLORER_URLS: "a/b/c=ftp://x" })).toThrow(/CHAINSIFT_EXPLORER_URLS/);
  });
});

describe("token amounts and value display", () => {
  it("scale an amount exactly with the decoder's decimals and symbol", () => {
    expect(tokenAmounts(transfer.entity)).toEqual({ value: "250000 USDT" });
    const odd = {
      args: [{ name: "wad", value: { hex: "0x1bc16d674ec80001", num: 2e18, scaled: 2, type: "uint256" } }],
      str: "Deposit(dst=0x…, wad=2000000000000000001 [2.000000000000000001 WETH])",
    };
    expect(tokenAmounts(odd)).toEqual({ wad: "2.000000000000000001 WETH" });
    // A token whose decimals were read on chain but has no symbol: the decoder writes `[<amount>]`.
    expect(tokenAmounts({ ...odd, str: "Deposit(dst=0x…, wad=2000000000000000001 [2.000000000000000001])" })).toEqual({
      wad: "2.000000000000000001",
    });
  });

  it("fall back to the raw integer when the token's decimals are unknown", () => {
    expect(
      tokenAmounts({ args: [{ name: "value", value: { hex: "0x3a35294400", num: 250000000000, scaled: null, type: "uint256" } }] }),
    ).toEqual({
      value: "250000000000",
    });
  });

  it("decimalAmount is exact for any size", () => {
    expect(decimalAmount(2n ** 100n, 18)).toBe("1267650600228.229401496703205376");
    expect(decimalAmount(-1500000n, 6)).toBe("-1.5");
    expect(decimalAmount(0n, 6)).toBe("0");
  });

  it("display quantities exactly, numbers without exponent, objects as JSON", () => {
    expect(displayText({ num: 1e21, raw: "0x3635c9adc5dea00000" })).toBe("1000000000000000000000");
    expect(displayText(1.5e-7)).toBe("0.00000015");
    expect(displayText(null)).toBe("");
    expect(displayText({ a: [1, 2n] })).toBe('{"a":[1,"2"]}');
  });
});

describe("renderTemplate", () => {
  it("fills entity fields, alert fields, explorer links and scaled amounts", () => {
    expect(renderTemplate(TEMPLATE, templateView(transfer))).toBe(
      `confirmed: 250000 USDT from ${FROM} in block 123 https://etherscan.io/tx/${TX_HASH}`,
    );
    expect(renderTemplate("{alert.ruleName} #{alert.sequence} on {alert.chain}", templateView(transfer))).toBe(
      "Big USDT #42 on ethereum/mainnet",
    );
  });

  it("escapes values, never the template's own text", () => {
    const a = sampleAlert({ entity: { ...transfer.entity, memo: "*bold* <@everyone>" } });
    expect(renderTemplate("**{memo}**", templateView(a), (s) => s.replace(/[*<>@]/g, "\\$&"))).toBe("**\\*bold\\* \\<\\@everyone\\>**");
  });

  it("fails for good on a field the alert does not have", () => {
    const err = (() => {
      try {
        renderTemplate("{nope}", templateView(transfer));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NonRetryableError);
    expect((err as NonRetryableError).code).toBe("CS_TEMPLATE_UNKNOWN_FIELD");
  });
});

describe("Discord message (Execute Webhook body)", () => {
  it("sends content with mentions disabled and the username override", () => {
    const b = discordBody(transfer, { template: TEMPLATE, username: "chainsift" });
    expect(b).toEqual({
      content: `confirmed: 250000 USDT from ${FROM} in block 123 https://etherscan.io/tx/${TX_HASH}`,
      allowed_mentions: { parse: [] },
      username: "chainsift",
    });
  });

  it("escapes markdown in values of the default message and clips content to 2000 characters", () => {
    const a = { ...transfer, ruleName: "big_*USDT*", payload: BIG_PAYLOAD };
    const b = discordBody(a, {});
    expect(Object.keys(b)).toEqual(["content", "allowed_mentions"]);
    expect(b.content).toContain("big\\_\\*USDT\\*");
    expect(b.content.split("\n")[0]).toBe("**confirmed: Transfer in block 123 on ethereum/mainnet (12/12 confirmations)**");
    expect(b.content).toContain(`https://etherscan.io/tx/${TX_HASH}`);
    expect(b.content.length).toBe(2000);
  });
});

describe("Telegram message (sendMessage body)", () => {
  it("sends chat_id and plain text without link previews", () => {
    const b = telegramBody(transfer, { chatId: "-1001234567890", template: TEMPLATE, messageThreadId: 7 });
    expect(b).toEqual({
      chat_id: "-1001234567890",
      text: `confirmed: 250000 USDT from ${FROM} in block 123 https://etherscan.io/tx/${TX_HASH}`,
      link_preview_options: { is_disabled: true },
      message_thread_id: 7,
    });
  });

  it("keeps values verbatim (no parse_mode, nothing to escape) and clips to 4096 characters", () => {
    const b = telegramBody({ ...transfer, ruleName: "<b>x</b>", payload: BIG_PAYLOAD }, { chatId: "@my_alerts" });
    expect(b).not.toHaveProperty("parse_mode");
    expect(b.text).toContain("<b>x</b>");
    expect(b.text.length).toBe(4096);
  });
});

describe("Slack and e-mail templates", () => {
  const slack = { url: "https://hooks.slack.com/services/T/B/X", text: ":rotating_light:", channel: "#a", username: "cs" };

  it("Slack: the intro text, then the template with mrkdwn-escaped values", () => {
    const a = { ...transfer, entity: { ...transfer.entity, memo: "<!channel> & co" } };
    expect(slackBody(a, { ...slack, template: "*{alert.status}* {memo}" }).text).toBe(
      ":rotating_light:\n*confirmed* &lt;!channel&gt; &amp; co",
    );
  });

  it("Slack default message gains the explorer link of the transaction", () => {
    expect(slackBody(transfer, slack).text.split("\n")[3]).toBe(`https://etherscan.io/tx/${TX_HASH}`);
  });

  it("e-mail: subject and body templates; the subject stays one line", () => {
    const m = emailMessage(transfer, { subject: "{amount.value} moved\r\nBcc: x@y", template: "{amount.value}\n{explorer.tx}" });
    expect(m.subject).toBe("250000 USDT moved Bcc: x@y");
    expect(m.text).toBe(`250000 USDT\nhttps://etherscan.io/tx/${TX_HASH}\n`);
    expect(m.html).toContain(`<div style="white-space:pre-wrap">250000 USDT\nhttps://etherscan.io/tx/${TX_HASH}\n</div>`);
  });

  it("e-mail default body lists the explorer link", () => {
    expect(emailMessage(transfer).text).toMatch(new RegExp(`^Explorer: +https://etherscan.io/tx/${TX_HASH}$`, "m"));
  });
});

describe("renderAction (what the channels send, and rule backtests show)", () => {
  it("renders Discord and Telegram actions; a Telegram rendering names the chat, never a bot URL", () => {
    const discord = renderAction(transfer, {
      type: "Discord",
      parameters: { url: "https://discord.com/api/webhooks/1/t", template: "{amount.value}" },
    });
    expect(discord).toEqual({
      type: "Discord",
      method: "POST",
      url: "https://discord.com/api/webhooks/1/t",
      body: JSON.stringify({ content: "250000 USDT", allowed_mentions: { parse: [] } }),
    });
    const telegram = renderAction(transfer, { type: "Telegram", parameters: { chatId: "@my_alerts", template: "{amount.value}" } });
    expect(telegram).toEqual({
      type: "Telegram",
      method: "POST",
      chatId: "@my_alerts",
      body: JSON.stringify({ chat_id: "@my_alerts", text: "250000 USDT", link_preview_options: { is_disabled: true } }),
    });
    expect(() => renderAction(transfer, { type: "Telegram", parameters: { chatId: "not a chat" } })).toThrow(/chatId/);
  });

  it("fills an Email action's subject and body templates", () => {
    const m = renderAction(transfer, { type: "Email", parameters: { recipients: [" ops@example.com"], subject: "{amount.value}" } });
    expect(m).toMatchObject({ type: "Email", recipients: ["ops@example.com"], subject: "250000 USDT" });
  });
});

describe("{alert.replacedByNumber} and {alert.replacedByHash} (the block that replaced a retracted one)", () => {
  const tpl = "{alert.status}: replaced by {alert.replacedByNumber} {alert.replacedByHash}.";
  it("are accepted when a rule is saved", () => {
    expect(templateProblems(tpl)).toEqual([]);
  });
  it("name the replacing block of a removed alert", () => {
    const by = `0x${"ab".repeat(32)}`;
    expect(renderTemplate(tpl, templateView({ ...removed, replacedBy: { number: 124, hash: by } }))).toBe(
      `removed: replaced by 124 ${by}.`,
    );
  });
  it("leave the hash empty when no block was known at that height yet", () => {
    expect(renderTemplate(tpl, templateView({ ...removed, replacedBy: { number: 124, hash: null } }))).toBe("removed: replaced by 124 .");
  });
  it("are empty for every other alert, and for a removed alert without the field", () => {
    expect(renderTemplate(tpl, templateView(transfer))).toBe(`${transfer.status}: replaced by  .`);
    expect(renderTemplate(tpl, templateView(removed))).toBe("removed: replaced by  .");
  });
});

describe("a retraction reads as one in every channel", () => {
  const line = retractionLine(removed);
  const slack = { url: "https://hooks.slack.com/services/T/B/X", text: "", channel: "", username: "" };

  it("names the block that left the chain", () => {
    expect(line).toBe(
      `RETRACTED: block 123 (${BLOCK_HASH.slice(0, 6)}…${BLOCK_HASH.slice(-4)}) was reorganised away (it left the canonical chain); the earlier pending alert for this match no longer holds.`,
    );
    expect(retractionLine(transfer)).toBe("");
  });

  it("names the replacing block the match stage found, or says none had replaced it yet", () => {
    const by = "0x5b1c7d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80910209fa";
    const replaced = { ...removed, replacedBy: { number: 123, hash: by } };
    const text = `RETRACTED: block 123 (${BLOCK_HASH.slice(0, 6)}…${BLOCK_HASH.slice(-4)}) was reorganised away and replaced by block 123 (0x5b1c…09fa); the earlier pending alert for this match no longer holds.`;
    expect(retractionLine(replaced)).toBe(text);
    expect(retractionLine({ ...removed, replacedBy: { number: 123, hash: null } })).toBe(
      `RETRACTED: block 123 (${BLOCK_HASH.slice(0, 6)}…${BLOCK_HASH.slice(-4)}) was reorganised away; no block had replaced it at height 123 yet; the earlier pending alert for this match no longer holds.`,
    );
    // Every channel's default and templated message carries it.
    expect(slackBody(replaced, slack).text).toContain("replaced by block 123 (0x5b1c…09fa)");
    expect(discordBody(replaced, { template: "{alert.status}" }).content).toContain("replaced by block 123 (0x5b1c…09fa)");
    expect(telegramBody(replaced, { chatId: "1" }).text).toContain("replaced by block 123 (0x5b1c…09fa)");
    expect(emailMessage(replaced).text).toContain("replaced by block 123 (0x5b1c…09fa)");
  });

  it("default messages start with it", () => {
    expect(slackBody(removed, slack).text.split("\n")[0]).toBe(`*${line}*`);
    expect(discordBody(removed, {}).content.split("\n")[0]).toBe(`**${line}**`);
    expect(telegramBody(removed, { chatId: "1" }).text.split("\n")[0]).toBe(line);
    const m = emailMessage(removed);
    expect(m.subject).toBe("[chainsift] RETRACTED (removed): Big USDT — Transfer in block 123");
    expect(m.text.split("\n")[0]).toBe(line);
    expect(m.html).toContain(`<p><strong>${line}</strong></p>`);
  });

  it("custom templates are prefixed with it, so a template that ignores the status still reads as a retraction", () => {
    const t = "{amount.value} moved";
    expect(slackBody(removed, { ...slack, template: t }).text).toBe(`*${line}*\n250000 USDT moved`);
    expect(discordBody(removed, { template: t }).content).toBe(`**${line}**\n250000 USDT moved`);
    expect(telegramBody(removed, { chatId: "1", template: t }).text).toBe(`${line}\n250000 USDT moved`);
    const m = emailMessage(removed, { subject: t, template: t });
    expect(m.subject).toBe("RETRACTED: 250000 USDT moved");
    expect(m.text).toBe(`${line}\n250000 USDT moved\n`);
  });
});

describe.skipIf(!hasMainnetFixtures())("token amounts of real mainnet events (fixtures, the real decoder)", () => {
  it("{amount.<arg>} of every scaled argument is the exact amount in the token list's decimals, with its symbol", () => {
    const { events } = fixtureRecords(loadCompleteBlocks(), createDecoder({ chainId: 1 }));
    let checked = 0;
    const symbols = new Set<string>();
    for (const ev of events) {
      const token = lookupToken(ev.address.toLowerCase(), 1);
      const amounts = tokenAmounts(ev as unknown as Record<string, unknown>);
      for (const arg of ev.args) {
        if (arg.value.scaled === null) continue;
        const exact = formatUnits(BigInt(arg.value.hex), token!.decimals).replace(/\.0$/, "");
        expect(amounts[arg.name], `${ev.transactionHash} ${arg.name}`).toBe(`${exact} ${token!.symbol}`);
        symbols.add(token!.symbol);
        checked++;
      }
    }
    console.log(`token amounts: ${checked} scaled arguments checked, tokens ${[...symbols].sort().join(", ")}`);
    expect(symbols).toContain("USDT");
    expect(symbols).toContain("WETH");
  });

  it("a real USDT Transfer renders with its explorer link", () => {
    const { events } = fixtureRecords(loadCompleteBlocks(), createDecoder({ chainId: 1 }));
    const ev = events.find((e) => e.address.toLowerCase() === USDT && e.event === "Transfer" && e.args[2]?.value.scaled !== null)!;
    const a = sampleAlert({ entity: ev as unknown as Record<string, unknown>, blockNumber: ev.blockNumber.num, blockHash: ev.blockHash });
    const text = telegramBody(a, { chatId: "1", template: "{amount.value} to {args.1.value.hex} {explorer.tx}" }).text;
    const exact = formatUnits(BigInt(ev.args[2]!.value.hex), 6).replace(/\.0$/, "");
    expect(text).toBe(`${exact} USDT to ${ev.args[1]!.value.hex} https://etherscan.io/tx/${ev.transactionHash}`);
  });
});
