/**
 * The operations commands of the admin CLI: `alerts replay` (pipeline/notify/replay.ts) and
 * `status` (cli/status.ts).
 * @module
 */
import type { StatusThresholds } from "../status.js";
import { type CliCommand, EXIT_FAILURE, EXIT_OK, printJson, UsageError } from "./core.js";

/** `alerts replay [--rule <rule-id>] [--idle-ms <ms>]`: re-sends dead-lettered alerts. */
export const alertsReplayCommand: CliCommand = {
  path: ["alerts", "replay"],
  summary: "re-send dead-lettered alerts (only their undelivered actions)",
  usage: "[--rule <rule-id>] [--idle-ms <ms>]",
  details:
    "Reads the dead-letter topic with its own consumer group (one per --rule), so each dead letter is replayed once per group.\n" +
    "Alerts of a storm-control digest that was given up are dead-lettered one by one and replayed like any other; a replayed\n" +
    "alert goes through its action's throttle or digest again (in the current window).",
  options: { rule: { type: "string" }, "idle-ms": { type: "string" } },
  run: async (ctx, args) => {
    const idle = args.values["idle-ms"] === undefined ? undefined : Number(args.values["idle-ms"]);
    if (idle !== undefined && (!Number.isInteger(idle) || idle < 0)) throw new UsageError("--idle-ms: expected a non-negative integer");
    // Loaded on use: Kafka, the notify stage and the status probes (Elasticsearch, JSON-RPC) are
    // ~1.4 s of start-up that the account and ABI commands do not need.
    const [{ createLogger }, { createBus }, { replayAlertDeadLetters }] = await Promise.all([
      import("../../lib/logger.js"),
      import("../../pipeline/kafka/bus.js"),
      import("../../pipeline/notify/replay.js"),
    ]);
    const bus = await createBus({ config: ctx.config, logger: createLogger("warn", "chainsift-cli") });
    const result = await replayAlertDeadLetters({ bus, ruleId: args.values.rule as string | undefined, idleMs: idle });
    if (args.values.json) printJson(ctx.output, result);
    else ctx.output.out(`read ${result.read} dead letters, replayed ${result.replayed} alerts`);
    return EXIT_OK;
  },
};

/** `status [--max-lag <records>] [--max-head-lag <blocks>] [--max-dead-letters <n>]`: health; exit 1 when unhealthy. */
export const statusCommand: CliCommand = {
  path: ["status"],
  summary: "services' health, head vs ingested, consumer-group lag, dead letters of the last hour; exit 1 when unhealthy",
  usage: "[--max-lag <records>] [--max-head-lag <blocks>] [--max-dead-letters <n>]",
  details:
    "Unhealthy (exit 1): a service does not answer within 3 s (Kafka, Elasticsearch or red, schema registry, Redis,\n" +
    "the JSON-RPC node of CHAINSIFT_RPC_URL: none of the endpoints of CHAINSIFT_RPC_URLS answers), or a given threshold\n" +
    "is exceeded. With several endpoints each is listed (ok/DOWN, head, blocks behind). See docs/metrics.md.",
  options: { "max-lag": { type: "string" }, "max-head-lag": { type: "string" }, "max-dead-letters": { type: "string" } },
  run: async (ctx, args) => {
    const limit = (name: string) => {
      const raw = args.values[name];
      if (raw === undefined) return undefined;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name}: expected a non-negative integer`);
      return n;
    };
    const thresholds: StatusThresholds = {};
    for (const [name, key] of [
      ["max-lag", "maxLag"],
      ["max-head-lag", "maxHeadLag"],
      ["max-dead-letters", "maxDeadLetters"],
    ] as const) {
      const n = limit(name);
      if (n !== undefined) thresholds[key] = n;
    }
    const { gatherStatus, renderStatus } = await import("../status.js");
    const status = await gatherStatus(ctx.config, thresholds);
    if (args.json) printJson(ctx.output, status);
    else ctx.output.out(renderStatus(status));
    return status.healthy ? EXIT_OK : EXIT_FAILURE;
  },
};
