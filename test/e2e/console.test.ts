/**
 * The web console (docs/console.md) in a real browser: Debian's Chromium (scripts/browser.sh
 * installs it) driven by playwright-core, against `npm start -- --no-stack` (two embedded anvil
 * chains with ERC-20 traffic, every stage, one API) over the real Kafka, schema registry,
 * Elasticsearch and Redis. Every answer the console shows is compared with the API's own answer
 * to the same request, made by the test with fetch:
 * - sign-in: a wrong token shows the API's 401 message; the right one opens the chains page;
 * - chains: both embedded chains, with a head that moves, and their consumer health (GET /chains/health/:
 *   a lag column per stage of the API's answer, the dead letters the API counts); the console's answers carry the CSP and
 *   the page logs no CSP violation;
 * - search: the rows of the table are the API's hits for the same body, page 2 (search_after) too;
 *   the editor completes field names; a docs/api.md example fills kind and body;
 *   the NDJSON export (written into a file through the File System Access API) and the CSV export
 *   (the fallback: a download) hold every match (`size: -1`); a transaction hash opens its page with its events;
 * - charts: the records chart has as many points as the aggregation answered buckets; the token's
 *   value moved per day (a nested aggregation) shows the sums the API answered;
 * - rules: a refused URL is shown next to its field with the API's code; a rule built with the form
 *   (Event target, Inspect on args with useScaledValue, a Webhook (POST) to a local receiver) is the
 *   JSON the API stores; its backtest preview shows the matches of `POST /alerting/rules/test/`; once
 *   saved it fires on the chain's traffic and the delivery appears on the deliveries page;
 * - ABIs: a refused ABI shows the API's code and path at the ABI field, a registered one is listed;
 *   accounts (admin token): a created account is listed, a token issued to it opens the API;
 * - axe-core finds no serious or critical violation on any page.
 * Screenshots of every page go to test/e2e/console-screenshots/ (gitignored; docs/console/ has copies).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import axe from "axe-core";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../../console/build.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { type NpmStart, npmStartEnv, startNpmStart } from "../support/npm-start.js";

const up = await probeStack();

const TOKEN = "console-e2e-token";
const ADMIN_TOKEN = "console-e2e-admin-token";
const CHAIN = "ethereum/ethereum/anvil";
const SEARCH_PATH = `/${CHAIN}/es`;
/** Where the run's screenshots go (gitignored). */
const SHOTS = join(import.meta.dirname, "console-screenshots");

interface Hit {
  _id: string;
  _source: Record<string, unknown>;
  sort?: unknown[];
}
interface Answer {
  hits: { total: number; hits: Hit[] };
  aggregations?: Record<string, { buckets: unknown[] }>;
}

