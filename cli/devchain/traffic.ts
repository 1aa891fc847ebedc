/**
 * Synthetic but real on-chain activity for the embedded dev chain: deploys an OpenZeppelin ERC-20
 * (and optionally an ERC-721), mints to the node's unlocked dev accounts, then keeps sending token
 * transfers, approvals, `transferFrom`s, ETH transfers and NFT mints/transfers between them, so a
 * newcomer running `npm start` sees records arrive.
 * @module
 */
import {
  FetchRequest,
  getAddress,
  Interface,
  JsonRpcProvider,
  JsonRpcSigner,
  Network,
  parseUnits,
  type TransactionReceipt,
  type TransactionRequest,
} from "ethers";
import { ChainsiftError } from "../../lib/errors.js";
import { compileDevContracts } from "./contracts.js";
import { type DevchainLogger, errorMessage, silentLogger } from "./log.js";
import { fetchChainId } from "./rpc.js";

/** ERC-20 `name()` of the dev token. */
export const TOKEN_NAME = "Chainsift Test Token";
/** ERC-20 `symbol()` of the dev token. */
export const TOKEN_SYMBOL = "CST";
/** ERC-20 `decimals()` of the dev token: 6 (like USDC), so token amounts never look like 18-decimal wei. */
export const TOKEN_DECIMALS = 6;
/** Base units minted to every account at start-up: 1,000,000 CST (= 10^12 base units). */
export const MINT_PER_ACCOUNT: bigint = parseUnits("1000000", TOKEN_DECIMALS);

/** Options of {@link startTraffic}. */
export interface TrafficOptions {
  /** HTTP JSON-RPC URL of a dev node whose `eth_accounts` are unlocked (anvil, Hardhat node); at least 2 accounts. */
  rpcUrl: string;
  /** Milliseconds between two rounds of transactions. Default 1000; minimum 10. */
  intervalMs?: number;
  /** Token transfers sent per round. Default 3. */
  transfersPerRound?: number;
  /** Also deploy an ERC-721 and mint/transfer it every third round. Default true. */
  nft?: boolean;
  /** Receives deployments at `info`, each transaction at `debug`, failures at `warn`. Default: silent. */
  logger?: DevchainLogger;
  /** Aborting it is the same as calling `stop()`; aborting during start-up makes `startTraffic` reject. */
  signal?: AbortSignal;
}

/** Counters of a running traffic generator. */
export interface TrafficStats {
  /** Rounds started. */
  rounds: number;
  /** Transactions accepted by the node (including deployments and start-up mints). */
  sent: number;
  /** Operations that failed (estimate/send error, revert, timeout); failures after `stop()` are not counted. */
  failed: number;
}

/** A running traffic generator returned by {@link startTraffic}. */
export interface TrafficHandle {
  /** Checksummed address of the deployed `ChainsiftTestToken` (ERC-20, {@link TOKEN_DECIMALS} decimals). */
  token: string;
  /** Checksummed address of the deployed `ChainsiftTestNFT` (ERC-721); undefined when `nft: false`. */
  nft?: string;
  /** The node's `eth_accounts` (checksummed), all of which send and receive; each got {@link MINT_PER_ACCOUNT} CST. */
  accounts: string[];
  /** `accounts[0]`: deployer and owner (sole minter) of the contracts. */
  deployer: string;
  /** A snapshot of the counters. */
  stats(): TrafficStats;
  /**
   * Stops sending: no new round starts, queued sends are dropped, in-flight requests are awaited
   * (transactions already accepted by the node may still be mined afterwards). Idempotent; never rejects.
   */
  stop(): Promise<void>;
}

/** Thrown inside operations cut short by stop(); swallowed by the generator. */
class Stopped extends ChainsiftError {
  readonly code = "CS_TRAFFIC_STOPPED";
  constructor() {
    super("traffic stopped");
    this.name = "Stopped";
  }
}

