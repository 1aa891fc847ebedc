/**
 * `npm run bench -- rules [--iterations N]`: time of `validateRuleInput` (lib/rules/validate.ts)
 * per rule body, for a valid rule (the compiled schema accepts it at once) and for a rule with two
 * problems (the schema walk explains the refusal, lib/validation/schema-check.ts). Prints
 * microseconds per body for each; a warm-up of N/10 bodies runs first. Pure CPU: no service needed.
 * @module
 */
import type { ChainId } from "../lib/config/index.js";
import { validateRuleInput } from "../lib/rules/validate.js";

const CHAINS: ChainId[] = [{ technology: "ethereum", blockchain: "ethereum", network: "mainnet" }];

/** A rule with a two-level Inspect, a templated webhook URL and a payload. */
function sampleRule(): Record<string, unknown> {
  return {
    name: "large transfers",
    maxConfirmationCount: 1,
    ...CHAINS[0],
    config: {
      targetType: "Event",
      targetMap: [
        { name: "address", operator: "Equals", value: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48" },
        {
          name: "args",
          operator: "Inspect",
          operatorParameters: [{ name: "value", operator: "Greater", value: "5", useScaledValue: true }],
        },
      ],
      alerts: [
        {
          type: "Webhook (POST)",
          parameters: { url: "https://example.com/{transactionHash}" },
          payload: [{ fieldType: "Field", fieldName: "transactionHash" }],
        },
      ],
    },
  };
}

/**
 * Runs the benchmark and prints one line per body kind.
 * @param args - `--iterations N` (default 20000).
 */
export async function benchRules(args: string[]): Promise<void> {
  const at = args.indexOf("--iterations");
  const iterations = at >= 0 ? Number(args[at + 1]) : 20_000;
  const valid = sampleRule();
  const invalid = sampleRule() as { config: { targetMap: Array<Record<string, unknown>>; alerts: Array<{ parameters: { url: string } }> } };
  invalid.config.targetMap[0]!.operator = "Nope";
  invalid.config.alerts[0]!.parameters.url = "ftp://example.com";
  for (const [label, body, ok] of [
    ["valid", valid, true],
    ["invalid (2 problems)", invalid, false],
  ] as const) {
    for (let i = 0; i < iterations / 10; i++) validateRuleInput(body, "create", CHAINS);
    const start = performance.now();
    for (let i = 0; i < iterations; i++) {
      if (validateRuleInput(body, "create", CHAINS).ok !== ok) throw new Error(`unexpected result for the ${label} rule`);
    }
    const micros = ((performance.now() - start) * 1000) / iterations;
    console.log(`rules: ${label}: ${micros.toFixed(1)} µs per body (${iterations} bodies)`);
  }
}
