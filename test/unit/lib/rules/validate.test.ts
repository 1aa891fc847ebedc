import fc from "fast-check";
import { Compile } from "typebox/compile";
import { describe, expect, it } from "vitest";
import type { ChainId } from "../../../../lib/config/index.js";
import {
  extraPropertyErrors,
  findRuleErrors,
  HTTP_URL_PATTERN,
  RULE_FIELDS,
  RULE_LIMITS,
  RULE_VALIDATION_CODES,
  RuleCreateSchema,
  RuleUpdateSchema,
  type RuleValidationCode,
  type RuleValidationError,
  validateRuleInput,
} from "../../../../lib/rules/validate.js";

const chains: ChainId[] = [{ technology: "ethereum", blockchain: "ethereum", network: "mainnet" }];
const createSchema = Compile(RuleCreateSchema);
const updateSchema = Compile(RuleUpdateSchema);

// biome-ignore lint/suspicious/noExplicitAny: test bodies are mutated freely, like a client would send them
type Body = any;

/** A valid rule using every feature: all four alert types, a payload with Sub Fields two levels deep, a 2-level Inspect with useScaledValue. */
function validRule(): Body {
  return {
    name: "Large USDC transfers",
    maxConfirmationCount: 12,
    technology: "ethereum",
    blockchain: "ethereum",
    network: "mainnet",
    sendPendingAlerts: true,
    state: "enabled",
    description: "USDC transfers of at least 1M",
    config: {
      targetType: "Event",
      targetMap: [
        {
          name: "address",
          operator: "Equals (ignore case)",
          value: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
          operatorParameters: null,
        },
        { name: "name", operator: "Equals any", value: ["Transfer", "Approval"] },
        {
          name: "args",
          operator: "Inspect",
          value: null,
          operatorParameters: [
            { name: "value", operator: "Greater or Equal", value: "1000000", useScaledValue: true, operatorParameters: null },
            {
              name: "from",
              operator: "Inspect",
              operatorParameters: [
                { name: "kind", operator: "Equals", value: "eoa" },
                { name: "labels", operator: "Equals any (ignore case)", value: ["exchange", "bridge"] },
              ],
            },
          ],
        },
      ],
      alerts: [
        { type: "Email", parameters: { recipients: ["ops@example.com", "alerts+usdc@mail.example.org"] }, payload: null },
        {
          type: "Slack",
          parameters: {
            url: "https://hooks.slack.com/services/T000/B000/XXXX",
            text: ":rotating_light: Large transfer",
            channel: "#alerts",
            username: "chainsift",
          },
          payload: [{ fieldType: "Field", fieldName: "transactionHash" }],
        },
        { type: "Webhook (GET)", parameters: { url: "https://hooks.example.com/tx/{transactionHash}?block={blockNumber}" } },
        {
          type: "Webhook (POST)",
          parameters: { url: "http://hooks.example.com:8080/post" },
          payload: [
            { fieldType: "Field", fieldName: "transactionHash", subPayloads: null },
            {
              fieldType: "Sub Field",
              fieldName: "args",
              subPayloads: [
                { fieldType: "Field", fieldName: "value" },
                { fieldType: "Sub Field", fieldName: "from", subPayloads: [{ fieldType: "Field", fieldName: "address" }] },
              ],
            },
          ],
        },
      ],
    },
  };
}

/** Validates a mutated valid rule; asserts refusal (by the walker AND the published schema, unless `schemaToo` is false). */
function refuse(mutate: (r: Body) => void, mode: "create" | "update" = "create", schemaToo = true): RuleValidationError[] {
  const body = validRule();
  mutate(body);
  const res = validateRuleInput(body, mode, chains);
  if (res.ok) throw new Error(`accepted: ${JSON.stringify(body)}`);
  if (schemaToo) expect((mode === "create" ? createSchema : updateSchema).Check(body), "the TypeBox schema must refuse it too").toBe(false);
  return res.errors;
}

/** Exactly one error, with that code and path. */
function only(errors: RuleValidationError[], code: RuleValidationCode, path: string): void {
  expect(errors.map(({ code, path }) => ({ code, path }))).toEqual([{ code, path }]);
  expect(errors[0]!.message.startsWith(path)).toBe(true);
}

const tm2 = "config.targetMap[2]";

describe("validateRuleInput: accepted rules", () => {
  it("accepts a full rule (all alert types, Sub Field payloads, 2-level Inspect with useScaledValue)", () => {
    const body = validRule();
    const res = validateRuleInput(body, "create", chains);
    expect(res).toEqual({ ok: true, value: body });
    expect(createSchema.Check(body)).toBe(true);
  });

  it("applies the defaults on create: state enabled, sendPendingAlerts false, description null", () => {
    const body = validRule();
    delete body.state;
    delete body.sendPendingAlerts;
    delete body.description;
    const res = validateRuleInput(body, "create", chains);
    if (!res.ok) throw new Error(JSON.stringify(res.errors));
    expect(res.value).toMatchObject({ state: "enabled", sendPendingAlerts: false, description: null });
    expect(body.state).toBeUndefined(); // the input is not mutated
  });

  it("keeps additional top-level properties verbatim and drops the reserved ones", () => {
    const body = { ...validRule(), labels: { team: "risk" }, priority: 3, id: "x", accountId: "y", createdAt: "z", updatedAt: "w" };
    const res = validateRuleInput(body, "create", chains);
    if (!res.ok) throw new Error(JSON.stringify(res.errors));
    expect(res.value.labels).toEqual({ team: "risk" });
    expect(res.value.priority).toBe(3);
    for (const k of ["id", "accountId", "createdAt", "updatedAt"]) expect(res.value).not.toHaveProperty(k);
  });

  it("accepts disabled rules, a null description, extra properties in alert parameters and Inspect values of string/absent", () => {
    const res = validateRuleInput(
      {
        ...validRule(),
        state: "disabled",
        description: null,
        config: {
          targetType: "Transaction",
          targetMap: [
            {
              name: "input",
              operator: "Inspect",
              value: "",
              operatorParameters: [{ name: "method", operator: "Equals", value: "transfer" }],
            },
          ],
          alerts: [{ type: "Webhook (POST)", parameters: { url: "HTTPS://example.com", headers: { a: "b" } } }],
        },
      },
      "create",
      chains,
    );
    expect(res.ok).toBe(true);
  });

  it("update: any subset, no defaults applied, version kept", () => {
    for (const body of [
      {},
      { name: "renamed" },
      { maxConfirmationCount: 0, version: 3 },
      { state: "disabled", extra: [1] },
      { network: "mainnet" },
    ]) {
      const res = validateRuleInput(body, "update", chains);
      expect(res).toEqual({ ok: true, value: body });
      expect(updateSchema.Check(body)).toBe(true);
    }
    const full = validateRuleInput({ config: validRule().config, description: null }, "update", chains);
    expect(full.ok).toBe(true);
  });
});

