/**
 * Retractions people can see, end to end on anvil: a transfer matches a rule with Discord,
 * Telegram and e-mail actions (pending alerts on), its block is reorganised away (`anvil_reorg`)
 * before confirmation, and the `removed` alert edits the Discord and Telegram messages (local
 * receivers of the API calls, test/support/chat-receivers.ts) and answers the first e-mail in its
 * thread (the local SMTP server); every retraction names the block that replaced the orphaned one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { type ChatReceivers, startChatReceivers } from "../support/chat-receivers.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";
import { type SmtpReceiver, startSmtpReceiver } from "../support/smtp.js";

const up = await probeStack();
const TOKENS = { telegram: "123456789:AAH-e2e-retract", slack: "xoxb-e2e" };

describe.skipIf(!up.ok)("a reorg edits the Discord and Telegram messages and threads the e-mail (anvil)", () => {
  let env: AnvilEnv;
  let chat: ChatReceivers;
  let smtp: SmtpReceiver;

  beforeAll(async () => {
    env = await startAnvilEnv({
      traces: false,
      match: () => ({ reloadIntervalMs: 500 }),
      prepare: async (h, onStop) => {
        chat = await startChatReceivers(TOKENS);
        smtp = await startSmtpReceiver();
        onStop(() => chat.close());
        onStop(() => smtp.close());
        h.config.notify = {
          ...h.config.notify,
          telegramBotToken: TOKENS.telegram,
          telegramApiUrl: chat.telegramApiUrl,
          smtpUrl: smtp.url,
          mailFrom: "chainsift <alerts@chainsift.test>",
        };
      },
    });
  }, 180_000);

  afterAll(async () => {
    await env?.stop();
  });

  it("pending posts, then the reorg turns each message into a retraction", async () => {
    const to = env.devAccounts[5]!;
    const input = tokenTransferRule({
      name: "visible retraction",
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount: 3,
      url: env.hook("unused"),
      to,
    });
    input.config.alerts = [
      { type: "Discord", parameters: { url: chat.discordUrl, template: "{alert.status}: block {alert.blockNumber}" } },
      { type: "Telegram", parameters: { chatId: "-1001234567890", template: "{alert.status}: block {alert.blockNumber}" } },
      { type: "Email", parameters: { recipients: ["ops@example.com"] } },
    ];
    const rule = await env.rules.create("acc-e2e", input);
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);

    await env.transfer(to, 7_000_000n);
    await env.mine(1);
    await waitFor(async () => chat.messages.length >= 2 && smtp.mails.length >= 1, 30_000);
    expect(chat.messages.map((m) => m.text.split(":")[0])).toEqual(expect.arrayContaining(["pending", "pending"]));

    const height = Number(((await env.rpc("eth_getBlockByNumber", ["latest", false])) as { number: string }).number);
    await env.rpc("anvil_reorg", [1, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(3);
    await waitFor(async () => chat.messages.every((m) => m.history.length === 1) && smtp.mails.length >= 2, 30_000);

    expect(chat.messages.map((m) => m.service).sort()).toEqual(["discord", "telegram"]); // edited, nothing new posted
    // The retraction names the block that took the orphaned one's place (the node's block at that height now).
    const now = ((await env.rpc("eth_getBlockByNumber", [`0x${height.toString(16)}`, false])) as { hash: string }).hash.toLowerCase();
    const named = `replaced by block ${height} (${now.slice(0, 6)}…${now.slice(-4)})`;
    for (const m of chat.messages) {
      expect(m.history[0]).toMatch(/^pending: block \d+$/);
      expect(m.text).toMatch(/RETRACTED: block \d+ \(0x[0-9a-f]{4}…[0-9a-f]{4}\) was reorganised away/);
      expect(m.text).toContain(named);
    }
    const [first, retraction] = smtp.mails;
    expect(retraction!.headers.get("in-reply-to")).toBe(first!.messageId);
    expect(retraction!.subject).toBe(`Re: ${first!.subject}`);
    expect(retraction!.text).toMatch(/RETRACTED/);
    expect(retraction!.text).toContain(named);
  }, 120_000);
});
