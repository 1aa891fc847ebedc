import { logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../lib/logger.js";
import { kafkaLogCreator, kafkaLogLevel, TRANSIENT_KAFKA_CONDITIONS } from "../../../../pipeline/kafka/log.js";

describe("kafkajs log levels", () => {
  // Entries as kafkajs 2.2.4 logs them (message and `error` field), seen on `npm start`.
  const transient: Array<[string, number, string, string | undefined]> = [
    [
      "coordinator loading (InitProducerId)",
      logLevel.ERROR,
      "Response InitProducerId(key: 22, version: 1)",
      "The coordinator is loading and hence can't process requests for this group",
    ],
    [
      "group coordinator not available",
      logLevel.ERROR,
      "Response GroupCoordinator(key: 10, version: 2)",
      "The group coordinator is not available",
    ],
    ["not coordinator", logLevel.ERROR, "Response JoinGroup(key: 11, version: 5)", "This is not the correct coordinator for this group"],
    ["rebalancing (runner)", logLevel.WARN, "The group is rebalancing, re-joining", undefined],
    [
      "rebalancing (response)",
      logLevel.ERROR,
      "Response Heartbeat(key: 12, version: 3)",
      "The group is rebalancing, so a rejoin is needed",
    ],
    ["unknown member", logLevel.ERROR, "The coordinator is not aware of this member, re-joining the group", undefined],
    [
      "no leader yet",
      logLevel.ERROR,
      "Response Metadata(key: 3, version: 6)",
      "There is no leader for this topic-partition as we are in the middle of a leadership election",
    ],
  ];
  it.each(transient)("demotes %s to debug", (_name, level, message, error) => {
    expect(kafkaLogLevel(level, message, error)).toBe("debug");
  });

  it("covers every row of the table with at least one entry above", () => {
    for (const c of TRANSIENT_KAFKA_CONDITIONS) {
      expect(transient.some(([, , m, e]) => c.pattern.test(`${m}\n${e ?? ""}`))).toBe(true);
    }
  });

  it("keeps every other entry at its level", () => {
    expect(kafkaLogLevel(logLevel.ERROR, "Response Produce(key: 0, version: 7)", "The request timed out")).toBe("error");
    expect(
      kafkaLogLevel(logLevel.ERROR, "Crash: KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED 127.0.0.1:9092"),
    ).toBe("error");
    expect(kafkaLogLevel(logLevel.ERROR, "Failed to connect to seed broker, trying another broker from the list")).toBe("error");
    expect(kafkaLogLevel(logLevel.WARN, "Consumer group received unsubscribed topics")).toBe("warn");
    expect(kafkaLogLevel(logLevel.INFO, "Consumer has joined the group")).toBe("info");
    expect(kafkaLogLevel(logLevel.DEBUG, "Request Fetch(key: 1, version: 11)")).toBe("debug");
  });

  it("writes the entry into pino with its fields and namespace", () => {
    const lines: string[] = [];
    const logger = createLogger("debug", "t", { format: "json", output: { write: (l) => lines.push(l), redirect: () => {} } });
    const log = kafkaLogCreator(logger)(logLevel.WARN);
    log({
      namespace: "Connection",
      level: logLevel.ERROR,
      label: "ERROR",
      log: {
        timestamp: "2026-11-25T10:31:31.389Z",
        logger: "kafkajs",
        message: "Response InitProducerId(key: 22, version: 1)",
        broker: "127.0.0.1:9092",
        error: "The coordinator is loading and hence can't process requests for this group",
      },
    });
    log({
      namespace: "Connection",
      level: logLevel.ERROR,
      label: "ERROR",
      log: { timestamp: "x", message: "Response Produce(key: 0, version: 7)", error: "The request timed out" },
    });
    const [first, second] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(first).toMatchObject({
      level: 20,
      msg: "kafka: Response InitProducerId(key: 22, version: 1)",
      namespace: "Connection",
      broker: "127.0.0.1:9092",
    });
    expect(first).not.toHaveProperty("timestamp");
    expect(second).toMatchObject({ level: 50, error: "The request timed out" });
  });
});