describe.skipIf(!up.ok)("the web console in Chromium", () => {
  let h: Harness;
  let app: NpmStart | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let receiver: Server;
  const received: Array<{ url: string; body: Record<string, unknown> }> = [];
  const cspViolations: string[] = [];
  const axeFindings: Record<string, string[]> = {};
  let stage = "start";

  const api = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${app?.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };

  /** Runs axe-core in the page; keeps the serious and critical violations of `name`; takes its screenshot. */
  const check = async (name: string): Promise<void> => {
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    stage = `axe on ${name}`;
    await page.evaluate(axe.source);
    const result = (await page.evaluate(() =>
      (globalThis as unknown as { axe: { run: (o: unknown) => Promise<unknown> } }).axe.run({ resultTypes: ["violations"] }),
    )) as { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown }> }> };
    axeFindings[name] = result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.map((n) => n.target).slice(0, 3))}`);
    stage = `after ${name}`;
  };

  /** Replaces the query editor's text (CodeMirror 6: select all, then insert the text at once). */
  const setEditor = async (text: string): Promise<void> => {
    await page.locator(".cm-content").click();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(text);
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await buildConsole();
    const executablePath = execFileSync("bash", [join(import.meta.dirname, "../../scripts/browser.sh")], { encoding: "utf8" }).trim();
    receiver = createServer((req, res) => {
      let data = "";
      req.on("data", (d: Buffer) => {
        data += d.toString();
      });
      req.on("end", () => {
        received.push({ url: req.url ?? "", body: data ? (JSON.parse(data) as Record<string, unknown>) : {} });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    h = createHarness();
    app = await startNpmStart(
      npmStartEnv(h.config, TOKEN, { CHAINSIFT_NOTIFY_ALLOWLIST: "127.0.0.1", CHAINSIFT_ADMIN_TOKEN: ADMIN_TOKEN }),
    );
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    page.on("console", (m) => {
      if (/Content[- ]Security[- ]Policy/i.test(m.text()))
        cspViolations.push(`${stage} ${page.url()}: ${m.text()} ${JSON.stringify(m.location())}`);
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    receiver?.close();
    await h?.cleanup();
  }, 90_000);

  it("signs in, shows the chains, searches, exports, charts, builds, backtests and saves a rule, and shows its deliveries", async () => {
    const base = app?.apiUrl as string;
    // The console's files: public, with the strict CSP.
    const index = await page.goto(`${base}/console/`);
    expect(index?.status()).toBe(200);
    const csp = index?.headers()["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");

    // A wrong token: the API's 401 message.
    const wrong = await fetch(`${base}/chains/`, { headers: { authorization: "Bearer wrong-token" } });
    const wrongBody = (await wrong.json()) as { error: { code: string; message: string } };
    expect(wrong.status).toBe(401);
    await page.fill("#token", "wrong-token");
    await check("signin");
    await page.click("button[type=submit]");
    await expect.poll(() => page.locator("#signin-error").textContent()).toContain(wrongBody.error.message);
    expect(await page.locator("#signin-error").textContent()).toContain(wrongBody.error.code);
    // The token is in no URL.
    expect(page.url()).not.toContain("wrong-token");

    // The right token: the chains page, both chains, a head that moves.
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForSelector(`#chains tr[data-chain="${CHAIN}"]`);
    const chainsListed = await page.locator("#chains tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-chain")));
    const apiChains = await api<{ chains: Array<{ technology: string; blockchain: string; network: string }> }>("GET", "/chains/");
    expect(chainsListed).toEqual(apiChains.body.chains.map((c) => `${c.technology}/${c.blockchain}/${c.network}`));
    expect(chainsListed).toEqual([CHAIN, "ethereum/ethereum/anvil-l2"]);
    const headCell = page.locator(`#chains tr[data-chain="${CHAIN}"] td.head`);
    await expect.poll(async () => Number(await headCell.textContent()), { timeout: 60_000 }).toBeGreaterThan(0);
    const firstHead = Number(await headCell.textContent());
    await expect.poll(async () => Number(await headCell.textContent()), { timeout: 60_000 }).toBeGreaterThan(firstHead);
    expect(page.url()).not.toContain(TOKEN);
    // Consumer health (GET /chains/health/, what chainsift status shows): both chains, one column per
    // stage of the API's answer, the decode group's lag a number once it committed, the dead letters the API's.
    type Health = { chains: Array<{ groups: Array<{ stage: string }>; deadLettersLastHour: number | null }> };
    const health = await api<Health>("GET", "/chains/health/");
    expect(health.status).toBe(200);
    await page.waitForSelector(`#chains-health tr[data-chain="${CHAIN}"]`);
    const healthRows = await page.locator("#chains-health tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-chain")));
    expect(healthRows).toEqual(chainsListed);
    const healthCols = await page.locator("#chains-health thead th").allTextContents();
    expect(healthCols).toEqual(["Chain", ...(health.body.chains[0]?.groups ?? []).map((g) => `${g.stage} lag`), "Dead letters (1 h)"]);
    const decodeLag = page.locator(`#chains-health tr[data-chain="${CHAIN}"] td[data-stage=decode]`);
    await expect.poll(async () => /^\d+$/.test((await decodeLag.textContent()) ?? ""), { timeout: 30_000 }).toBe(true);
    const deadLetters = async () => (await api<Health>("GET", "/chains/health/")).body.chains[0]?.deadLettersLastHour ?? "–";
    await expect
      .poll(
        async () =>
          (await page.locator(`#chains-health tr[data-chain="${CHAIN}"] td.dead-letters`).textContent()) === String(await deadLetters()),
      )
      .toBe(true);
    await check("chains");

    // Enough indexed history for the searches below: 12 blocks with Transfer events.
    const upTo = await waitFor(async () => {
      const a = await api<Answer>("POST", `${SEARCH_PATH}/event/search/`, { size: 1, sort: [{ "blockNumber.num": "desc" }] });
      const n = (a.body.hits.hits[0]?._source.blockNumber as { num: number } | undefined)?.num ?? 0;
      return n >= 12 ? n : undefined;
    }, 120_000);

    // Search: the table shows the API's hits for the same body, and page 2 is the API's search_after page.
    const body = {
      query: { bool: { filter: [{ term: { "event.raw": "Transfer" } }, { range: { "blockNumber.num": { lte: upTo } } }] } },
      sort: [{ "blockNumber.num": "asc" }, { "logIndex.num": "asc" }],
      size: 5,
    };
    await page.click("a[href='#/search']");
    await page.waitForSelector(".cm-content");
    await page.selectOption("#search-chain", CHAIN);
    await page.selectOption("#search-kind", "event");
    await setEditor(JSON.stringify(body));
    await page.click("#search-run");
    await page.waitForSelector("#search-results tbody tr");
    const rowIds = () => page.locator("#search-results tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")));
    const page1 = await api<Answer>("POST", `${SEARCH_PATH}/event/search/`, body);
    expect(page1.body.hits.hits.length).toBe(5);
    expect(await rowIds()).toEqual(page1.body.hits.hits.map((x) => x._id));
    const after = page1.body.hits.hits[4]?.sort;
    const page2 = await api<Answer>("POST", `${SEARCH_PATH}/event/search/`, { ...body, search_after: after });
    await page.click("#search-next");
    await expect.poll(rowIds).toEqual(page2.body.hits.hits.map((x) => x._id));
    await check("search");

    // Export: every match of the body (size -1), one NDJSON line each.
    const all = await api<Answer>("POST", `${SEARCH_PATH}/event/search/`, { ...body, size: -1 });
    expect(all.body.hits.hits.length).toBe(all.body.hits.total);
    expect(all.body.hits.total).toBeGreaterThan(5);
    // NDJSON through the File System Access API (console/src/save.ts writes batch by batch into the
    // chosen file): a test cannot click a native save dialog, so the picker answers a real file of
    // the browser's origin-private file system (the same FileSystemFileHandle/createWritable), read back after.
    // (Page code as strings: the test's TypeScript has no DOM library.)
    await page.evaluate(
      "window.showSaveFilePicker = async (o) => (await navigator.storage.getDirectory()).getFileHandle(o.suggestedName, { create: true })",
    );
    await page.click("#export-ndjson");
    await page.waitForSelector("#export-status:has-text('exported as NDJSON')");
    const written = (await page.evaluate(
      '(async () => (await (await (await navigator.storage.getDirectory()).getFileHandle("event.ndjson")).getFile()).text())()',
    )) as string;
    const exported = written
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as Hit)._id);
    expect(exported.sort()).toEqual(all.body.hits.hits.map((x) => x._id).sort());
    // CSV without that API (Firefox, Safari): a Blob built batch by batch, offered as a download.
    await page.evaluate('Object.defineProperty(window, "showSaveFilePicker", { value: undefined, configurable: true, writable: true })');
    const [csvDownload] = await Promise.all([page.waitForEvent("download"), page.click("#export-csv")]);
    const csv = readFileSync((await csvDownload.path()) as string, "utf8")
      .trim()
      .split("\r\n");
    expect(csv[0]).toBe("_id,blockNumber,event,address,transactionHash,args");
    expect(
      csv
        .slice(1)
        .map((l) => l.split(",")[0])
        .sort(),
    ).toEqual(all.body.hits.hits.map((x) => x._id).sort());

    // A transaction hash opens the transaction with its events.
    const firstTx = page2.body.hits.hits[0]?._source.transactionHash as string;
    await page.locator(`#search-results a.hash[title="${firstTx}"]`).first().click();
    await page.waitForSelector("table[data-related=Events] tbody tr");
    const txEvents = await api<Answer>("POST", `${SEARCH_PATH}/event/search/`, {
      query: { term: { transactionHash: firstTx } },
      size: 1000,
    });
    expect(await page.locator("table[data-related=Events] tbody tr").count()).toBe(txEvents.body.hits.hits.length);
    expect(await page.locator("h1").textContent()).toContain("Transaction");
    await check("record");

    // Field names complete from the mapping; the docs/api.md examples are one click away.
    await page.click("a[href='#/search']");
    await page.waitForSelector(".cm-content");
    await setEditor('{"query": {"exists": {"field": ');
    await page.keyboard.type('"blockN');
    const completion = page.locator(".cm-tooltip-autocomplete");
    await expect.poll(() => completion.textContent(), { timeout: 10_000 }).toContain("blockNumber.num");
    await page.keyboard.press("Escape");
    await page.selectOption("#search-example", { label: "Transactions in a block range, highest block first" });
    expect(await page.locator("#search-kind").inputValue()).toBe("tx");
    expect(await page.locator(".cm-content").textContent()).toContain('"blockNumber.num"');

    // Charts: as many points as the aggregation has buckets.
    await page.click("a[href='#/charts']");
    await page.selectOption("#chart-kind", "event");
    await page.selectOption("#chart-granularity", "block");
    const [aggAnswer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`${SEARCH_PATH}/event/search/`) && r.request().method() === "POST"),
      page.click("#chart-draw"),
    ]);
    const buckets = ((await aggAnswer.json()) as Answer).aggregations?.per?.buckets ?? [];
    expect(buckets.length).toBeGreaterThan(0);
    await expect.poll(() => page.locator("#chart-records").getAttribute("data-points")).toBe(String(buckets.length));
    await expect.poll(() => page.locator("#chart-records canvas").count()).toBeGreaterThan(0);
    // Value moved per day of the embedded token (CST): a nested aggregation; each point the sum the API answered.
    const token = page2.body.hits.hits[0]?._source.address as string;
    await page.fill("#moved-token", token);
    const [movedAnswer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith(`${SEARCH_PATH}/event/search/`) && r.request().method() === "POST"),
      page.click("#moved-draw"),
    ]);
    const movedBuckets = (((await movedAnswer.json()) as Answer).aggregations?.per?.buckets ?? []) as Array<{
      args: { value: { sum: { value: number } } };
    }>;
    expect(movedBuckets.length).toBeGreaterThan(0);
    expect(movedBuckets.every((b) => b.args.value.sum.value > 0)).toBe(true);
    await expect.poll(() => page.locator("#chart-moved").getAttribute("data-points")).toBe(String(movedBuckets.length));
    const shownSums = await page.locator("#chart-moved + details tbody tr td:nth-child(2)").allTextContents();
    expect(shownSums.map(Number)).toEqual(movedBuckets.map((b) => b.args.value.sum.value));
    await check("charts");

    // Rules: build the rule with the form.
    const list = await api<{ id: string }>("POST", "/alerting/watchlists/", { name: "console hot wallets", kind: "address" });
    expect(list.status).toBe(201);
    await page.click("a[href='#/rules']");
    await page.waitForSelector("#rule-form");
    const hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const field = (path: string) => page.locator(`[data-path="${path}"]`);
    await field("name").fill("console: CST transfer > 1");
    await field("config.targetType").selectOption("Event");
    // An In watchlist condition offers the account's watchlists by name (the rule keeps the id); then back to Equals.
    await field("config.targetMap[0].operator").selectOption("In watchlist");
    expect(await field("config.targetMap[0].value").getAttribute("list")).toBe("cs-watchlists");
    await expect
      .poll(() =>
        page.locator("#cs-watchlists option").evaluateAll((os) => os.map((o) => [o.getAttribute("value"), o.getAttribute("label")])),
      )
      .toEqual([[list.body.id, "console hot wallets (address)"]]);
    await field("config.targetMap[0].value").fill(list.body.id);
    await check("rules-watchlist");
    await field("config.targetMap[0].operator").selectOption("Equals");
    await field("config.targetMap[0].name").fill("event");
    await field("config.targetMap[0].value").fill("Transfer");
    await page.locator(".add-condition[data-level='1']").click();
    await field("config.targetMap[1].name").fill("args");
    await field("config.targetMap[1].operator").selectOption("Inspect");
    await field("config.targetMap[1].operatorParameters[0].name").fill("name");
    await field("config.targetMap[1].operatorParameters[0].value").fill("value");
    await page.locator(".add-condition[data-level='2']").click();
    await field("config.targetMap[1].operatorParameters[1].name").fill("value");
    await field("config.targetMap[1].operatorParameters[1].operator").selectOption("Greater");
    await field("config.targetMap[1].operatorParameters[1].value").fill("1");
    await field("config.targetMap[1].operatorParameters[1].useScaledValue").check();
    await field("config.alerts[0].type").selectOption("Webhook (POST)");
    await page.locator(".add-payload").first().click();
    await field("config.alerts[0].payload[0].fieldName").fill("transactionHash");

    // A refused field: a URL that is no URL, shown next to its field with the API's code.
    await field("config.alerts[0].parameters.url").fill("not a url");
    const refusedBody = JSON.parse((await page.locator("#rule-json").textContent()) as string) as Record<string, unknown>;
    const refused = await api<{ errors: Array<{ code: string; path: string }> }>("POST", "/alerting/rules/", refusedBody);
    expect(refused.status).toBe(400);
    const urlProblem = refused.body.errors.find((e) => e.path === "config.alerts[0].parameters.url");
    expect(urlProblem?.code).toBe("CS_RULE_ALERT_PARAMETERS");
    await page.click("#rule-save");
    const shown = page.locator('[data-error-path="config.alerts[0].parameters.url"]');
    await expect.poll(() => shown.textContent()).toContain(urlProblem?.code as string);
    await check("rules-refused");

    await field("config.alerts[0].parameters.url").fill(`${hookBase}/hook/{transactionHash}`);
    const sent = JSON.parse((await page.locator("#rule-json").textContent()) as string) as Record<string, unknown>;
    expect(sent.config).toMatchObject({
      targetType: "Event",
      targetMap: [
        { name: "event", operator: "Equals", value: "Transfer" },
        {
          name: "args",
          operator: "Inspect",
          operatorParameters: [
            { name: "name", operator: "Equals", value: "value" },
            { name: "value", operator: "Greater", value: "1", useScaledValue: true },
          ],
        },
      ],
      alerts: [
        {
          type: "Webhook (POST)",
          parameters: { url: `${hookBase}/hook/{transactionHash}` },
          payload: [{ fieldType: "Field", fieldName: "transactionHash" }],
        },
      ],
    });

    // Backtest preview over a fixed range: the matches of POST /alerting/rules/test/.
    await page.fill("#backtest-from", "1");
    await page.fill("#backtest-to", String(upTo));
    await page.click("#rule-backtest");
    await expect.poll(() => page.locator("#backtest-summary").textContent(), { timeout: 60_000 }).toContain("complete: true");
    const previewed = await page
      .locator("#backtest-matches tbody tr")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-entity")));
    const tested = await fetch(`${base}/alerting/rules/test/`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ rule: sent, from: 1, to: upTo }),
    });
    expect(tested.status).toBe(200);
    const lines = (await tested.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; entityId?: string });
    const matches = lines.filter((l) => l.type === "match").map((l) => l.entityId);
    expect(matches.length).toBeGreaterThan(0);
    expect(previewed).toEqual(matches);
    await check("rules-backtest");

    // Save: the API stores exactly the JSON the form showed.
    await page.click("#rule-save");
    await expect.poll(() => page.locator("#rule-saved").textContent()).toMatch(/Saved rule [0-9a-f-]{36}/);
    const ruleId = /Saved rule ([0-9a-f-]{36})/.exec((await page.locator("#rule-saved").textContent()) as string)?.[1] as string;
    const stored = await api<Record<string, unknown>>("GET", `/alerting/rules/${ruleId}/`);
    expect(stored.status).toBe(200);
    const { id, accountId, version, createdAt, updatedAt, ...storedBody } = stored.body;
    expect({ id, version }).toEqual({ id: ruleId, version: 1 });
    expect([accountId, createdAt, updatedAt].every((v) => typeof v === "string")).toBe(true);
    expect(storedBody).toEqual(sent);

    // It fires on the chain's traffic; the delivery shows on the deliveries page.
    const alert = await waitFor(async () => received.find((r) => r.body.ruleId === ruleId), 120_000);
    expect(alert.url).toMatch(/^\/hook\/0x[0-9a-f]{64}$/);
    await page.goto(`${base}/console/#/deliveries/${ruleId}`);
    const row = page.locator(`#deliveries tr[data-alert-id="${alert.body.id as string}"]`).first();
    await row.waitFor({ timeout: 30_000 });
    expect(await row.locator("td.result").textContent()).toBe("delivered");
    await check("deliveries");
    await page.goto(`${base}/console/#/rules`);
    await page.waitForSelector(`#rules tr[data-rule-id="${ruleId}"]`);
    await check("rules");

    // ABIs: a refused ABI shows the API's code at the ABI field; a registered one is listed as GET /abis/ lists it.
    await page.click("a[href='#/admin']");
    const address = "0x00000000000000000000000000000000000c0501";
    const badAbi = [{ type: "event", name: "Ping", inputs: [{ name: "n", type: "uint257" }] }];
    const badAnswer = await api<{ errors: Array<{ code: string; path: string }> }>("PUT", `/abis/${address}`, { abi: badAbi });
    expect(badAnswer.status).toBe(400);
    await page.fill("#abi-form [data-path=address]", address);
    await page.fill("#abi-form [data-path=abi]", JSON.stringify(badAbi));
    await page.click("#abi-register");
    const abiError = page.locator('#abi-form [data-error-path="abi"]');
    await expect.poll(() => abiError.textContent()).toContain(badAnswer.body.errors[0]?.code as string);
    expect(await abiError.textContent()).toContain(badAnswer.body.errors[0]?.path as string);
    await page.fill("#abi-form [data-path=name]", "console ping");
    await page.fill(
      "#abi-form [data-path=abi]",
      JSON.stringify([{ type: "event", name: "Ping", inputs: [{ name: "n", type: "uint256" }] }]),
    );
    await page.click("#abi-register");
    await page.waitForSelector(`#abis tr[data-address="${address}"]`);
    const abis = await api<{ abis: Array<{ address: string }> }>("GET", "/abis/");
    expect(await page.locator("#abis tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-address")))).toEqual(
      abis.body.abis.map((a) => a.address),
    );
    // Accounts, with the admin token: create one, issue it a token that then opens the API.
    await page.fill("#admin-token", ADMIN_TOKEN);
    await page.click("text=Open");
    await page.fill("#account-name", "console e2e account");
    await page.click("#account-create");
    const accountRow = page.locator("#accounts tbody tr", { hasText: "console e2e account" });
    await accountRow.waitFor();
    const accounts = (await (await fetch(`${base}/admin/accounts/`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
      accounts: Array<{ id: string; name: string }>;
    };
    const created = accounts.accounts.find((a) => a.name === "console e2e account");
    expect(await accountRow.getAttribute("data-account-id")).toBe(created?.id);
    await accountRow.locator("text=Issue token").click();
    const issued = /cs_[A-Za-z0-9_-]+/.exec((await page.locator("#token-issued").textContent({ timeout: 10_000 })) ?? "")?.[0] as string;
    expect((await fetch(`${base}/chains/`, { headers: { authorization: `Bearer ${issued}` } })).status).toBe(200);
    expect(page.url()).not.toContain(ADMIN_TOKEN);
    await check("admin");

    expect(cspViolations).toEqual([]);
    expect(axeFindings).toEqual(Object.fromEntries(Object.keys(axeFindings).map((k) => [k, []])));
  }, 480_000);
});
