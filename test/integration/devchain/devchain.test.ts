/**
 * The embedded dev chain against a real anvil (from the @foundry-rs/anvil npm package): start-up,
 * contract deployment, generated traffic, balance consistency, and a clean stop.
 */
import { Contract, getAddress, Interface, JsonRpcProvider, Network, ZeroAddress, zeroPadValue } from "ethers";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { type AnvilHandle, AnvilNotFoundError, AnvilStartError, resolveAnvilBinary, startAnvil } from "../../../cli/devchain/anvil.js";
import type { DevchainLogger } from "../../../cli/devchain/log.js";
import {
  MINT_PER_ACCOUNT,
  startTraffic,
  TOKEN_DECIMALS,
  TOKEN_NAME,
  TOKEN_SYMBOL,
  type TrafficHandle,
} from "../../../cli/devchain/traffic.js";

const ERC20 = new Interface([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
  "function name() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
  "function totalSupply() view returns (uint256)",
  "function balanceOf(address) view returns (uint256)",
]);
const TRANSFER = ERC20.getEvent("Transfer")!.topicHash;
const APPROVAL = ERC20.getEvent("Approval")!.topicHash;
const ZERO_TOPIC = zeroPadValue(ZeroAddress, 32);

/** Collects warnings and errors so the test can assert there were none. */
function collectingLogger(): DevchainLogger & { problems: string[] } {
  const problems: string[] = [];
  const keep = (level: string) => (fields: Record<string, unknown>, message: string) =>
    problems.push(`${level} ${message} ${JSON.stringify(fields)}`);
  return { problems, debug: () => {}, info: () => {}, warn: keep("warn"), error: keep("error") };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw err;
  }
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("embedded dev chain (real anvil)", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it("finds the anvil executable from the npm package", () => {
    const bin = resolveAnvilBinary();
    expect(bin).not.toMatch(/\.bin[/\\]anvil$/);
    expect(() => resolveAnvilBinary("/nonexistent/anvil")).toThrow(AnvilNotFoundError);
  });

  it("starts anvil, deploys CST, generates transfers with consistent balances, and stops cleanly", async () => {
    const logger = collectingLogger();
    const anvil: AnvilHandle = await startAnvil({ port: 0, blockTimeSec: 0, logger });
    cleanups.push(() => anvil.stop());
    expect(anvil.rpcUrl).toBe(`http://127.0.0.1:${anvil.port}`);
    expect(anvil.port).toBeGreaterThan(0);
    expect(anvil.chainId).toBe(31337);
    expect(processExists(anvil.pid)).toBe(true);

    const traffic: TrafficHandle = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 100, logger });
    cleanups.push(() => traffic.stop());
    expect(traffic.accounts.length).toBeGreaterThanOrEqual(2);
    expect(traffic.deployer).toBe(traffic.accounts[0]);
    expect(traffic.nft).toBeDefined();

    const provider = new JsonRpcProvider(anvil.rpcUrl, Network.from(31337), { staticNetwork: true });
    cleanups.push(async () => provider.destroy());

    // At least 3 non-mint Transfer logs of the token, and at least one approve.
    const transfers = await until("3 CST transfers and an approval", 30_000, async () => {
      const logs = await provider.getLogs({ address: traffic.token, fromBlock: 0, toBlock: "latest", topics: [[TRANSFER, APPROVAL]] });
      const moves = logs.filter((l) => l.topics[0] === TRANSFER && l.topics[1] !== ZERO_TOPIC);
      const approvals = logs.filter((l) => l.topics[0] === APPROVAL);
      return moves.length >= 3 && approvals.length >= 1 ? moves : undefined;
    });
    for (const l of transfers) {
      const parsed = ERC20.parseLog(l)!;
      expect(traffic.accounts).toContain(getAddress(parsed.args[0] as string));
      expect(traffic.accounts).toContain(getAddress(parsed.args[1] as string));
      expect(parsed.args[2] as bigint).toBeGreaterThan(0n);
    }
    // The NFT got minted and has code.
    expect(await provider.getCode(traffic.nft!)).not.toBe("0x");
    const nftLogs = await provider.getLogs({ address: traffic.nft!, fromBlock: 0, toBlock: "latest", topics: [TRANSFER] });
    expect(nftLogs.length).toBeGreaterThanOrEqual(3);

    await traffic.stop();
    await traffic.stop(); // idempotent
    expect(traffic.stats().sent).toBeGreaterThan(transfers.length);
    expect(traffic.stats().failed).toBe(0);

    const token = new Contract(traffic.token, ERC20, provider);
    const blockTag = await provider.getBlockNumber();
    expect(await token.getFunction("name")({ blockTag })).toBe(TOKEN_NAME);
    expect(await token.getFunction("symbol")({ blockTag })).toBe(TOKEN_SYMBOL);
    expect(await token.getFunction("decimals")({ blockTag })).toBe(BigInt(TOKEN_DECIMALS));
    expect(TOKEN_DECIMALS).toBe(6);
    const totalSupply = (await token.getFunction("totalSupply")({ blockTag })) as bigint;
    expect(totalSupply).toBe(MINT_PER_ACCOUNT * BigInt(traffic.accounts.length));
    const balances = await Promise.all(traffic.accounts.map((a) => token.getFunction("balanceOf")(a, { blockTag }) as Promise<bigint>));
    expect(balances.reduce((s, b) => s + b, 0n)).toBe(totalSupply);
    expect(balances.some((b) => b !== MINT_PER_ACCOUNT)).toBe(true);
    provider.destroy();

    const { pid, rpcUrl } = anvil;
    await anvil.stop();
    await anvil.stop(); // idempotent
    expect(processExists(pid)).toBe(false);
    await expect(fetch(rpcUrl, { method: "POST", body: "{}", signal: AbortSignal.timeout(2000) })).rejects.toThrow();
    expect(logger.problems).toEqual([]);
  });

  it("fails clearly when the port is taken, with 1 s blocks on the first node", async () => {
    const logger: DevchainLogger = pino({ level: "silent" });
    const first = await startAnvil({ blockTimeSec: 1, logger });
    cleanups.push(() => first.stop());
    const provider = new JsonRpcProvider(first.rpcUrl, Network.from(31337), { staticNetwork: true });
    const start = await provider.getBlockNumber();
    await until("a new 1 s block", 5000, async () => ((await provider.getBlockNumber()) > start ? true : undefined));
    provider.destroy();

    const second = startAnvil({ port: first.port, logger });
    await expect(second).rejects.toBeInstanceOf(AnvilStartError);
    await expect(second).rejects.toThrow(/exited during start-up/);
    await first.stop();
    expect(processExists(first.pid)).toBe(false);
  });
});