describe("validateRuleInput: top-level fields", () => {
  it("refuses a body that is not an object", () => {
    for (const body of [null, [], "rule", 3]) {
      const res = validateRuleInput(body, "create", chains);
      expect(res.ok).toBe(false);
      if (!res.ok) only(res.errors, "CS_RULE_INVALID", "");
    }
  });

  it("refuses a missing name", () => {
    only(
      refuse((r) => delete r.name),
      "CS_RULE_INVALID",
      "name",
    );
  });

  it("refuses a negative or non-integer maxConfirmationCount, and a missing one", () => {
    only(
      refuse((r) => (r.maxConfirmationCount = -1)),
      "CS_RULE_INVALID",
      "maxConfirmationCount",
    );
    only(
      refuse((r) => (r.maxConfirmationCount = 1.5)),
      "CS_RULE_INVALID",
      "maxConfirmationCount",
    );
    only(
      refuse((r) => (r.maxConfirmationCount = "12")),
      "CS_RULE_INVALID",
      "maxConfirmationCount",
    );
    only(
      refuse((r) => delete r.maxConfirmationCount),
      "CS_RULE_INVALID",
      "maxConfirmationCount",
    );
  });

  it("refuses missing technology/blockchain/network and config on create", () => {
    only(
      refuse((r) => delete r.blockchain),
      "CS_RULE_INVALID",
      "blockchain",
    );
    only(
      refuse((r) => delete r.config),
      "CS_RULE_INVALID",
      "config",
    );
  });

  it("refuses a chain this deployment does not serve, naming the first field that does not match", () => {
    only(
      refuse((r) => (r.network = "sepolia"), "create", false),
      "CS_RULE_UNKNOWN_CHAIN",
      "network",
    );
    only(
      refuse((r) => (r.technology = "bitcoin"), "create", false),
      "CS_RULE_UNKNOWN_CHAIN",
      "technology",
    );
    only(
      refuse(
        (r) => {
          for (const k of Object.keys(r)) delete r[k];
          r.network = "sepolia";
        },
        "update",
        false,
      ),
      "CS_RULE_UNKNOWN_CHAIN",
      "network",
    );
    const two = validateRuleInput(validRule(), "create", [...chains, { technology: "ethereum", blockchain: "polygon", network: "amoy" }]);
    expect(two.ok).toBe(true);
  });

  it("refuses a bad state, description, version or sendPendingAlerts", () => {
    only(
      refuse((r) => (r.state = "ENABLED")),
      "CS_RULE_INVALID",
      "state",
    );
    only(
      refuse((r) => (r.description = 1)),
      "CS_RULE_INVALID",
      "description",
    );
    only(
      refuse((r) => (r.version = "2")),
      "CS_RULE_INVALID",
      "version",
    );
    only(
      refuse((r) => (r.sendPendingAlerts = "yes")),
      "CS_RULE_INVALID",
      "sendPendingAlerts",
    );
  });

  it("update mode checks the fields that are present", () => {
    only(
      refuse((r) => {
        for (const k of Object.keys(r)) if (k !== "config") delete r[k];
        r.config.targetMap[0].value = ["a"];
      }, "update"),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    );
    only(
      refuse((r) => (r.name = null), "update"),
      "CS_RULE_INVALID",
      "name",
    );
  });
});

describe("validateRuleInput: config", () => {
  it("refuses an unknown config property (quoting names that are not identifiers)", () => {
    only(
      refuse((r) => (r.config.extra = 1)),
      "CS_RULE_INVALID",
      "config.extra",
    );
    only(
      refuse((r) => (r.config["foo bar"] = 1)),
      "CS_RULE_INVALID",
      'config["foo bar"]',
    );
  });

  it("refuses an unknown or missing targetType", () => {
    only(
      refuse((r) => (r.config.targetType = "Block")),
      "CS_RULE_INVALID",
      "config.targetType",
    );
    only(
      refuse((r) => delete r.config.targetType),
      "CS_RULE_INVALID",
      "config.targetType",
    );
  });

  it("refuses missing targetMap or alerts", () => {
    only(
      refuse((r) => delete r.config.targetMap),
      "CS_RULE_INVALID",
      "config.targetMap",
    );
    only(
      refuse((r) => (r.config.alerts = {})),
      "CS_RULE_INVALID",
      "config.alerts",
    );
  });
});