const RECEIPT_TIMEOUT_MS = 120_000;
const MAX_IN_FLIGHT = 64;
const NFT_CAP = 50;

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

const randomInt = (n: number) => Math.floor(Math.random() * n);
/** A random amount in (0, maxWhole] tokens, in base units. */
const randomAmount = (maxWhole: number) => BigInt(randomInt(maxWhole * 10 ** TOKEN_DECIMALS)) + 1n;

/**
 * Deploys the dev contracts on `rpcUrl`, mints to every unlocked account and starts sending
 * transactions every `intervalMs`. Every round sends `transfersPerRound` CST transfers between
 * random accounts; every 4th round (offset 1) an `approve`, two rounds later the spender's
 * `transferFrom` of that allowance; every 5th round a plain ETH transfer (0.001–0.1 ETH); every
 * 3rd round an NFT mint or transfer. Token supply only moves between `accounts`, so the sum of
 * their balances always equals `totalSupply()`.
 *
 * Transactions go through `eth_sendTransaction` with one ethers `JsonRpcSigner` per account (the
 * node signs and assigns nonces); sends from one account are serialised so nonces never race.
 * Failed operations are logged and counted, never thrown; nothing rejects unhandled after `stop()`.
 * @param opts See {@link TrafficOptions}.
 * @returns Once contracts are deployed and minted (a few blocks), the addresses and `stop()`.
 * @throws {RangeError} on a bad `intervalMs` or `transfersPerRound`.
 * @throws {Error} when the node is unreachable, has fewer than 2 unlocked accounts, a deployment
 *   or mint fails, or compilation fails (`DevContractCompileError`); the abort reason when
 *   `signal` aborts during start-up.
 */
