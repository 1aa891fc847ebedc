import { describe, expect, it } from "vitest";
import { createLogger, isPretty, type LogOutput } from "../../../lib/logger.js";

/** An output collecting lines; `redirect` sends them to a second list. */
function collect() {
  const lines: string[] = [];
  const redirected: string[] = [];
  let to: ((l: string) => void) | undefined;
  const output: LogOutput = {
    write: (l) => (to ? to(l) : lines.push(l)),
    redirect: (fn) => {
      to = fn;
    },
  };
  return { lines, redirected, output, redirectHere: () => output.redirect((l) => redirected.push(l)) };
}

describe("logger format", () => {
  it("pretty in a terminal by default, JSON otherwise; LOG_FORMAT forces either", () => {
    expect(isPretty("auto", true)).toBe(true);
    expect(isPretty("auto", false)).toBe(false);
    expect(isPretty("json", true)).toBe(false);
    expect(isPretty("pretty", false)).toBe(true);
  });

  it("writes JSON lines", () => {
    const c = collect();
    createLogger("info", "t", { format: "json", tty: true, output: c.output }).info({ block: 7 }, "hello");
    expect(JSON.parse(c.lines[0] as string)).toMatchObject({ level: 30, name: "t", block: 7, msg: "hello" });
  });

  it("censors the rules' secret parameters (routing and API keys) wherever an action or config is logged", () => {
    const c = collect();
    const log = createLogger("info", "t", { format: "json", tty: false, output: c.output });
    const action = { type: "PagerDuty", parameters: { routingKey: "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey12", severity: "error" } };
    log.info({ action }, "a");
    log.info({ rule: { config: { alerts: [{ type: "Opsgenie", parameters: { apiKey: "eb243592-faa2" } }] } } }, "b");
    log.info({ parameters: action.parameters, apiKey: "eb243592-faa2" }, "c");
    const text = c.lines.join("");
    expect(text).not.toContain("R0ut1ngKey");
    expect(text).not.toContain("eb243592");
    expect(JSON.parse(c.lines[0] as string).action.parameters).toEqual({ routingKey: "[redacted]", severity: "error" });
  });

  it("writes human-readable lines: level, name, message and fields on one line", () => {
    const c = collect();
    createLogger("info", "t", { format: "pretty", tty: false, output: c.output }).warn({ block: 7 }, "hello");
    expect(c.lines).toHaveLength(1);
    expect(c.lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN \(t\): hello \{"block":7\}\n$/);
  });

  it("sends lines where the output is redirected, then back", () => {
    const c = collect();
    const logger = createLogger("info", "t", { format: "pretty", tty: false, output: c.output });
    c.redirectHere();
    logger.info("during");
    c.output.redirect(undefined);
    logger.info("after");
    expect(c.redirected).toHaveLength(1);
    expect(c.redirected[0]).toContain("during");
    expect(c.lines).toHaveLength(1);
    expect(c.lines[0]).toContain("after");
  });
});

describe("logger redaction", () => {
  it("never writes a Kafka action's SASL password, however the action is logged", () => {
    const c = collect();
    const logger = createLogger("info", "t", { format: "json", tty: false, output: c.output });
    const sasl = { mechanism: "plain", username: "u", password: "hunter2-secret" };
    const avro = { schemaRegistryUrl: "https://sr.example", auth: { username: "k", password: "hunter2-secret" } };
    const action = { type: "Kafka", parameters: { brokers: ["k:9092"], topic: "t", sasl, avro } };
    logger.info({ action }, "a");
    logger.info({ parameters: action.parameters }, "b");
    logger.info({ sasl }, "c");
    logger.info({ password: "hunter2-secret" }, "d");
    expect(c.lines).toHaveLength(4);
    for (const line of c.lines) expect(line).not.toContain("hunter2-secret");
    const logged = JSON.parse(c.lines[0] as string).action.parameters;
    expect(logged.sasl).toEqual({ mechanism: "plain", username: "u", password: "[redacted]" });
    expect(logged.avro.auth).toEqual({ username: "k", password: "[redacted]" });
  });
});
