/**
 * The alerting-rules endpoints (api/routes/rules) over HTTP against the real Redis: a minimal
 * Fastify app (not api/app.ts) with the app's error handler, a tiny authentication hook that maps
 * two static bearer tokens to two account ids (setting `request.account` like api/plugins/auth.ts),
 * `@fastify/swagger` (to check the OpenAPI document), and the rules plugin over a real rule store
 * and delivery log under a unique Redis key prefix. The keys are deleted afterwards (SCAN + DEL,
 * never a flush). Skips with a message when Redis is down.
 */
import { randomUUID } from "node:crypto";
import swagger from "@fastify/swagger";
import fc from "fast-check";
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiError } from "../../../api/errors.js";
import { errorsPlugin } from "../../../api/plugins/errors.js";
import { connectRulesBackends, type RulesBackends } from "../../../api/plugins/rules.js";
import { type RulesRoutesDeps, rulesRoutes } from "../../../api/routes/rules/index.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { Rule } from "../../../lib/rules/model.js";
import { validateRuleInput } from "../../../lib/rules/validate.js";
import type { DeliveryLogEntry } from "../../../pipeline/notify/log.js";
import { createHarness } from "../../support/harness.js";
import { transferAbove } from "../../support/rules.js";
import { schemaArbitrary } from "../../support/schema-arbitrary.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "../accounts/redis.js";

const harness = createHarness();
const url = harness.config.redisUrl;
const prefix = harness.redisPrefix;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