describe("validateRuleInput: targetMap", () => {
  const item = (i: number) => ({ name: `field${i}`, operator: "Equals", value: String(i) });

  it("refuses 0 and 11 items", () => {
    only(
      refuse((r) => (r.config.targetMap = [])),
      "CS_RULE_ITEM_COUNT",
      "config.targetMap",
    );
    only(
      refuse((r) => (r.config.targetMap = Array.from({ length: 11 }, (_, i) => item(i)))),
      "CS_RULE_ITEM_COUNT",
      "config.targetMap",
    );
    const ten = validRule();
    ten.config.targetMap = Array.from({ length: 10 }, (_, i) => item(i));
    expect(validateRuleInput(ten, "create", chains).ok).toBe(true);
  });

  it("refuses deep-equal duplicates (whatever the key order), at the later item", () => {
    only(
      refuse((r) => r.config.targetMap.push({ value: ["Transfer", "Approval"], operator: "Equals any", name: "name" })),
      "CS_RULE_DUPLICATE_ITEM",
      "config.targetMap[3]",
    );
  });

  it("refuses an unknown property and an unknown operator", () => {
    only(
      refuse((r) => (r.config.targetMap[0].comment = "x")),
      "CS_RULE_INVALID",
      "config.targetMap[0].comment",
    );
    only(
      refuse((r) => (r.config.targetMap[0].operator = "Contains")),
      "CS_RULE_INVALID",
      "config.targetMap[0].operator",
    );
    only(
      refuse((r) => delete r.config.targetMap[0].name),
      "CS_RULE_INVALID",
      "config.targetMap[0].name",
    );
  });

  it("refuses Equals with an array value", () => {
    only(
      refuse((r) => (r.config.targetMap[0] = { name: "address", operator: "Equals", value: ["0x1"] })),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[0].value",
    );
  });

  it("refuses Equals any with a string value, and non-string elements", () => {
    only(
      refuse((r) => (r.config.targetMap[1].value = "Transfer")),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[1].value",
    );
    only(
      refuse((r) => (r.config.targetMap[1].value = ["Transfer", 7])),
      "CS_RULE_VALUE_TYPE",
      "config.targetMap[1].value[1]",
    );
  });

  it("accepts an equality operator without value (absent or null) at the first and second level", () => {
    for (const operator of ["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"]) {
      for (const value of [undefined, null]) {
        const body = validRule();
        body.config.targetMap[0] = { name: "to", operator, ...(value === undefined ? {} : { value }) };
        body.config.targetMap[2].operatorParameters[0] = {
          name: "value",
          operator,
          useScaledValue: false,
          ...(value === undefined ? {} : { value }),
        };
        const res = validateRuleInput(body, "create", chains);
        expect(res.ok, JSON.stringify(res)).toBe(true);
        expect(createSchema.Check(body), `${operator} ${value}`).toBe(true);
      }
    }
  });

  it("refuses an ordering operator without value, and a missing value with useScaledValue or at the third level", () => {
    for (const operator of ["Greater", "Greater or Equal", "Less", "Less or Equal"]) {
      only(
        refuse((r) => (r.config.targetMap[0] = { name: "blockNumber", operator })),
        "CS_RULE_VALUE_TYPE",
        "config.targetMap[0].value",
      );
      only(
        refuse((r) => (r.config.targetMap[0] = { name: "blockNumber", operator, value: null })),
        "CS_RULE_VALUE_TYPE",
        "config.targetMap[0].value",
      );
    }
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[0] = { name: "value", operator: "Equals", useScaledValue: true })),
      "CS_RULE_VALUE_TYPE",
      `${tm2}.operatorParameters[0].value`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].value = null)),
      "CS_RULE_VALUE_TYPE",
      `${tm2}.operatorParameters[1].operatorParameters[0].value`,
    );
  });

  it("refuses Inspect without operatorParameters (absent or null) or with an empty list", () => {
    only(
      refuse((r) => delete r.config.targetMap[2].operatorParameters),
      "CS_RULE_OPERATOR_PARAMETERS",
      `${tm2}.operatorParameters`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters = null)),
      "CS_RULE_OPERATOR_PARAMETERS",
      `${tm2}.operatorParameters`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters = [])),
      "CS_RULE_ITEM_COUNT",
      `${tm2}.operatorParameters`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters = {})),
      "CS_RULE_OPERATOR_PARAMETERS",
      `${tm2}.operatorParameters`,
    );
  });

  it("refuses a non-Inspect operator with non-null operatorParameters", () => {
    only(
      refuse((r) => (r.config.targetMap[0].operatorParameters = [{ name: "a", operator: "Equals", value: "b" }])),
      "CS_RULE_OPERATOR_PARAMETERS",
      "config.targetMap[0].operatorParameters",
    );
    only(
      refuse((r) => (r.config.targetMap[0].operatorParameters = [])),
      "CS_RULE_OPERATOR_PARAMETERS",
      "config.targetMap[0].operatorParameters",
    );
  });

  it("refuses useScaledValue at the top level (and at the third)", () => {
    only(
      refuse((r) => (r.config.targetMap[0].useScaledValue = true)),
      "CS_RULE_INVALID",
      "config.targetMap[0].useScaledValue",
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].useScaledValue = false)),
      "CS_RULE_INVALID",
      `${tm2}.operatorParameters[1].operatorParameters[0].useScaledValue`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[0].useScaledValue = "yes")),
      "CS_RULE_INVALID",
      `${tm2}.operatorParameters[0].useScaledValue`,
    );
  });

  it("applies the value and operatorParameters rules at the second level", () => {
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[0].value = ["1"])),
      "CS_RULE_VALUE_TYPE",
      `${tm2}.operatorParameters[0].value`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[0].operatorParameters = [{ name: "a", operator: "Less", value: "1" }])),
      "CS_RULE_OPERATOR_PARAMETERS",
      `${tm2}.operatorParameters[0].operatorParameters`,
    );
    only(
      refuse((r) => delete r.config.targetMap[2].operatorParameters[1].operatorParameters),
      "CS_RULE_OPERATOR_PARAMETERS",
      `${tm2}.operatorParameters[1].operatorParameters`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].extra = 1)),
      "CS_RULE_INVALID",
      `${tm2}.operatorParameters[1].extra`,
    );
  });

  it("requires name, operator and value at the third level", () => {
    only(
      refuse((r) => delete r.config.targetMap[2].operatorParameters[1].operatorParameters[1].value),
      "CS_RULE_VALUE_TYPE",
      `${tm2}.operatorParameters[1].operatorParameters[1].value`,
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[1].value = "exchange")),
      "CS_RULE_VALUE_TYPE",
      `${tm2}.operatorParameters[1].operatorParameters[1].value`,
    );
    only(
      refuse((r) => delete r.config.targetMap[2].operatorParameters[1].operatorParameters[0].operator),
      "CS_RULE_INVALID",
      `${tm2}.operatorParameters[1].operatorParameters[0].operator`,
    );
  });

  it("refuses Inspect at the third level", () => {
    only(
      refuse(
        (r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0] = { name: "kind", operator: "Inspect", value: "x" }),
      ),
      "CS_RULE_TOO_DEEP",
      `${tm2}.operatorParameters[1].operatorParameters[0].operator`,
    );
  });

  it("refuses a fourth level", () => {
    const third = `${tm2}.operatorParameters[1].operatorParameters[0]`;
    const errors = refuse(
      (r) =>
        (r.config.targetMap[2].operatorParameters[1].operatorParameters[0] = {
          name: "kind",
          operator: "Inspect",
          operatorParameters: [{ name: "deeper", operator: "Equals", value: "x" }],
        }),
    );
    expect(errors.map(({ code, path }) => ({ code, path }))).toEqual([
      { code: "CS_RULE_TOO_DEEP", path: `${third}.operatorParameters` },
      { code: "CS_RULE_TOO_DEEP", path: `${third}.operator` },
    ]);
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].operatorParameters = null)),
      "CS_RULE_TOO_DEEP",
      `${third}.operatorParameters`,
    );
  });
});

