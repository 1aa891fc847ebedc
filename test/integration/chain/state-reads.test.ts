import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { readStates, type StateSubject } from "../../../lib/chain/state-reads.js";
import { createRpcClient, type RpcClient } from "../../../lib/rpc/client.js";

const WALLET = "0x00000000000000000000000000000000000000aa";
const CONTRACT = "0x00000000000000000000000000000000000000bb";
/** Runtime code that returns the 32-byte word 42 for any call (PUSH1 42 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN). */
const RETURNS_42 = "0x602a60005260206000f3";
const ABI = ["function totalSupply() view returns (uint256)"];

let anvil: AnvilHandle;
let client: RpcClient;

async function mine(): Promise<string> {
  await client.request("evm_mine", []);
  const b = await client.request<{ hash: string }>("eth_getBlockByNumber", ["latest", false]);
  return b.hash;
}

beforeAll(async () => {
  anvil = await startAnvil({ blockTimeSec: 0 });
  client = createRpcClient({ urls: [anvil.rpcUrl] });
});
afterAll(async () => {
  client?.destroy();
  await anvil?.stop();
});

describe("state reads at a block hash (anvil)", () => {
  it("reads a balance, a storage slot and a view call in one batch, each at the block it was asked for", async () => {
    await client.request("anvil_setBalance", [WALLET, "0x100"]);
    await client.request("anvil_setCode", [CONTRACT, RETURNS_42]);
    await client.request("anvil_setStorageAt", [CONTRACT, "0x0", `0x${"7".padStart(64, "0")}`]);
    const first = await mine();
    await mine(); // anvil's cheat codes change the latest block's state in place: keep `first` below it
    await client.request("anvil_setBalance", [WALLET, "0x200"]);
    await client.request("anvil_setStorageAt", [CONTRACT, "0x0", `0x${"9".padStart(64, "0")}`]);
    const second = await mine();
    const subjects: StateSubject[] = [
      { type: "balance", address: WALLET },
      { type: "storage", address: CONTRACT, slot: "0x0" },
      { type: "call", to: CONTRACT, function: "totalSupply", abi: ABI },
    ];
    expect(await readStates(client, first, subjects, 10)).toEqual([
      { ok: true, value: 0x100n },
      { ok: true, value: 7n },
      { ok: true, value: 42n },
    ]);
    expect(await readStates(client, second, subjects, 10)).toEqual([
      { ok: true, value: 0x200n },
      { ok: true, value: 9n },
      { ok: true, value: 42n },
    ]);
  });

  it("stops at the read budget and reports an unknown block as an error reading, not a value", async () => {
    const hash = await mine();
    const r = await readStates(
      client,
      hash,
      [
        { type: "balance", address: WALLET },
        { type: "balance", address: CONTRACT },
      ],
      1,
    );
    expect(r[0]?.ok).toBe(true);
    expect(r[1]).toMatchObject({ ok: false, kind: "over_budget" });
    const unknown = await readStates(client, `0x${"ab".repeat(32)}`, [{ type: "balance", address: WALLET }], 1);
    expect(unknown[0]).toMatchObject({ ok: false, kind: "unavailable" });
  });
});
