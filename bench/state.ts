/**
 * `npm run bench -- state [--subjects N] [--blocks B]`: what reading state conditions costs per
 * block (issue 34 part 1): N watched native balances (default 1000) read at each of B new blocks
 * (default 20) of a local anvil through the chain's JSON-RPC client, in one JSON-RPC batch per block
 * at the block hash (lib/chain/state-reads.ts). Prints JSON-RPC calls and HTTP requests per block and
 * the median and p95 ms per block, beside Ethereum's 12 s block time. anvil on 127.0.0.1 answers from
 * memory: a remote node adds its round trip and its own state-read cost.
 * @module
 */
import { startAnvil } from "../cli/devchain/anvil.js";
import { readStates, type StateSubject } from "../lib/chain/state-reads.js";
import { createRpcClient } from "../lib/rpc/client.js";

const at = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] as number;

/** Runs the state-read benchmark (module notes). */
export async function benchState(args: string[]): Promise<void> {
  const opt = (name: string, fallback: number) => Number(args[args.indexOf(name) + 1] ?? 0) || fallback;
  const n = opt("--subjects", 1000);
  const blocks = opt("--blocks", 20);
  const anvil = await startAnvil({ blockTimeSec: 0 });
  const client = createRpcClient({ urls: [anvil.rpcUrl] });
  try {
    const subjects: StateSubject[] = Array.from({ length: n }, (_, i) => ({
      type: "balance",
      address: `0x${(i + 1).toString(16).padStart(40, "0")}`,
    }));
    const ms: number[] = [];
    let calls = 0;
    let requests = 0;
    for (let b = 0; b < blocks; b++) {
      await client.request("evm_mine", []);
      const { hash } = await client.request<{ hash: string }>("eth_getBlockByNumber", ["latest", false]);
      const t0 = performance.now();
      const readings = await readStates(client, hash, subjects, n);
      ms.push(performance.now() - t0);
      calls += readings.filter((r) => r.ok).length;
      requests += 1;
    }
    console.log(`state reads: ${n} balances x ${blocks} blocks on anvil (127.0.0.1), one JSON-RPC batch per block`);
    console.log(`  JSON-RPC calls per block   ${calls / blocks}`);
    console.log(`  HTTP requests per block    ${requests / blocks}`);
    console.log(`  ms per block (median)      ${at(ms, 0.5).toFixed(1)}`);
    console.log(`  ms per block (p95)         ${at(ms, 0.95).toFixed(1)}`);
    console.log(`  share of a 12 s block      ${((at(ms, 0.5) / 12_000) * 100).toFixed(2)} %`);
  } finally {
    client.destroy();
    await anvil.stop();
  }
}