describe("validateRuleInput: alerts", () => {
  const email = { type: "Email", parameters: { recipients: ["a@example.com"] } };

  it("refuses 0 and 11 alerts", () => {
    only(
      refuse((r) => (r.config.alerts = [])),
      "CS_RULE_ITEM_COUNT",
      "config.alerts",
    );
    only(
      refuse(
        (r) =>
          (r.config.alerts = Array.from({ length: 11 }, (_, i) => ({ type: "Email", parameters: { recipients: [`a${i}@example.com`] } }))),
      ),
      "CS_RULE_ITEM_COUNT",
      "config.alerts",
    );
  });

  it("refuses duplicate alerts", () => {
    only(
      refuse((r) => (r.config.alerts = [email, { parameters: { recipients: ["a@example.com"] }, type: "Email" }])),
      "CS_RULE_DUPLICATE_ITEM",
      "config.alerts[1]",
    );
  });

  it("refuses an unknown alert type and missing parameters", () => {
    only(
      refuse((r) => (r.config.alerts[0].type = "SMS")),
      "CS_RULE_INVALID",
      "config.alerts[0].type",
    );
    only(
      refuse((r) => delete r.config.alerts[0].parameters),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters",
    );
  });

  it("refuses an Email recipient that is not an e-mail address", () => {
    for (const bad of ["not-an-address", "a@b", "a b@example.com", "a@@example.com", "a@example..com", `${"x".repeat(250)}@example.com`]) {
      only(
        refuse((r) => (r.config.alerts[0].parameters.recipients = ["ok@example.com", bad])),
        "CS_RULE_ALERT_PARAMETERS",
        "config.alerts[0].parameters.recipients[1]",
      );
    }
    only(
      refuse((r) => (r.config.alerts[0].parameters.recipients = [])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.recipients",
    );
    only(
      refuse((r) => (r.config.alerts[0].parameters = { to: ["a@example.com"] })),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.recipients",
    );
  });

  it("refuses Slack parameters without a channel (and each other required field)", () => {
    for (const field of ["channel", "url", "text", "username"]) {
      only(
        refuse((r) => delete r.config.alerts[1].parameters[field]),
        "CS_RULE_ALERT_PARAMETERS",
        `config.alerts[1].parameters.${field}`,
      );
    }
  });

  it("refuses webhook URLs that are not absolute http(s)", () => {
    for (const url of [
      "/hooks/relative",
      "hooks.example.com/x",
      "ftp://example.com/x",
      "https://",
      "https:///path",
      "http://exa mple.com/",
    ]) {
      only(
        refuse((r) => (r.config.alerts[2].parameters.url = url)),
        "CS_RULE_ALERT_PARAMETERS",
        "config.alerts[2].parameters.url",
      );
    }
    only(
      refuse((r) => (r.config.alerts[1].parameters.url = "hooks.slack.com/services/x")),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[1].parameters.url",
    );
  });

  it("refuses URLs the URL parser would refuse: bad ports, numeric last labels, Punycode labels, bad IPv6", () => {
    for (const url of [
      "http://hooks.example:65536/",
      "http://hooks.example:8o/",
      "http://a.09/",
      "http://a.0x1f/",
      "http://1.2.3.999/",
      "http://xn--a.example/",
      "http://hooks.XN--a/",
      "http://[::g]/",
      "http://[1:2:3:4:5:6:7:8:9]/",
      "http://a%zz.example/",
      "http://hooks.example\\evil.example/",
    ]) {
      only(
        refuse((r) => (r.config.alerts[2].parameters.url = url)),
        "CS_RULE_ALERT_PARAMETERS",
        "config.alerts[2].parameters.url",
      );
    }
  });

  it("refuses {field} templates in the scheme, user info, host or port of webhook and Slack URLs", () => {
    for (const url of [
      "http://{field}.example/",
      "https://hooks.{network}.example/x",
      "https://{host}/x",
      "https://hooks.example:{port}/x",
      "https://{user}@hooks.example/x",
      "https://u:{password}@hooks.example/x",
      "{scheme}://hooks.example/x",
      "http{s}://hooks.example/x",
      "https://hooks.example{x}/y",
    ]) {
      const errors = refuse((r) => (r.config.alerts[2].parameters.url = url));
      only(errors, "CS_RULE_ALERT_PARAMETERS", "config.alerts[2].parameters.url");
      if (!url.startsWith("{") && !url.startsWith("http{")) expect(errors[0]!.message).toMatch(/templates .* not allowed .* host/);
    }
    only(
      refuse((r) => (r.config.alerts[1].parameters.url = "https://{team}.slack.example/services/x")),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[1].parameters.url",
    );
  });

  it("accepts templates in the path, query and fragment, user info, IPv4 and IPv6 hosts and ports", () => {
    for (const url of [
      "https://hooks.example/{transactionHash}",
      "https://hooks.example/a/{x}/b?tx={transactionHash}&n={blockNumber}#{logIndex}",
      "https://hooks.example?{q}",
      "https://user:secret@hooks.example:8443/x",
      "http://127.0.0.1:9999/hook/{transactionHash}",
      "http://[::1]:8080/{x}",
      "http://[2001:db8::ff00:42:8329]/",
      "HTTPS://Hooks.Example",
      "http://localhost",
      "http://1password.example/",
      "http://xn-a.example/",
    ]) {
      const body = validRule();
      body.config.alerts[2].parameters.url = url;
      expect(findRuleErrors(body, "create", chains), url).toEqual([]);
      expect(createSchema.Check(body), url).toBe(true);
    }
  });

  it("every URL the published pattern matches parses with the WHATWG URL parser (fuzzed from the pattern)", () => {
    fc.assert(
      fc.property(fc.stringMatching(new RegExp(HTTP_URL_PATTERN)), (url) => {
        const body = validRule();
        body.config.alerts[2].parameters.url = url;
        expect(findRuleErrors(body, "create", chains)).toEqual([]);
        expect(new URL(url.replace(/\{[^{}]*\}/g, "x")).hostname).not.toBe("");
      }),
      { numRuns: 3000 },
    );
  });
});

describe("validateRuleInput: payload", () => {
  const payload = "config.alerts[3].payload";

  it("refuses a Field with non-null subPayloads", () => {
    only(
      refuse((r) => (r.config.alerts[3].payload[0].subPayloads = [{ fieldType: "Field", fieldName: "x" }])),
      "CS_RULE_PAYLOAD",
      `${payload}[0].subPayloads`,
    );
  });

  it("refuses a Sub Field without subPayloads or fieldName", () => {
    only(
      refuse((r) => delete r.config.alerts[3].payload[1].subPayloads),
      "CS_RULE_PAYLOAD",
      `${payload}[1].subPayloads`,
    );
    only(
      refuse((r) => (r.config.alerts[3].payload[1].subPayloads = null)),
      "CS_RULE_PAYLOAD",
      `${payload}[1].subPayloads`,
    );
    only(
      refuse((r) => delete r.config.alerts[3].payload[1].fieldName),
      "CS_RULE_PAYLOAD",
      `${payload}[1].fieldName`,
    );
  });

  it("refuses a Sub Field at the third payload level, and subPayloads there", () => {
    only(
      refuse((r) => (r.config.alerts[3].payload[1].subPayloads[1].subPayloads[0] = { fieldType: "Sub Field", fieldName: "address" })),
      "CS_RULE_TOO_DEEP",
      `${payload}[1].subPayloads[1].subPayloads[0].fieldType`,
    );
    only(
      refuse((r) => (r.config.alerts[3].payload[1].subPayloads[1].subPayloads[0].subPayloads = null)),
      "CS_RULE_TOO_DEEP",
      `${payload}[1].subPayloads[1].subPayloads[0].subPayloads`,
    );
  });

  it("refuses 11 payload items, duplicates, unknown properties and unknown fieldTypes", () => {
    only(
      refuse((r) => (r.config.alerts[3].payload = Array.from({ length: 11 }, (_, i) => ({ fieldType: "Field", fieldName: `f${i}` })))),
      "CS_RULE_ITEM_COUNT",
      payload,
    );
    only(
      refuse((r) => r.config.alerts[3].payload.push({ subPayloads: null, fieldName: "transactionHash", fieldType: "Field" })),
      "CS_RULE_DUPLICATE_ITEM",
      `${payload}[2]`,
    );
    only(
      refuse(
        (r) =>
          (r.config.alerts[3].payload[1].subPayloads[1].subPayloads = [
            { fieldType: "Field", fieldName: "a" },
            { fieldType: "Field", fieldName: "a" },
          ]),
      ),
      "CS_RULE_DUPLICATE_ITEM",
      `${payload}[1].subPayloads[1].subPayloads[1]`,
    );
    only(
      refuse((r) => (r.config.alerts[3].payload[0].alias = "tx")),
      "CS_RULE_PAYLOAD",
      `${payload}[0].alias`,
    );
    only(
      refuse((r) => (r.config.alerts[3].payload[0].fieldType = "field")),
      "CS_RULE_PAYLOAD",
      `${payload}[0].fieldType`,
    );
    only(
      refuse((r) => (r.config.alerts[3].payload = "transactionHash")),
      "CS_RULE_PAYLOAD",
      payload,
    );
  });
});

describe("validateRuleInput: caps (RULE_LIMITS)", () => {
  const a = (n: number) => "a".repeat(n);
  const alerts = "config.alerts";

  /** [what, set a string of length n, path]: each cap is refused one past it (CS_RULE_TOO_LONG) and accepted at it. */
  const caps: Array<[string, number, (r: Body, v: string) => void, string]> = [
    ["rule name", RULE_LIMITS.nameMaxLength, (r, v) => (r.name = v), "name"],
    ["description", RULE_LIMITS.descriptionMaxLength, (r, v) => (r.description = v), "description"],
    ["level-1 name", RULE_LIMITS.definitionNameMaxLength, (r, v) => (r.config.targetMap[0].name = v), "config.targetMap[0].name"],
    [
      "level-2 name",
      RULE_LIMITS.definitionNameMaxLength,
      (r, v) => (r.config.targetMap[2].operatorParameters[0].name = v),
      `${tm2}.operatorParameters[0].name`,
    ],
    [
      "level-3 name",
      RULE_LIMITS.definitionNameMaxLength,
      (r, v) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].name = v),
      `${tm2}.operatorParameters[1].operatorParameters[0].name`,
    ],
    ["a string value", RULE_LIMITS.valueMaxLength, (r, v) => (r.config.targetMap[0].value = v), "config.targetMap[0].value"],
    ["an Equals any element", RULE_LIMITS.valueMaxLength, (r, v) => (r.config.targetMap[1].value[1] = v), "config.targetMap[1].value[1]"],
    ["an Inspect value", RULE_LIMITS.valueMaxLength, (r, v) => (r.config.targetMap[2].value = v), `${tm2}.value`],
    [
      "a level-3 value",
      RULE_LIMITS.valueMaxLength,
      (r, v) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].value = v),
      `${tm2}.operatorParameters[1].operatorParameters[0].value`,
    ],
    [
      "a webhook URL",
      RULE_LIMITS.urlMaxLength,
      (r, v) => (r.config.alerts[2].parameters.url = `https://hooks.example.com/${v}`.slice(0, v.length)),
      `${alerts}[2].parameters.url`,
    ],
    [
      "a Slack URL",
      RULE_LIMITS.urlMaxLength,
      (r, v) => (r.config.alerts[1].parameters.url = `https://hooks.slack.com/${v}`.slice(0, v.length)),
      `${alerts}[1].parameters.url`,
    ],
    ["Slack text", RULE_LIMITS.slackTextMaxLength, (r, v) => (r.config.alerts[1].parameters.text = v), `${alerts}[1].parameters.text`],
    [
      "Slack channel",
      RULE_LIMITS.slackNameMaxLength,
      (r, v) => (r.config.alerts[1].parameters.channel = v),
      `${alerts}[1].parameters.channel`,
    ],
    [
      "Slack username",
      RULE_LIMITS.slackNameMaxLength,
      (r, v) => (r.config.alerts[1].parameters.username = v),
      `${alerts}[1].parameters.username`,
    ],
    [
      "a payload fieldName",
      RULE_LIMITS.fieldNameMaxLength,
      (r, v) => (r.config.alerts[3].payload[0].fieldName = v),
      `${alerts}[3].payload[0].fieldName`,
    ],
    [
      "a level-3 payload fieldName",
      RULE_LIMITS.fieldNameMaxLength,
      (r, v) => (r.config.alerts[3].payload[1].subPayloads[1].subPayloads[0].fieldName = v),
      `${alerts}[3].payload[1].subPayloads[1].subPayloads[0].fieldName`,
    ],
  ];

  it.each(caps)("%s: at most %i characters (CS_RULE_TOO_LONG one past it, with the field's path)", (_what, max, set, path) => {
    only(
      refuse((r) => set(r, a(max + 1))),
      "CS_RULE_TOO_LONG",
      path,
    );
    const body = validRule();
    set(body, a(max));
    expect(findRuleErrors(body, "create", chains)).toEqual([]);
    expect(createSchema.Check(body)).toBe(true);
  });

  it("counts characters as Unicode code points, like JSON Schema maxLength", () => {
    const body = validRule();
    body.name = "🚨".repeat(RULE_LIMITS.nameMaxLength); // 512 UTF-16 code units
    expect(findRuleErrors(body, "create", chains)).toEqual([]);
    expect(createSchema.Check(body)).toBe(true);
    only(
      refuse((r) => (r.name = "🚨".repeat(RULE_LIMITS.nameMaxLength + 1))),
      "CS_RULE_TOO_LONG",
      "name",
    );
  });

  it("refuses an empty definition name (the match stage could not evaluate it)", () => {
    only(
      refuse((r) => (r.config.targetMap[0].name = "")),
      "CS_RULE_INVALID",
      "config.targetMap[0].name",
    );
    only(
      refuse((r) => (r.config.targetMap[2].operatorParameters[1].operatorParameters[0].name = "")),
      "CS_RULE_INVALID",
      `${tm2}.operatorParameters[1].operatorParameters[0].name`,
    );
  });

  it("counts e-mail address length in code points too (254), like the schema", () => {
    const local = "📧".repeat(200); // 200 code points, 400 UTF-16 units
    const body = validRule();
    body.config.alerts[0].parameters.recipients = [`${local}@example.com`];
    expect(findRuleErrors(body, "create", chains)).toEqual([]);
    expect(createSchema.Check(body)).toBe(true);
    only(
      refuse((r) => (r.config.alerts[0].parameters.recipients = [`${"📧".repeat(243)}@example.com`])),
      "CS_RULE_ALERT_PARAMETERS",
      `${alerts}[0].parameters.recipients[0]`,
    );
  });

  it("refuses more than 50 recipients", () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `ops${i}@example.com`);
    only(
      refuse((r) => (r.config.alerts[0].parameters.recipients = many(RULE_LIMITS.recipientsMax + 1))),
      "CS_RULE_ITEM_COUNT",
      `${alerts}[0].parameters.recipients`,
    );
    const body = validRule();
    body.config.alerts[0].parameters.recipients = many(RULE_LIMITS.recipientsMax);
    expect(validateRuleInput(body, "create", chains).ok).toBe(true);
  });

  it("refuses a 21st additional top-level property, at its path (service fields do not count)", () => {
    const extras = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x${i}`, i]));
    const full = { ...validRule(), version: 3, id: "i", accountId: "a", createdAt: "c", updatedAt: "u", ...extras(20) };
    expect(validateRuleInput(full, "create", chains).ok).toBe(true);
    expect(createSchema.Check(full)).toBe(true);
    expect(Object.keys(full)).toHaveLength(RULE_FIELDS.length + RULE_LIMITS.extraPropertiesMax);
    // The schema's maxProperties (34) only bounds a body carrying every service field; the exact
    // count travels as x-chainsift-maxAdditionalProperties (JSON Schema cannot count unnamed properties).
    only(
      refuse((r) => Object.assign(r, extras(21)), "create", false),
      "CS_RULE_EXTRA_PROPERTIES",
      "x20",
    );
    expect(createSchema.Check({ ...full, x20: 20 })).toBe(false);
    only(
      refuse((r) => Object.assign(r, extras(21)), "update", false),
      "CS_RULE_EXTRA_PROPERTIES",
      "x20",
    );
  });

  it("keeps any other additional property as before (sequence is evaluated: schema-sequence.test.ts)", () => {
    expect(validateRuleInput({ ...validRule(), windowed: { blocks: 10 } }, "create", chains).ok).toBe(true);
    only(
      refuse(
        (r) => Object.assign(r, { sequence: { within: { blocks: 10 }, correlate: { first: "a", followedBy: "b" } } }),
        "create",
        false,
      ),
      "CS_RULE_INVALID",
      "sequence.followedBy",
    );
  });

  it("refuses additional properties of more than 16 KiB of JSON together, at the property that crosses the limit", () => {
    const half = a(RULE_LIMITS.extraPropertiesMaxBytes / 2);
    only(
      refuse((r) => Object.assign(r, { "my label": half, other: 1, big: half }), "create", false),
      "CS_RULE_EXTRA_PROPERTIES",
      "big",
    );
    // Exactly at the limit: {"k":"…"} is 8 bytes plus the string.
    const body = { ...validRule(), k: a(RULE_LIMITS.extraPropertiesMaxBytes - 8) };
    expect(Buffer.byteLength(JSON.stringify({ k: body.k }))).toBe(RULE_LIMITS.extraPropertiesMaxBytes);
    expect(validateRuleInput(body, "create", chains).ok).toBe(true);
    expect(extraPropertyErrors({ ...body, k: `${body.k}é` }).map((e) => [e.code, e.path])).toEqual([["CS_RULE_EXTRA_PROPERTIES", "k"]]);
    // Multi-byte characters count as their UTF-8 bytes.
    expect(extraPropertyErrors({ k: "é".repeat(RULE_LIMITS.extraPropertiesMaxBytes / 2) })).toHaveLength(1);
  });

  it("refuses the reported over-sized rule (200 KB name, 500 KB of extra properties, 50 KB URL) with one error per cap", () => {
    const errors = refuse(
      (r) => {
        r.name = a(200_000);
        Object.assign(r, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`pad${i}`, a(10_000)])));
        r.config.alerts[2].parameters.url = `https://hooks.example.com/${a(50_000)}`;
      },
      "create",
      false,
    );
    expect(errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_RULE_TOO_LONG", "name"],
      ["CS_RULE_TOO_LONG", "config.alerts[2].parameters.url"],
      ["CS_RULE_EXTRA_PROPERTIES", "pad1"],
      ["CS_RULE_EXTRA_PROPERTIES", "pad20"],
    ]);
  });

  it("publishes every cap in the schema (maxLength, maxItems, maxProperties and the x-chainsift annotations)", () => {
    const json = JSON.parse(JSON.stringify(RuleCreateSchema));
    const text = JSON.stringify(json);
    expect(json.properties.name.maxLength).toBe(RULE_LIMITS.nameMaxLength);
    expect(json.maxProperties).toBe(RULE_FIELDS.length + RULE_LIMITS.extraPropertiesMax);
    expect(json["x-chainsift-maxAdditionalProperties"]).toBe(RULE_LIMITS.extraPropertiesMax);
    expect(json["x-chainsift-maxAdditionalPropertiesBytes"]).toBe(RULE_LIMITS.extraPropertiesMaxBytes);
    expect(json["x-chainsift-maxBodyBytes"]).toBe(RULE_LIMITS.bodyMaxBytes);
    for (const n of [
      RULE_LIMITS.descriptionMaxLength,
      RULE_LIMITS.definitionNameMaxLength,
      RULE_LIMITS.valueMaxLength,
      RULE_LIMITS.urlMaxLength,
      RULE_LIMITS.emailMaxLength,
      RULE_LIMITS.slackTextMaxLength,
      RULE_LIMITS.slackNameMaxLength,
      RULE_LIMITS.fieldNameMaxLength,
    ]) {
      expect(text).toContain(`"maxLength":${n}`);
    }
    expect(text).toContain(`"maxItems":${RULE_LIMITS.recipientsMax}`);
    expect(JSON.parse(JSON.stringify(RuleUpdateSchema)).maxProperties).toBe(json.maxProperties);
  });
});