export async function startTraffic(opts: TrafficOptions): Promise<TrafficHandle> {
  const log = opts.logger ?? silentLogger;
  const intervalMs = opts.intervalMs ?? 1000;
  const transfersPerRound = opts.transfersPerRound ?? 3;
  const withNft = opts.nft ?? true;
  if (!Number.isFinite(intervalMs) || intervalMs < 10) throw new RangeError(`intervalMs: expected a number >= 10, got ${intervalMs}`);
  if (!Number.isInteger(transfersPerRound) || transfersPerRound < 0) {
    throw new RangeError(`transfersPerRound: expected an integer >= 0, got ${transfersPerRound}`);
  }
  opts.signal?.throwIfAborted();

  const pollMs = Math.min(250, Math.max(50, Math.floor(intervalMs / 4)));
  const stopCtl = new AbortController();
  let stopping = false;
  const stats: TrafficStats = { rounds: 0, sent: 0, failed: 0 };
  const inFlight = new Set<Promise<void>>();
  let loopDone: Promise<void> = Promise.resolve();
  let provider: JsonRpcProvider | undefined;
  let stopPromise: Promise<void> | undefined;

  const stop = (): Promise<void> => {
    stopPromise ??= (async () => {
      stopping = true;
      stopCtl.abort();
      await loopDone;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      provider?.destroy();
      log.info({ ...stats }, "devchain traffic stopped");
    })();
    return stopPromise;
  };
  const onAbort = () => void stop();
  opts.signal?.addEventListener("abort", onAbort, { once: true });

  try {
    const chainId = await fetchChainId(opts.rpcUrl, 5000);
    const request = new FetchRequest(opts.rpcUrl);
    request.timeout = 15_000;
    const prov = new JsonRpcProvider(request, Network.from(chainId), { staticNetwork: true, pollingInterval: pollMs });
    provider = prov;

    const accounts = ((await prov.send("eth_accounts", [])) as string[]).map((a) => getAddress(a));
    if (accounts.length < 2) {
      throw new Error(
        `${opts.rpcUrl} exposes ${accounts.length} unlocked account(s) via eth_accounts; devchain traffic needs at least 2 (use anvil or a Hardhat node)`,
      );
    }
    const deployer = accounts[0]!;
    const signers = new Map(accounts.map((a) => [a, new JsonRpcSigner(prov, a)]));
    const locks = new Map<string, Promise<unknown>>();

    /** eth_sendTransaction from `from`, serialised per account; resolves with the hash once the node accepted it. */
    const send = (from: string, tx: TransactionRequest, what: string): Promise<string> => {
      const previous = locks.get(from) ?? Promise.resolve();
      const sent = previous.then(async () => {
        if (stopping) throw new Stopped();
        const hash = await signers.get(from)!.sendUncheckedTransaction(tx);
        stats.sent++;
        log.debug({ what, from, to: tx.to ?? null, hash }, "devchain tx sent");
        return hash;
      });
      locks.set(
        from,
        sent.then(
          () => {},
          () => {},
        ),
      );
      return sent;
    };

    const waitReceipt = async (hash: string, what: string): Promise<TransactionReceipt> => {
      const deadline = Date.now() + RECEIPT_TIMEOUT_MS;
      for (;;) {
        if (stopping) throw new Stopped();
        const receipt = await prov.getTransactionReceipt(hash);
        if (receipt) {
          if (receipt.status !== 1) throw new Error(`${what} reverted (tx ${hash})`);
          return receipt;
        }
        if (Date.now() > deadline) throw new Error(`${what}: no receipt within ${RECEIPT_TIMEOUT_MS} ms (tx ${hash})`);
        await sleep(pollMs, stopCtl.signal);
      }
    };

    // --- deploy and mint -------------------------------------------------------------------------
    const compiled = await compileDevContracts();
    if (stopping) throw new Stopped();
    const tokenIface = new Interface(compiled.token.abi);
    const nftIface = new Interface(compiled.nft.abi);
    const deploy = async (what: string, bytecode: string, iface: Interface): Promise<string> => {
      const data = bytecode + iface.encodeDeploy([deployer]).slice(2);
      const receipt = await waitReceipt(await send(deployer, { data }, `deploy ${what}`), `deploy ${what}`);
      if (!receipt.contractAddress) throw new Error(`deploy ${what}: receipt has no contractAddress`);
      return getAddress(receipt.contractAddress);
    };
    const [token, nft] = await Promise.all([
      deploy("ChainsiftTestToken", compiled.token.bytecode, tokenIface),
      withNft ? deploy("ChainsiftTestNFT", compiled.nft.bytecode, nftIface) : Promise.resolve(undefined),
    ]);
    log.info({ token, nft: nft ?? null, solc: compiled.solcVersion }, "devchain contracts deployed");

    const nftOwners = new Map<bigint, string>();
    const nftBusy = new Set<bigint>();
    const mintNft = async (to: string): Promise<void> => {
      if (!nft) return;
      const hash = await send(deployer, { to: nft, data: nftIface.encodeFunctionData("mint", [to]) }, "nft mint");
      const receipt = await waitReceipt(hash, "nft mint");
      for (const l of receipt.logs) {
        if (getAddress(l.address) !== nft) continue;
        const parsed = nftIface.parseLog(l);
        if (parsed?.name === "Transfer") nftOwners.set(parsed.args[2] as bigint, getAddress(parsed.args[1] as string));
      }
    };

    const mints = accounts.map(async (to) => {
      const hash = await send(deployer, { to: token, data: tokenIface.encodeFunctionData("mint", [to, MINT_PER_ACCOUNT]) }, "token mint");
      await waitReceipt(hash, "token mint");
    });
    const nftMints = accounts.slice(0, 3).map((to) => mintNft(to));
    await Promise.all([...mints, ...nftMints]);
    log.info(
      { accounts: accounts.length, perAccount: `${MINT_PER_ACCOUNT / 10n ** BigInt(TOKEN_DECIMALS)} ${TOKEN_SYMBOL}` },
      "devchain tokens minted",
    );

    // --- steady traffic ----------------------------------------------------------------------------
    let consecutiveFailures = 0;
    const launch = (what: string, op: () => Promise<void>): void => {
      if (stopping || inFlight.size >= MAX_IN_FLIGHT) return;
      const p: Promise<void> = op()
        .then(
          () => {
            consecutiveFailures = 0;
          },
          (err: unknown) => {
            if (stopping || err instanceof Stopped) return;
            stats.failed++;
            consecutiveFailures++;
            const fields = { what, err: errorMessage(err) };
            if (consecutiveFailures <= 5) log.warn(fields, "devchain traffic operation failed");
            else log.debug(fields, "devchain traffic operation failed (further failures logged at debug until one succeeds)");
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    };
    const pick = (exclude?: string): string => {
      for (;;) {
        const a = accounts[randomInt(accounts.length)]!;
        if (a !== exclude) return a;
      }
    };

    let approval: { owner: string; spender: string; amount: bigint; ready: boolean } | undefined;
    const round = (n: number): void => {
      for (let i = 0; i < transfersPerRound; i++) {
        const from = pick();
        const to = pick(from);
        const amount = randomAmount(100);
        launch("token transfer", async () => {
          await send(from, { to: token, data: tokenIface.encodeFunctionData("transfer", [to, amount]) }, "token transfer");
        });
      }
      if (n % 5 === 0) {
        const from = pick();
        const to = pick(from);
        const value = parseUnits(String((1 + randomInt(100)) / 1000), 18);
        launch("eth transfer", async () => {
          await send(from, { to, value }, "eth transfer");
        });
      }
      if (n % 4 === 1 && approval === undefined) {
        const owner = pick();
        const entry = { owner, spender: pick(owner), amount: randomAmount(500), ready: false };
        approval = entry;
        launch("approve", async () => {
          try {
            const data = tokenIface.encodeFunctionData("approve", [entry.spender, entry.amount]);
            await waitReceipt(await send(owner, { to: token, data }, "approve"), "approve");
            entry.ready = true;
          } catch (err) {
            approval = undefined;
            throw err;
          }
        });
      } else if (n % 4 === 3 && approval?.ready) {
        const { owner, spender, amount } = approval;
        approval = undefined;
        const to = pick(owner);
        launch("transferFrom", async () => {
          const data = tokenIface.encodeFunctionData("transferFrom", [owner, to, amount]);
          await send(spender, { to: token, data }, "transferFrom");
        });
      }
      if (nft && n % 3 === 2) {
        const free = [...nftOwners.keys()].filter((id) => !nftBusy.has(id));
        if (free.length > 0 && (nftOwners.size >= NFT_CAP || Math.random() < 0.6)) {
          const id = free[randomInt(free.length)]!;
          const owner = nftOwners.get(id)!;
          const to = pick(owner);
          nftBusy.add(id);
          launch("nft transfer", async () => {
            try {
              const data = nftIface.encodeFunctionData("transferFrom", [owner, to, id]);
              await waitReceipt(await send(owner, { to: nft, data }, "nft transfer"), "nft transfer");
              nftOwners.set(id, to);
            } finally {
              nftBusy.delete(id);
            }
          });
        } else {
          launch("nft mint", () => mintNft(pick()));
        }
      }
    };

    loopDone = (async () => {
      while (!stopping) {
        stats.rounds++;
        round(stats.rounds);
        await sleep(intervalMs, stopCtl.signal);
      }
    })();
    log.info({ intervalMs, token, nft: nft ?? null }, "devchain traffic started");
    return { token, ...(nft ? { nft } : {}), accounts, deployer, stats: () => ({ ...stats }), stop };
  } catch (err) {
    const aborted = stopping;
    await stop();
    opts.signal?.removeEventListener("abort", onAbort);
    if (aborted || err instanceof Stopped) throw opts.signal?.reason ?? new Error("startTraffic: stopped during start-up");
    throw err;
  }
}