const ANVIL: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
const SEPOLIA: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "sepolia" };
const TOKEN_A = `token-a-${harness.id}`;
const TOKEN_B = `token-b-${harness.id}`;
const ACCOUNT_A = randomUUID();
const ACCOUNT_B = randomUUID();
const ACCOUNTS = new Map([
  [TOKEN_A, ACCOUNT_A],
  [TOKEN_B, ACCOUNT_B],
]);
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A valid POST body: "Transfer of more than 1 CST" on the embedded chain, webhook POST to a local receiver. */
function ruleBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "CST transfer > 1",
    maxConfirmationCount: 2,
    sendPendingAlerts: true,
    state: "enabled",
    ...ANVIL,
    config: {
      targetType: "Event",
      targetMap: transferAbove("0x5FbDB2315678afecb367f032d93F642f64180aa3", "1"),
      alerts: [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1:9999/hook/{transactionHash}" } }],
    },
    ...overrides,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: test bodies are mutated freely, like a client would send them
type Loose = any;

/** `ruleBody()` with `config` changed by `edit` (a deep copy). */
function withConfig(edit: (config: Loose) => void): Record<string, unknown> {
  const body = ruleBody();
  const config: Loose = structuredClone(body.config);
  edit(config);
  return { ...body, config };
}

interface ErrorBody {
  error: { code: string; message: string; path: string | null };
  errors: Array<{ code: string; message: string; path: string | null }>;
}

function entry(sequence: number, at: string): DeliveryLogEntry {
  return {
    alertId: `alert-${sequence}`,
    sequence,
    status: sequence % 2 === 0 ? "confirmed" : "pending",
    actionIndex: 0,
    type: "Webhook (POST)",
    destination: "http://127.0.0.1:9999/hook/0x…",
    ok: true,
    attempts: 1,
    final: true,
    httpStatus: 204,
    at,
  };
}

describe.skipIf(!up)("alerting rules API (real Redis)", () => {
  let app: FastifyInstance;
  let backends: RulesBackends;

  type Method = "GET" | "POST" | "PUT" | "DELETE";
  const call = (method: Method, path: string, token: string | null = TOKEN_A, payload?: unknown): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url: path,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(payload === undefined ? {} : { payload: payload as object }),
    });

  /** Asserts an error answer and returns its body. */
  function expectError(res: LightMyRequestResponse, status: number, code: string, path?: string | null): ErrorBody {
    expect(res.statusCode, res.body).toBe(status);
    const body = res.json<ErrorBody>();
    expect(body.error.code).toBe(code);
    if (path !== undefined) expect(body.error.path).toBe(path);
    expect(body.errors[0]).toEqual(body.error);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    return body;
  }

  /**
   * A second app over other backends where every request acts for `account` (no token), like the
   * main one otherwise; for limits and page sizes other than the main app's.
   */
  async function appFor(backends: RulesBackends, account: string, extra: Partial<RulesRoutesDeps> = {}): Promise<FastifyInstance> {
    const other = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
    await other.register(errorsPlugin);
    other.decorateRequest("account", null);
    other.addHook("onRequest", async (request) => {
      (request as unknown as { account: unknown }).account = { id: account, tokenId: "t", static: false };
    });
    await other.register(rulesRoutes({ rules: backends.rules, deliveries: backends.deliveries, chains: [ANVIL], ...extra }));
    return other;
  }

  async function create(token = TOKEN_A, overrides: Record<string, unknown> = {}): Promise<Rule> {
    const res = await call("POST", "/alerting/rules/", token, ruleBody(overrides));
    expect(res.statusCode, res.body).toBe(201);
    return res.json<Rule>();
  }

  beforeAll(async () => {
    backends = await connectRulesBackends({ redisUrl: url, redisKeyPrefix: prefix });
    app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
    await app.register(errorsPlugin);
    app.decorateRequest("account", null);
    // Mimics api/plugins/auth.ts: a bearer token → request.account = {id, tokenId, static}; else 401.
    app.addHook("onRequest", async (request) => {
      const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "")?.[1];
      const id = token === undefined ? undefined : ACCOUNTS.get(token);
      if (!id) throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required: Authorization: Bearer <token>");
      (request as unknown as { account: unknown }).account = { id, tokenId: `tok-${id}`, static: false };
    });
    await app.register(swagger, { openapi: { openapi: "3.1.0", info: { title: "test", version: "0" } } });
    await app.register(rulesRoutes({ rules: backends.rules, deliveries: backends.deliveries, chains: [ANVIL, SEPOLIA] }));
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await backends?.close();
    await harness.es.close();
    if (up) {
      await deletePrefix(url, prefix);
      expect(await keysOf(url, prefix)).toEqual([]);
    }
  });

  it("POST creates a rule: 201, UUID id, version 1, defaults, extra top-level properties kept, Location", async () => {
    const body = ruleBody({ labels: { team: "risk", tier: 1 }, id: "mine", accountId: "someone-else", version: 7 });
    delete body.state;
    delete body.sendPendingAlerts;
    const res = await call("POST", "/alerting/rules/", TOKEN_A, body);
    expect(res.statusCode, res.body).toBe(201);
    const rule = res.json<Rule>();
    expect(rule.id).toMatch(UUID_V4);
    expect(rule).toMatchObject({
      accountId: ACCOUNT_A,
      name: "CST transfer > 1",
      maxConfirmationCount: 2,
      ...ANVIL,
      version: 1,
      state: "enabled",
      sendPendingAlerts: false,
      description: null,
      labels: { team: "risk", tier: 1 },
      config: body.config,
    });
    expect(rule.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(rule.updatedAt).toBe(rule.createdAt);
    expect(res.headers.location).toBe(`/alerting/rules/${rule.id}/`);
    // Without the trailing slash too.
    const again = await call("POST", "/alerting/rules", TOKEN_A, ruleBody({ name: "no slash" }));
    expect(again.statusCode, again.body).toBe(201);
  });

  it("coerces nothing and strips nothing: a string where an integer is required is refused", async () => {
    expectError(
      await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ maxConfirmationCount: "3" })),
      400,
      "CS_RULE_INVALID",
      "maxConfirmationCount",
    );
    expectError(
      await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ sendPendingAlerts: "true" })),
      400,
      "CS_RULE_INVALID",
      "sendPendingAlerts",
    );
    // An unknown property inside config is refused (Fastify's default Ajv would have removed it).
    expectError(
      await call(
        "POST",
        "/alerting/rules/",
        TOKEN_A,
        withConfig((c) => (c.extra = 1)),
      ),
      400,
      "CS_RULE_INVALID",
      "config.extra",
    );
  });

  it("accepts an equality operator without value at levels 1 and 2 (the contract requires value only at level 3)", async () => {
    const body = withConfig((c) => {
      c.targetMap[0] = { name: "to", operator: "Equals" };
      c.targetMap[2].operatorParameters[0] = { name: "note", operator: "Equals any", value: null };
    });
    const res = await call("POST", "/alerting/rules/", TOKEN_A, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json<Rule>().config).toEqual(body.config);
    // Ordering operators still need one; so does every operator at level 3.
    expectError(
      await call(
        "POST",
        "/alerting/rules/",
        TOKEN_A,
        withConfig((c) => (c.targetMap[0] = { name: "blockNumber", operator: "Greater" })),
      ),
      400,
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    );
  });

  it("refuses a rule body over 64 KiB with 413 CS_RULE_TOO_LARGE (POST and PUT), e.g. the reported rule of 200 KB name, 500 KB extras, 50 KB URL", async () => {
    const huge = ruleBody({
      name: "n".repeat(200_000),
      ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`pad${i}`, "p".repeat(10_000)])),
    });
    (huge.config as Loose).alerts[0].parameters.url = `https://hooks.example.com/${"u".repeat(50_000)}`;
    expect(JSON.stringify(huge).length).toBeGreaterThan(700_000);
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, huge), 413, "CS_RULE_TOO_LARGE", null);
    const rule = await create();
    expectError(await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { note: "x".repeat(65_536) }), 413, "CS_RULE_TOO_LARGE");
    // Just under the limit is judged on its content (here: the description cap).
    const under = ruleBody({ description: "d".repeat(60_000) });
    expect(Buffer.byteLength(JSON.stringify(under))).toBeLessThan(65_536);
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, under), 400, "CS_RULE_TOO_LONG", "description");
  });

  it("refuses over-long strings (CS_RULE_TOO_LONG with the field's path) and a 21st extra property (CS_RULE_EXTRA_PROPERTIES)", async () => {
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ name: "n".repeat(257) })), 400, "CS_RULE_TOO_LONG", "name");
    expectError(
      await call(
        "POST",
        "/alerting/rules/",
        TOKEN_A,
        withConfig((c) => (c.alerts[0].parameters.url = `http://127.0.0.1:9999/${"u".repeat(2048)}`)),
      ),
      400,
      "CS_RULE_TOO_LONG",
      "config.alerts[0].parameters.url",
    );
    const extras = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x${i}`, i]));
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, ruleBody(extras(21))), 400, "CS_RULE_EXTRA_PROPERTIES", "x20");
    // PUTs merge extra properties: the merged rule is held to the same limit.
    const rule = await create(TOKEN_A, extras(20));
    const put = await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { x0: "replaced" });
    expect(put.statusCode, put.body).toBe(200);
    expectError(await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { y: 1 }), 400, "CS_RULE_EXTRA_PROPERTIES", "y");
    // A fetched rule (every service field + 20 extras) can be PUT back.
    const fetched = (await call("GET", `/alerting/rules/${rule.id}/`)).json<Rule>();
    const back = await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, fetched);
    expect(back.statusCode, back.body).toBe(200);
  });

  it("accepts a window or an absence beside config and refuses a bad one with its stable code (issue 33)", async () => {
    const window = { blocks: 10, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "20" };
    const rule = await create(TOKEN_A, { window });
    expect((await call("GET", `/alerting/rules/${rule.id}/`)).json<Rule>().window).toEqual(window);
    const put = await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { window: { ...window, blocks: 20_000 } });
    expectError(put, 400, "CS_RULE_WINDOW_TOO_LARGE", "window.blocks");
    const sum = { ...window, aggregate: { fn: "sum", field: "address" } };
    expectError(
      await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ window: sum })),
      400,
      "CS_RULE_AGGREGATE_NOT_NUMERIC",
      "window.aggregate.field",
    );
    const groups = { ...window, groupBy: "address", maxGroups: 5000 };
    expectError(
      await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ window: groups })),
      400,
      "CS_RULE_GROUPBY_CARDINALITY",
      "window.maxGroups",
    );
    expectError(
      await call("POST", "/alerting/rules/", TOKEN_A, ruleBody({ sequence: { within: { blocks: 10 } } })),
      400,
      "CS_RULE_INVALID",
      "sequence.followedBy",
    );
    const silent = await create(TOKEN_A, { absence: { blocks: 300 } });
    expect((await call("GET", `/alerting/rules/${silent.id}/`)).json<Rule>().absence).toEqual({ blocks: 300 });
    const tooLong = ruleBody({ absence: { blocks: 20_000 } });
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, tooLong), 400, "CS_RULE_WINDOW_TOO_LARGE", "absence.blocks");
  });

  it("limits rules per account: 409 CS_RULE_LIMIT_REACHED (config rules.maxPerAccount)", async () => {
    const limited = await connectRulesBackends({ redisUrl: url, redisKeyPrefix: prefix, rules: { maxPerAccount: 2 } });
    const app2 = await appFor(limited, randomUUID());
    try {
      const post = () => app2.inject({ method: "POST", url: "/alerting/rules/", payload: ruleBody() });
      const first = await post();
      expect(first.statusCode, first.body).toBe(201);
      expect((await post()).statusCode).toBe(201);
      const third = await post();
      expectError(third, 409, "CS_RULE_LIMIT_REACHED", null);
      expect(third.json<ErrorBody>().error.message).toMatch(/2/);
      const del = await app2.inject({ method: "DELETE", url: `/alerting/rules/${first.json<Rule>().id}/` });
      expect(del.statusCode).toBe(204);
      expect((await post()).statusCode).toBe(201);
    } finally {
      await app2.close();
      await limited.close();
    }
  });

  it("GET one rule, with and without trailing slash, any letter case of the id", async () => {
    const rule = await create();
    for (const path of [`/alerting/rules/${rule.id}/`, `/alerting/rules/${rule.id}`, `/alerting/rules/${rule.id.toUpperCase()}/`]) {
      const res = await call("GET", path);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual(rule);
    }
  });

  it("GET list pages through the caller's rules with limit and cursor, oldest first", async () => {
    const created: Rule[] = [];
    for (let i = 0; i < 5; i++) created.push(await create(TOKEN_B, { name: `b${i}` }));
    // Listing order: createdAt, then id (rules created in the same millisecond sort by id, not by creation).
    const made = created
      .map((r) => `${r.createdAt}|${r.id}`)
      .sort()
      .map((m) => m.slice(m.indexOf("|") + 1));
    const seen: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
      const res = await call("GET", `/alerting/rules/${q}`, TOKEN_B);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json<{ rules: Rule[]; nextCursor: string | null }>();
      expect(page.rules.length).toBeLessThanOrEqual(2);
      for (const r of page.rules) expect(r.accountId).toBe(ACCOUNT_B);
      pages.push(page.rules.length);
      seen.push(...page.rules.map((r) => r.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen).toEqual(made);
    // Default page (no query), without the trailing slash.
    const all = await call("GET", "/alerting/rules", TOKEN_B);
    expect(all.json<{ rules: Rule[] }>().rules.map((r) => r.id)).toEqual(made);
    expect(all.json<{ nextCursor: string | null }>().nextCursor).toBeNull();
    // Account A never sees B's rules.
    const a = await call("GET", "/alerting/rules/?limit=500", TOKEN_A);
    expect(a.json<{ rules: Rule[] }>().rules.some((r) => made.includes(r.id))).toBe(false);
  });

  it("GET without parameters lists ALL rules (51 of them, streamed in pages of 20); limit=10 pages through all 51 exactly once", async () => {
    const limited = await connectRulesBackends({ redisUrl: url, redisKeyPrefix: prefix });
    const account = randomUUID();
    const app2 = await appFor(limited, account, { listPageSize: 20 });
    try {
      const created: Rule[] = [];
      for (let i = 0; i < 51; i++) created.push(await limited.rules.create(account, ruleBody({ name: `r${i}` }) as never));
      // Listing order: createdAt, then id (rules created in the same millisecond sort by id).
      const made = created
        .map((r) => `${r.createdAt}|${r.id}`)
        .sort()
        .map((m) => m.slice(m.indexOf("|") + 1));

      for (const path of ["/alerting/rules/", "/alerting/rules", "/alerting/rules/?limit=", "/alerting/rules/?cursor="]) {
        const all = await app2.inject({ method: "GET", url: path });
        expect(all.statusCode, all.body).toBe(200);
        expect(all.headers["content-type"]).toMatch(/^application\/json/);
        expect(all.headers["transfer-encoding"], "streamed, not buffered").toBe("chunked");
        const body = all.json<{ rules: Rule[]; nextCursor: string | null }>();
        expect(Object.keys(body)).toEqual(["rules", "nextCursor"]);
        expect(body.nextCursor).toBeNull();
        expect(body.rules.map((r) => r.id)).toEqual(made);
        expect(body.rules[50]).toEqual(await limited.rules.get(account, made[50]!));
      }

      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor ? `?limit=10&cursor=${encodeURIComponent(cursor)}` : "?limit=10";
        const res = await app2.inject({ method: "GET", url: `/alerting/rules/${q}` });
        expect(res.statusCode, res.body).toBe(200);
        const page = res.json<{ rules: Rule[]; nextCursor: string | null }>();
        sizes.push(page.rules.length);
        seen.push(...page.rules.map((r) => r.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(sizes).toEqual([10, 10, 10, 10, 10, 1]);
      expect(seen).toEqual(made);
      expect(new Set(seen).size).toBe(51);

      // cursor alone: a page of the default size (50) after it.
      const firstTen = (await app2.inject({ method: "GET", url: "/alerting/rules/?limit=10" })).json<{ nextCursor: string }>();
      const rest = (await app2.inject({ method: "GET", url: `/alerting/rules/?cursor=${encodeURIComponent(firstTen.nextCursor)}` })).json<{
        rules: Rule[];
        nextCursor: string | null;
      }>();
      expect(rest.rules.map((r) => r.id)).toEqual(made.slice(10));
      expect(rest.nextCursor).toBeNull();
      // An account without rules: an empty list.
      const none = await call("GET", "/alerting/rules/", TOKEN_A);
      expect(none.statusCode).toBe(200);
    } finally {
      await app2.close();
      await limited.close();
    }
  });

  it("refuses bad page parameters with CS_RULE_INVALID_PAGE and the parameter's path", async () => {
    for (const q of ["limit=0", "limit=501", "limit=abc", "limit=1.5", "limit=-1", "limit=1&limit=2"]) {
      expectError(await call("GET", `/alerting/rules/?${q}`), 400, "CS_RULE_INVALID_PAGE", "querystring.limit");
    }
    expectError(await call("GET", "/alerting/rules/?cursor=not-a-cursor"), 400, "CS_RULE_INVALID_PAGE", "querystring.cursor");
  });

  it("PUT changes fields (version + 1), refuses a stale version with 409, refuses an invalid config with its path", async () => {
    const rule = await create(TOKEN_A, { labels: { keep: true } });
    const put = await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { name: "renamed", version: 1 });
    expect(put.statusCode, put.body).toBe(200);
    const v2 = put.json<Rule>();
    expect(v2).toMatchObject({ id: rule.id, name: "renamed", version: 2, labels: { keep: true }, createdAt: rule.createdAt });
    expect(v2.config).toEqual(rule.config);
    expect((await call("GET", `/alerting/rules/${rule.id}/`)).json()).toEqual(v2);

    const stale = expectError(
      await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { name: "lost", version: 1 }),
      409,
      "CS_RULE_VERSION_CONFLICT",
      "version",
    );
    expect(stale.error.message).toContain("version 2");
    expect((await call("GET", `/alerting/rules/${rule.id}`)).json<Rule>()).toMatchObject({ name: "renamed", version: 2 });

    // A fetched rule can be PUT back (service fields ignored); without version, last write wins.
    const back = await call("PUT", `/alerting/rules/${rule.id}`, TOKEN_A, {
      ...v2,
      version: undefined,
      state: "disabled",
      description: "d",
    });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json<Rule>()).toMatchObject({ version: 3, state: "disabled", description: "d", accountId: ACCOUNT_A });

    const bad = expectError(
      await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, {
        config: { ...rule.config, targetMap: [{ name: "event", operator: "Equals any", value: "Transfer" }] },
      }),
      400,
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    );
    expect(bad.errors.length).toBeGreaterThanOrEqual(1);
    expectError(
      await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { network: "sepolia" }),
      400,
      "CS_RULE_IMMUTABLE_FIELD",
      "network",
    );
    expectError(await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { network: "mainnet" }), 400, "CS_RULE_UNKNOWN_CHAIN", "network");
    expectError(await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { version: "3" }), 400, "CS_RULE_INVALID", "version");
    expect((await call("GET", `/alerting/rules/${rule.id}/`)).json<Rule>().version).toBe(3);
    expectError(await call("PUT", `/alerting/rules/${randomUUID()}/`, TOKEN_A, { name: "x" }), 404, "CS_RULE_NOT_FOUND", "params.rule_id");
  });

  it("DELETE answers 204, then the rule is gone (GET, PUT, DELETE, deliveries: 404)", async () => {
    const rule = await create();
    const del = await call("DELETE", `/alerting/rules/${rule.id}/`);
    expect(del.statusCode, del.body).toBe(204);
    expect(del.body).toBe("");
    expectError(await call("GET", `/alerting/rules/${rule.id}/`), 404, "CS_RULE_NOT_FOUND", "params.rule_id");
    expectError(await call("PUT", `/alerting/rules/${rule.id}/`, TOKEN_A, { name: "x" }), 404, "CS_RULE_NOT_FOUND");
    expectError(await call("DELETE", `/alerting/rules/${rule.id}`), 404, "CS_RULE_NOT_FOUND");
    expectError(await call("GET", `/alerting/rules/${rule.id}/deliveries/`), 404, "CS_RULE_NOT_FOUND");
  });

  it("isolates accounts: another account's rule is 404 for GET, PUT, DELETE and deliveries, never 403", async () => {
    const rule = await create(TOKEN_A);
    const paths = [`/alerting/rules/${rule.id}/`, `/alerting/rules/${rule.id}`];
    for (const p of paths) {
      const answers = [
        await call("GET", p, TOKEN_B),
        await call("PUT", p, TOKEN_B, { name: "hijacked" }),
        await call("PUT", p, TOKEN_B, { name: "hijacked", version: 1 }),
        await call("DELETE", p, TOKEN_B),
        await call("GET", `${p.replace(/\/$/, "")}/deliveries/`, TOKEN_B),
      ];
      for (const res of answers) {
        expect(res.statusCode).not.toBe(403);
        expectError(res, 404, "CS_RULE_NOT_FOUND", "params.rule_id");
      }
    }
    // Same answer as for an id that does not exist at all.
    const missing = await call("GET", `/alerting/rules/${randomUUID()}/`, TOKEN_B);
    expect(missing.statusCode).toBe(404);
    expect((await call("GET", `/alerting/rules/${rule.id}/`, TOKEN_A)).json()).toEqual(rule);
  });

  it("answers 400 CS_RULE_ID_INVALID for a rule_id that is not a UUID", async () => {
    for (const id of ["123", "not-a-uuid", `${randomUUID()}x`, "00000000-0000-0000-0000-00000000000g"]) {
      expectError(await call("GET", `/alerting/rules/${id}/`), 400, "CS_RULE_ID_INVALID", "params.rule_id");
      expectError(await call("PUT", `/alerting/rules/${id}/`, TOKEN_A, { name: "x" }), 400, "CS_RULE_ID_INVALID", "params.rule_id");
      expectError(await call("DELETE", `/alerting/rules/${id}/`), 400, "CS_RULE_ID_INVALID", "params.rule_id");
      expectError(await call("GET", `/alerting/rules/${id}/deliveries/`), 400, "CS_RULE_ID_INVALID", "params.rule_id");
    }
  });

  const refusals: Array<[string, Record<string, unknown> | unknown, string, string | null]> = [
    [
      "11 targetMap items",
      withConfig((c) => {
        c.targetMap = Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, operator: "Equals", value: String(i) }));
      }),
      "CS_RULE_ITEM_COUNT",
      "config.targetMap",
    ],
    ["0 targetMap items", withConfig((c) => (c.targetMap = [])), "CS_RULE_ITEM_COUNT", "config.targetMap"],
    [
      "11 alerts",
      withConfig((c) => {
        c.alerts = Array.from({ length: 11 }, (_, i) => ({ type: "Webhook (GET)", parameters: { url: `https://h.example/${i}` } }));
      }),
      "CS_RULE_ITEM_COUNT",
      "config.alerts",
    ],
    [
      "Equals with an array value",
      withConfig((c) => (c.targetMap[0] = { name: "event", operator: "Equals", value: ["Transfer"] })),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    ],
    [
      "Equals any with a string value",
      withConfig((c) => (c.targetMap[0] = { name: "event", operator: "Equals any", value: "Transfer" })),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    ],
    [
      "Email with a bad recipient",
      withConfig((c) => (c.alerts = [{ type: "Email", parameters: { recipients: ["ops@example.com", "not an address"] } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.recipients[1]",
    ],
    [
      "Slack without channel",
      withConfig((c) => (c.alerts = [{ type: "Slack", parameters: { url: "https://hooks.slack.com/x", text: "t", username: "u" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.channel",
    ],
    [
      "webhook URL not http(s)",
      withConfig((c) => (c.alerts = [{ type: "Webhook (POST)", parameters: { url: "ftp://127.0.0.1/x" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.url",
    ],
    [
      "a {field} template in a webhook URL's host",
      withConfig((c) => (c.alerts = [{ type: "Webhook (GET)", parameters: { url: "http://{transactionHash}.example/x" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.url",
    ],
    [
      "a {field} template in a webhook URL's port",
      withConfig((c) => (c.alerts = [{ type: "Webhook (POST)", parameters: { url: "http://127.0.0.1:{logIndex}/x" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.url",
    ],
    [
      "PagerDuty with a routing key that is not one (issue 35)",
      withConfig((c) => (c.alerts = [{ type: "PagerDuty", parameters: { routingKey: "not-a-key" } }])),
      "CS_RULE_PAGERDUTY_PARAMETERS",
      "config.alerts[0].parameters.routingKey",
    ],
    [
      "Opsgenie with an unknown priority (issue 35)",
      withConfig(
        (c) => (c.alerts = [{ type: "Opsgenie", parameters: { apiKey: "eb243592-faa2-4ba2-a551-1afdf565c889", priority: "P0" } }]),
      ),
      "CS_RULE_OPSGENIE_PARAMETERS",
      "config.alerts[0].parameters.priority",
    ],
    [
      "Teams without url (issue 35)",
      withConfig((c) => (c.alerts = [{ type: "Teams", parameters: { template: "{alert.status}" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.url",
    ],
    ["unknown chain", ruleBody({ network: "mainnet" }), "CS_RULE_UNKNOWN_CHAIN", "network"],
    [
      "Inspect without operatorParameters",
      withConfig((c) => (c.targetMap[2] = { name: "args", operator: "Inspect" })),
      "CS_RULE_OPERATOR_PARAMETERS",
      "config.targetMap[2].operatorParameters",
    ],
    [
      "operatorParameters on Equals",
      withConfig((c) => (c.targetMap[0].operatorParameters = [{ name: "x", operator: "Equals", value: "1" }])),
      "CS_RULE_OPERATOR_PARAMETERS",
      "config.targetMap[0].operatorParameters",
    ],
    [
      "Inspect three levels deep",
      withConfig((c) => {
        c.targetMap[2].operatorParameters[0] = {
          name: "value",
          operator: "Inspect",
          operatorParameters: [{ name: "hex", operator: "Inspect", value: "x" }],
        };
      }),
      "CS_RULE_TOO_DEEP",
      "config.targetMap[2].operatorParameters[0].operatorParameters[0].operator",
    ],
    [
      "useScaledValue at the top level",
      withConfig((c) => (c.targetMap[0].useScaledValue = true)),
      "CS_RULE_INVALID",
      "config.targetMap[0].useScaledValue",
    ],
    [
      "duplicate targetMap item",
      withConfig((c) => c.targetMap.push({ value: "Transfer", operator: "Equals", name: "event" })),
      "CS_RULE_DUPLICATE_ITEM",
      "config.targetMap[3]",
    ],
    [
      "Sub Field payload without subPayloads",
      withConfig((c) => (c.alerts[0].payload = [{ fieldType: "Sub Field", fieldName: "args" }])),
      "CS_RULE_PAYLOAD",
      "config.alerts[0].payload[0].subPayloads",
    ],
    [
      "payload three levels deep",
      withConfig(
        (c) =>
          (c.alerts[0].payload = [
            {
              fieldType: "Sub Field",
              fieldName: "a",
              subPayloads: [{ fieldType: "Sub Field", fieldName: "b", subPayloads: [{ fieldType: "Sub Field", fieldName: "c" }] }],
            },
          ]),
      ),
      "CS_RULE_TOO_DEEP",
      "config.alerts[0].payload[0].subPayloads[0].subPayloads[0].fieldType",
    ],
    ["unknown targetType", withConfig((c) => (c.targetType = "Block")), "CS_RULE_INVALID", "config.targetType"],
    ["state in capitals", ruleBody({ state: "ENABLED" }), "CS_RULE_INVALID", "state"],
    ["negative maxConfirmationCount", ruleBody({ maxConfirmationCount: -1 }), "CS_RULE_INVALID", "maxConfirmationCount"],
    ["missing name", ruleBody({ name: undefined }), "CS_RULE_INVALID", "name"],
    ["a JSON array instead of an object", [ruleBody()], "CS_RULE_INVALID", null],
  ];

  it.each(refusals)("POST refuses %s (code and path)", async (_what, body, code, path) => {
    expectError(await call("POST", "/alerting/rules/", TOKEN_A, body), 400, code, path);
  });

  it("reports every problem of a body, the first as error", async () => {
    const body = withConfig((c) => {
      c.targetMap[0].value = ["Transfer"];
      c.alerts[0].parameters.url = "nope";
    });
    const res = expectError(await call("POST", "/alerting/rules/", TOKEN_A, { ...body, name: 1 }), 400, "CS_RULE_INVALID", "name");
    expect(res.errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_RULE_INVALID", "name"],
      ["CS_RULE_VALUE_TYPE", "config.targetMap[0].value"],
      ["CS_RULE_ALERT_PARAMETERS", "config.alerts[0].parameters.url"],
    ]);
  });

  it("leaves 401, invalid JSON and missing bodies to the app's error handler", async () => {
    expectError(await call("GET", "/alerting/rules/", null), 401, "CS_AUTH_REQUIRED");
    expectError(await call("GET", "/alerting/rules/", "wrong-token"), 401, "CS_AUTH_REQUIRED");
    const broken = await app.inject({
      method: "POST",
      url: "/alerting/rules/",
      headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" },
      payload: '{"name": ',
    });
    expectError(broken, 400, "CS_BODY_INVALID");
    expectError(await call("POST", "/alerting/rules/", TOKEN_A), 400, "CS_RULE_INVALID", null);
  });

  it("answers warnings CS_RULE_TRACES_UNAVAILABLE for a Trace or Call rule when ingest recorded no trace source", async () => {
    const recorded = new Map<string, string | null>();
    const traceSource = async (chain: ChainId) => recorded.get(chain.network) ?? null;
    const other = await appFor(backends, randomUUID(), { traceSource });
    const post = (targetType: string) =>
      other.inject({ method: "POST", url: "/alerting/rules/", payload: withConfig((c) => (c.targetType = targetType)) });
    try {
      // No ingest has run (nothing recorded): no warning, as for a node with traces.
      expect((await post("Call")).json()).not.toHaveProperty("warnings");
      recorded.set("anvil", "debug_traceBlockByNumber");
      expect((await post("Trace")).json()).not.toHaveProperty("warnings");
      for (const source of ["none", "off"]) {
        recorded.set("anvil", source);
        for (const targetType of ["Trace", "Call"]) {
          const res = await post(targetType);
          expect(res.statusCode, res.body).toBe(201);
          const body = res.json<Rule & { warnings: Array<{ code: string; message: string }> }>();
          expect(body.warnings.map((w) => w.code)).toEqual(["CS_RULE_TRACES_UNAVAILABLE"]);
          // The warning is an answer, not stored.
          const stored = await other.inject({ method: "GET", url: `/alerting/rules/${body.id}/` });
          expect(stored.json()).not.toHaveProperty("warnings");
          const put = await other.inject({ method: "PUT", url: `/alerting/rules/${body.id}/`, payload: { name: "renamed" } });
          expect(put.json<{ warnings: unknown[] }>().warnings).toHaveLength(1);
        }
        // Other targets never warn.
        expect((await post("Transaction")).json()).not.toHaveProperty("warnings");
      }
    } finally {
      await other.close();
    }
  });

  it("lists a rule's deliveries from the delivery log, newest first, paged with limit and offset", async () => {
    const rule = await create();
    const other = await create();
    const t0 = Date.parse("2026-01-02T03:04:05.000Z");
    for (let i = 1; i <= 3; i++) await backends.deliveries.record(rule.id, entry(i, new Date(t0 + i * 1000).toISOString()));
    await backends.deliveries.record(other.id, entry(99, new Date(t0).toISOString()));

    const res = await call("GET", `/alerting/rules/${rule.id}/deliveries/`);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json<{ total: number; entries: DeliveryLogEntry[] }>();
    expect(page.total).toBe(3);
    expect(page.entries.map((e) => e.sequence)).toEqual([3, 2, 1]);
    expect(page.entries[0]).toEqual(entry(3, new Date(t0 + 3000).toISOString()));

    const paged = await call("GET", `/alerting/rules/${rule.id}/deliveries?limit=2&offset=1`);
    expect(paged.json<{ total: number; entries: DeliveryLogEntry[] }>()).toMatchObject({ total: 3 });
    expect(paged.json<{ entries: DeliveryLogEntry[] }>().entries.map((e) => e.sequence)).toEqual([2, 1]);

    expectError(await call("GET", `/alerting/rules/${rule.id}/deliveries/?limit=0`), 400, "CS_RULE_INVALID_PAGE", "querystring.limit");
    expectError(await call("GET", `/alerting/rules/${rule.id}/deliveries/?limit=1001`), 400, "CS_RULE_INVALID_PAGE", "querystring.limit");
    expectError(await call("GET", `/alerting/rules/${rule.id}/deliveries/?offset=-1`), 400, "CS_RULE_INVALID_PAGE", "querystring.offset");
    expectError(await call("GET", `/alerting/rules/${rule.id}/deliveries/`, TOKEN_B), 404, "CS_RULE_NOT_FOUND");

    const empty = await call("GET", `/alerting/rules/${(await create()).id}/deliveries/`);
    // This app passes no deliveryStatus, so `destinations` (live status per action) is empty.
    expect(empty.json()).toEqual({ total: 0, entries: [], destinations: [] });
  });

  it("documents the routes and bodies in the OpenAPI document", async () => {
    const doc = app.swagger() as { paths: Record<string, Record<string, Loose>> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/alerting/rules/", "/alerting/rules/{rule_id}/", "/alerting/rules/{rule_id}/deliveries/"]),
    );
    const post = doc.paths["/alerting/rules/"]?.post;
    const schema = post?.requestBody?.content?.["application/json"]?.schema;
    expect(schema?.required).toEqual(expect.arrayContaining(["name", "maxConfirmationCount", "config"]));
    expect(schema?.properties?.config?.properties?.targetMap?.maxItems).toBe(10);
    expect(doc.paths["/alerting/rules/{rule_id}/"]?.put?.requestBody).toBeDefined();
    expect(Object.keys(post?.responses ?? {})).toEqual(expect.arrayContaining(["201", "400"]));
  });

  it("the OpenAPI rule schemas describe what the API accepts: bodies generated from the document are accepted (and POSTed: 201)", async () => {
    const doc = app.swagger() as { paths: Record<string, Record<string, Loose>> };
    const bodySchema = (path: string, method: string): Loose =>
      doc.paths[path]?.[method]?.requestBody?.content?.["application/json"]?.schema;
    const post = bodySchema("/alerting/rules/", "post");
    const put = bodySchema("/alerting/rules/{rule_id}/", "put");
    expect(post.properties.network.enum).toEqual(["anvil", "sepolia"]);
    expect(post.maxProperties).toBe(34);
    expect(post["x-chainsift-maxBodyBytes"]).toBe(65_536);
    expect(JSON.stringify(post)).toContain('"maxLength":2048');
    const chains = [ANVIL, SEPOLIA];
    fc.assert(
      fc.property(schemaArbitrary(post), (body) => {
        const res = validateRuleInput(body, "create", chains);
        if (!res.ok) throw new Error(`refused ${JSON.stringify(res.errors)}`);
      }),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(schemaArbitrary(put), (body) => {
        const res = validateRuleInput(body, "update", chains);
        if (!res.ok) throw new Error(`refused ${JSON.stringify(res.errors)}`);
      }),
      { numRuns: 100 },
    );
    // End to end: a handful through the API (within the body cap the document annotates).
    const bodies = fc
      .sample(schemaArbitrary(post), 40)
      .filter((b) => Buffer.byteLength(JSON.stringify(b)) <= post["x-chainsift-maxBodyBytes"])
      // Fastify refuses bodies with `__proto__` or `constructor.prototype` keys (prototype-poisoning
      // protection, CS_BODY_INVALID); the generator may name an allowed additional property so.
      .filter((b) => !/"(__proto__|constructor)"\s*:/.test(JSON.stringify(b)))
      .slice(0, 8);
    expect(bodies.length).toBeGreaterThan(3);
    for (const body of bodies) {
      const res = await call("POST", "/alerting/rules/", TOKEN_B, body);
      expect(res.statusCode, res.body.slice(0, 500)).toBe(201);
      const rule = res.json<Rule>();
      expect(rule.config).toEqual((body as { config: unknown }).config);
      expect((await call("DELETE", `/alerting/rules/${rule.id}/`, TOKEN_B)).statusCode).toBe(204);
    }
  });

  it("answers 503 CS_BACKEND_UNAVAILABLE when Redis cannot be asked", async () => {
    const down = await connectRulesBackends({ redisUrl: url, redisKeyPrefix: prefix });
    await down.close();
    const app2 = await appFor(down, ACCOUNT_A);
    try {
      expectError(await app2.inject({ method: "GET", url: "/alerting/rules/" }), 503, "CS_BACKEND_UNAVAILABLE");
      expectError(await app2.inject({ method: "GET", url: `/alerting/rules/${randomUUID()}/` }), 503, "CS_BACKEND_UNAVAILABLE");
      expectError(await app2.inject({ method: "POST", url: "/alerting/rules/", payload: ruleBody() }), 503, "CS_BACKEND_UNAVAILABLE");
    } finally {
      await app2.close();
    }
  });
});
