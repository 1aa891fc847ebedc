/**
 * The process context gets its chain contexts once (lib/common.ts `withChains`): the list is frozen
 * (no stage can swap a chain's context), and the shutdown destroys each context's JSON-RPC client once.
 */
import { describe, expect, it } from "vitest";
import type { ChainContext } from "../../../lib/chain-context.js";
import { createProcess, withChains } from "../../../lib/common.js";

/** A stand-in context that counts the destroys of its clients (only what withChains touches). */
function countingContext(key: string) {
  const destroyed = { rpc: 0, client: 0 };
  const context = {
    key,
    rpc: { destroy: () => destroyed.rpc++ },
    client: { destroy: () => destroyed.client++ },
  } as unknown as ChainContext;
  return { context, destroyed };
}

describe("withChains", () => {
  it("holds the contexts frozen, in order, and the shutdown destroys each one's clients once", async () => {
    let exitCode: number | undefined;
    const base = createProcess({ env: { LOG_LEVEL: "silent" }, signals: false, exit: (code) => (exitCode = code) });
    const a = countingContext("ethereum/ethereum/anvil");
    const b = countingContext("ethereum/ethereum/anvil-l2");
    const common = withChains(base, [a.context, b.context]);
    expect(common.chains.map((c) => c.key)).toEqual(["ethereum/ethereum/anvil", "ethereum/ethereum/anvil-l2"]);
    expect(Object.isFrozen(common.chains)).toBe(true);
    expect(() => (common.chains as ChainContext[]).push(a.context)).toThrow(TypeError);
    // The process's parts are shared, not copied.
    expect(common.config).toBe(base.config);
    expect(common.shutdown).toBe(base.shutdown);
    await common.shutdown.run("test");
    expect(exitCode).toBe(0);
    expect([a.destroyed, b.destroyed]).toEqual([
      { rpc: 1, client: 1 },
      { rpc: 1, client: 1 },
    ]);
  });
});