describe("validateRuleInput: reporting", () => {
  it("reports every problem, in document order", () => {
    const errors = refuse((r) => {
      delete r.name;
      r.config.targetType = "Block";
      r.config.alerts[2].parameters.url = "/x";
    });
    expect(errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_RULE_INVALID", "name"],
      ["CS_RULE_INVALID", "config.targetType"],
      ["CS_RULE_ALERT_PARAMETERS", "config.alerts[2].parameters.url"],
    ]);
    for (const e of errors) expect(RULE_VALIDATION_CODES).toContain(e.code);
  });

  it("publishes plain JSON Schema (no if/then, serialisable) for the OpenAPI document", () => {
    const json = JSON.stringify(RuleCreateSchema);
    expect(json).not.toMatch(/"(if|then|else)":/);
    expect(JSON.parse(json).required).toEqual(["name", "maxConfirmationCount", "technology", "blockchain", "network", "config"]);
    expect(JSON.parse(JSON.stringify(RuleUpdateSchema)).required ?? []).toEqual([]);
  });
});

describe("the hand-written checks and the published schema agree", () => {
  /** Every JSON path of `v` as a list of keys. */
  function paths(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
    const out: (string | number)[][] = [prefix];
    if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) out.push(...paths(x, [...prefix, i]));
    } else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...prefix, k]));
    }
    return out;
  }
  const replacements: unknown[] = [
    undefined,
    null,
    1,
    -1,
    1.5,
    "",
    "Inspect",
    "Equals any",
    "Sub Field",
    "Field",
    true,
    [],
    ["x"],
    {},
    [{}],
  ];

  it("on every single-value mutation of the full rule", () => {
    let compared = 0;
    for (const path of paths(validRule())) {
      if (path.length === 0) continue;
      for (const replacement of replacements) {
        const body = validRule();
        let parent = body;
        for (const k of path.slice(0, -1)) parent = parent[k];
        const last = path[path.length - 1]!;
        if (replacement === undefined) {
          if (Array.isArray(parent)) parent.splice(last as number, 1);
          else delete parent[last];
        } else parent[last] = replacement;
        if (["technology", "blockchain", "network"].includes(String(path[0]))) continue; // chains are not in the schema
        for (const mode of ["create", "update"] as const) {
          const walkerOk = findRuleErrors(body, mode, chains).length === 0;
          const schemaOk = (mode === "create" ? createSchema : updateSchema).Check(body);
          expect(walkerOk, `${mode} ${JSON.stringify(path)} = ${JSON.stringify(replacement)}`).toBe(schemaOk);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});

describe("chainsift's own alert types and message templates (backward compatible)", () => {
  const discord = { type: "Discord", parameters: { url: "https://discord.com/api/webhooks/123/abc", username: "chainsift" } };
  const telegram = { type: "Telegram", parameters: { chatId: "-1001234567890", messageThreadId: 3 } };
  const withAlerts = (...alerts: Body[]) => {
    const r = validRule();
    r.config.alerts = alerts;
    return r;
  };

  it("keeps the contract's four types first and unchanged, then adds Discord, Telegram, PagerDuty, Opsgenie, Teams and Kafka", async () => {
    const { ALERT_TYPES, CONTRACT_ALERT_TYPES } = await import("../../../../lib/rules/model.js");
    expect(CONTRACT_ALERT_TYPES).toEqual(["Webhook (GET)", "Webhook (POST)", "Email", "Slack"]);
    expect(ALERT_TYPES).toEqual([...CONTRACT_ALERT_TYPES, "Discord", "Telegram", "PagerDuty", "Opsgenie", "Teams", "Kafka"]);
    expect(validateRuleInput(validRule(), "create", chains).ok).toBe(true);
    only(
      refuse((r) => (r.config.alerts[0].type = "Mattermost")),
      "CS_RULE_INVALID",
      "config.alerts[0].type",
    );
  });

  it("accepts Discord and Telegram actions, with and without templates", () => {
    for (const body of [
      withAlerts(discord, telegram),
      withAlerts(
        { ...discord, parameters: { url: discord.parameters.url, template: "**{alert.status}** {amount.value} {explorer.tx}" } },
        { ...telegram, parameters: { chatId: "@my_alerts", template: "{alert.summary}" } },
        { type: "Email", parameters: { recipients: ["ops@example.com"], subject: "{alert.status}: {event}", template: "{explorer.tx}" } },
      ),
    ]) {
      const res = validateRuleInput(body, "create", chains);
      expect(res.ok, JSON.stringify(res)).toBe(true);
      expect(createSchema.Check(body)).toBe(true);
    }
  });

  it("refuses a Telegram chat that is neither an id nor an @username, and a Discord action without url", () => {
    for (const chatId of ["", "abc", "@ab", "12 34", "-0", "1".repeat(17)]) {
      only(
        refuse((r) => (r.config.alerts = [{ ...telegram, parameters: { chatId } }])),
        "CS_RULE_ALERT_PARAMETERS",
        "config.alerts[0].parameters.chatId",
      );
    }
    only(
      refuse((r) => (r.config.alerts = [{ type: "Discord", parameters: { username: "x" } }])),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.url",
    );
  });

  it("refuses template tokens that are not field paths (schema pattern too) or name unknown alert/explorer fields (by hand)", () => {
    const [syntax, ...more] = refuse((r) => (r.config.alerts[1].parameters.template = "{alert.status} {a b} {explorer.nope}"));
    expect(more).toEqual([]);
    expect(syntax).toMatchObject({ code: "CS_RULE_ALERT_PARAMETERS", path: "config.alerts[1].parameters.template" });
    expect(syntax!.message).toContain("{a b} is not a field path");
    expect(syntax!.message).toContain("{explorer.nope}: explorer links are tx, block, address, token");
    only(
      refuse((r) => (r.config.alerts[1].parameters.template = "{alert.nope}"), "create", false),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[1].parameters.template",
    );
    only(
      refuse((r) => (r.config.alerts[0].parameters.subject = "{}")),
      "CS_RULE_ALERT_PARAMETERS",
      "config.alerts[0].parameters.subject",
    );
  });

  it("caps template and subject lengths", () => {
    only(
      refuse((r) => (r.config.alerts[1].parameters.template = "x".repeat(RULE_LIMITS.templateMaxLength + 1))),
      "CS_RULE_TOO_LONG",
      "config.alerts[1].parameters.template",
    );
    only(
      refuse((r) => (r.config.alerts[0].parameters.subject = "x".repeat(RULE_LIMITS.subjectMaxLength + 1))),
      "CS_RULE_TOO_LONG",
      "config.alerts[0].parameters.subject",
    );
  });
});

describe("validateRuleInput: storm control fields of an action (throttle, digest)", () => {
  const alerts = (r: Body) => (r.config as { alerts: Record<string, unknown>[] }).alerts;

  it("accepts throttle, throttle false and digest on any action", () => {
    const body = validRule();
    alerts(body)[0]!.throttle = { max: 5, windowSec: 60 };
    alerts(body)[1]!.throttle = false;
    alerts(body)[2]!.digest = { windowSec: 300, maxEntities: 5 };
    const res = validateRuleInput(body, "create", chains);
    if (!res.ok) throw new Error(JSON.stringify(res.errors));
    expect(createSchema.Check(body)).toBe(true);
  });

  it("refuses a throttle of 0 messages, a window of 0 s, unknown fields and 51 named entities", () => {
    for (const bad of [
      { throttle: { max: 0, windowSec: 60 } },
      { throttle: { max: 5, windowSec: 0 } },
      { throttle: { max: 5, windowSec: 60, burst: 2 } },
      { throttle: true },
      { digest: { windowSec: 60, maxEntities: 51 } },
      { digest: { maxEntities: 5 } },
    ]) {
      const errors = refuse((r) => Object.assign(alerts(r)[0]!, bad));
      expect(errors.length, JSON.stringify(bad)).toBeGreaterThan(0);
      expect(errors[0]!.path, JSON.stringify(bad)).toMatch(/^config\.alerts\[0\]/);
    }
  });
});

// h-kdest (issue 35): the Kafka destination's parameters.
describe("Kafka actions", () => {
  const kafka = { type: "Kafka", parameters: { brokers: ["kafka-1.example.com:9093"], topic: "chainsift-alerts" } };
  const withKafka = (parameters: Record<string, unknown>) => (r: Body) => (r.config.alerts = [{ type: "Kafka", parameters }]);
  const path = "config.alerts[0].parameters";

  it("accepts brokers as host:port (names, IPv4, [IPv6]) with a topic, key, TLS and SASL", () => {
    for (const parameters of [
      kafka.parameters,
      { brokers: ["10.1.2.3:9092", "[2001:db8::1]:9094", "b-1.msk.example.com:9096"], topic: "a.b-c_D9", key: "entityId" },
      {
        ...kafka.parameters,
        key: "ruleId",
        ssl: true,
        sslCa: "-----BEGIN CERTIFICATE-----\n…",
        sasl: { mechanism: "scram-sha-512", username: "u", password: "p" },
      },
      { ...kafka.parameters, sasl: { mechanism: "plain", username: "u", password: "p" } },
      {
        ...kafka.parameters,
        avro: { schemaRegistryUrl: "https://sr.example.com", auth: { username: "key", password: "secret" } },
      },
    ]) {
      const body = validRule();
      body.config.alerts = [{ type: "Kafka", parameters }];
      const res = validateRuleInput(body, "create", chains);
      expect(res.ok, JSON.stringify(res)).toBe(true);
      expect(createSchema.Check(body)).toBe(true);
    }
  });

  it("refuses each wrong parameter with CS_RULE_KAFKA_PARAMETERS at its path", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ topic: "t" }, `${path}.brokers`],
      [{ brokers: [], topic: "t" }, `${path}.brokers`],
      [{ brokers: ["kafka"], topic: "t" }, `${path}.brokers[0]`],
      [{ brokers: ["kafka:0"], topic: "t" }, `${path}.brokers[0]`],
      [{ brokers: ["kafka:65536"], topic: "t" }, `${path}.brokers[0]`],
      [{ brokers: ["http://kafka:9092"], topic: "t" }, `${path}.brokers[0]`],
      [{ brokers: Array.from({ length: 11 }, (_, i) => `k${i}:9092`), topic: "t" }, `${path}.brokers`],
      [{ brokers: ["k:1", "k:1"], topic: "t" }, `${path}.brokers[1]`],
      [{ brokers: ["k:1"] }, `${path}.topic`],
      [{ brokers: ["k:1"], topic: "" }, `${path}.topic`],
      [{ brokers: ["k:1"], topic: "has space" }, `${path}.topic`],
      [{ brokers: ["k:1"], topic: ".." }, `${path}.topic`],
      [{ brokers: ["k:1"], topic: "t".repeat(250) }, `${path}.topic`],
      [{ brokers: ["k:1"], topic: "t", key: "blockHash" }, `${path}.key`],
      [{ brokers: ["k:1"], topic: "t", avro: {} }, `${path}.avro.schemaRegistryUrl`],
      [{ brokers: ["k:1"], topic: "t", avro: { schemaRegistryUrl: "ftp://r" } }, `${path}.avro.schemaRegistryUrl`],
      [{ brokers: ["k:1"], topic: "t", avro: { schemaRegistryUrl: "https://r", auth: { username: "u" } } }, `${path}.avro.auth.password`],
      [{ brokers: ["k:1"], topic: "t", avro: { schemaRegistryUrl: "https://r", subject: "x" } }, `${path}.avro.subject`],
      [{ brokers: ["k:1"], topic: "t", ssl: "yes" }, `${path}.ssl`],
      [{ brokers: ["k:1"], topic: "t", sasl: { mechanism: "gssapi", username: "u", password: "p" } }, `${path}.sasl.mechanism`],
      [{ brokers: ["k:1"], topic: "t", sasl: { mechanism: "plain", username: "u" } }, `${path}.sasl.password`],
      [{ brokers: ["k:1"], topic: "t", sasl: { mechanism: "plain", username: "", password: "p" } }, `${path}.sasl.username`],
      [{ brokers: ["k:1"], topic: "t", sasl: { mechanism: "plain", username: "u", password: "p", extra: 1 } }, `${path}.sasl.extra`],
    ];
    for (const [parameters, at] of cases) only(refuse(withKafka(parameters)), "CS_RULE_KAFKA_PARAMETERS", at);
  });
});
