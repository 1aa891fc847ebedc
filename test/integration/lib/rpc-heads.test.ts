/**
 * Head discovery by `eth_subscribe("newHeads")` over WebSocket (lib/rpc/heads.ts) against a real
 * anvil (which offers it on its HTTP port): the subscription announces the heads anvil mines and
 * wakes a waiter before its (long) wait is over; a URL where no node listens is survived (polling
 * fallback: the wait runs out, nothing throws). Needs only anvil.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { rpcCall } from "../../../cli/devchain/rpc.js";
import { headsStale, STALE_BLOCKS, subscribeNewHeads } from "../../../lib/rpc/heads.js";

describe("newHeads subscription (lib/rpc/heads.ts)", () => {
  let anvil: AnvilHandle;
  beforeAll(async () => {
    anvil = await startAnvil({ blockTimeSec: 0 }); // mined by the test
  }, 60_000);
  afterAll(async () => {
    await anvil?.stop();
  });

  it("announces anvil's new heads and wakes a waiter at once", async () => {
    const heads = subscribeNewHeads(anvil.rpcUrl.replace(/^http/, "ws"));
    try {
      // Mine until the subscription has announced a head (it connects in the background).
      for (let i = 0; i < 100 && heads.last() === null; i++) {
        await rpcCall(anvil.rpcUrl, "evm_mine", []);
        await heads.wait(100);
      }
      const first = heads.last();
      expect(first).not.toBeNull();
      // A wait of 10 minutes ends with the next head: the test would time out otherwise.
      const waiting = heads.wait(600_000);
      await rpcCall(anvil.rpcUrl, "evm_mine", []);
      await waiting;
      expect(heads.last()).toBe((first as number) + 1);
      expect(heads.last()).toBe(Number(await rpcCall(anvil.rpcUrl, "eth_blockNumber", [])));
    } finally {
      heads.close();
    }
  }, 90_000);

  it("a URL without a WebSocket node is survived: waits run out, nothing throws, close ends a wait", async () => {
    // An HTTP server that refuses the upgrade.
    const server = createServer((_, res) => res.writeHead(404).end());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const heads = subscribeNewHeads(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      await heads.wait(300);
      heads.polled(10);
      heads.polled(10 + STALE_BLOCKS + 1);
      expect(heads.last()).toBeNull();
      const waiting = heads.wait(600_000);
      heads.close();
      await waiting;
    } finally {
      heads.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("stale: the polled head more than STALE_BLOCKS past the last head announced (or the first polled)", () => {
    expect(headsStale(100, null, 100 + STALE_BLOCKS)).toBe(false);
    expect(headsStale(100, null, 101 + STALE_BLOCKS)).toBe(true);
    expect(headsStale(null, 50, 50 + STALE_BLOCKS)).toBe(false);
    expect(headsStale(null, 50, 51 + STALE_BLOCKS)).toBe(true);
    expect(headsStale(null, null, 1000)).toBe(false);
  });
});
