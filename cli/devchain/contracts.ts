/**
 * Compiles the dev chain's Solidity contracts (`contracts/ChainsiftDev.sol`: an OpenZeppelin
 * ERC-20 and ERC-721) with solc-js, entirely offline: the compiler is the `solc` npm package's
 * bundled `soljson.js` and imports resolve to the installed `@openzeppelin/contracts`.
 * The result is cached in memory for the life of the process.
 * @module
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { InterfaceAbi } from "ethers";
import { ChainsiftError } from "../../lib/errors.js";

/** ABI and creation bytecode of one compiled contract. */
export interface CompiledContract {
  /** Solidity ABI (JSON form), usable with ethers' `Interface`/`ContractFactory`. */
  abi: InterfaceAbi;
  /** Creation (deployment) bytecode, `0x`-prefixed hex, constructor arguments not appended. */
  bytecode: string;
}

/** The dev chain's compiled contracts. */
export interface DevContracts {
  /** `ChainsiftTestToken`: ERC-20 "Chainsift Test Token" / "CST", 6 decimals; `constructor(address initialOwner)`, `mint(address to, uint256 amount)` (owner only). */
  token: CompiledContract;
  /** `ChainsiftTestNFT`: ERC-721 "Chainsift Test NFT" / "CSNFT", ids from 1; `constructor(address initialOwner)`, `mint(address to) returns (uint256)` (owner only). */
  nft: CompiledContract;
  /** Version string of the solc-js compiler used, e.g. `0.8.37+commit.…`. */
  solcVersion: string;
}

/** Thrown when solc reports errors (the message lists them) or its output lacks a contract. */
export class DevContractCompileError extends ChainsiftError {
  /** Always `CS_DEV_CONTRACT_COMPILE`. */
  readonly code = "CS_DEV_CONTRACT_COMPILE";
  constructor(message: string) {
    super(message);
    this.name = "DevContractCompileError";
  }
}

/** File name of the Solidity source inside `cli/devchain/contracts/`. */
export const DEV_CONTRACTS_SOURCE_FILE = "ChainsiftDev.sol";

/** EVM version the contracts are compiled for (any node at Cancun or later runs them; anvil defaults to a later fork). */
export const DEV_CONTRACTS_EVM_VERSION = "cancun";

const OZ_PREFIX = "@openzeppelin/contracts/";

/** Reads the Solidity source of the dev contracts. */
export function devContractsSource(): string {
  return readFileSync(new URL(`./contracts/${DEV_CONTRACTS_SOURCE_FILE}`, import.meta.url), "utf8");
}

let cached: Promise<DevContracts> | undefined;

/**
 * Compiles the dev contracts once per process (later calls return the same promise; a failed
 * compilation is not cached). Runs solc-js synchronously inside the returned promise, which
 * blocks the event loop for roughly a second or two the first time.
 * @returns ABI and bytecode of `ChainsiftTestToken` and `ChainsiftTestNFT`.
 * @throws {DevContractCompileError} when solc reports an error.
 * @throws {Error} when the `solc` or `@openzeppelin/contracts` package is not installed.
 */
export function compileDevContracts(): Promise<DevContracts> {
  cached ??= compile().catch((err: unknown) => {
    cached = undefined;
    throw err;
  });
  return cached;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage?: string; message: string }[];
  contracts?: Record<string, Record<string, { abi: InterfaceAbi; evm: { bytecode: { object: string } } }>>;
}

async function compile(): Promise<DevContracts> {
  const { contracts, solcVersion } = await compileSolidity(DEV_CONTRACTS_SOURCE_FILE, devContractsSource(), [
    "ChainsiftTestToken",
    "ChainsiftTestNFT",
  ]);
  return { token: contracts.ChainsiftTestToken as CompiledContract, nft: contracts.ChainsiftTestNFT as CompiledContract, solcVersion };
}

/**
 * Compiles one Solidity source with solc-js, offline (optimizer on, 200 runs, EVM
 * {@link DEV_CONTRACTS_EVM_VERSION}); `@openzeppelin/contracts/…` imports resolve to the installed
 * package. Blocks the event loop while solc runs (about a second).
 * @param fileName - the source's file name (e.g. `Pinger.sol`).
 * @param source - the Solidity text.
 * @param names - the contracts whose ABI and bytecode are wanted.
 * @returns each named contract and the solc version.
 * @throws {DevContractCompileError} when solc reports an error or a named contract has no bytecode.
 * @throws {Error} when the `solc` or `@openzeppelin/contracts` package is not installed.
 */
export async function compileSolidity(
  fileName: string,
  source: string,
  names: readonly string[],
): Promise<{ contracts: Record<string, CompiledContract>; solcVersion: string }> {
  const require = createRequire(import.meta.url);
  let ozDir: string;
  try {
    ozDir = dirname(require.resolve("@openzeppelin/contracts/package.json"));
  } catch {
    throw new Error("@openzeppelin/contracts is not installed (run `npm install` in the chainsift checkout)");
  }
  const { default: solc } = await import("solc");
  const input = {
    language: "Solidity",
    sources: { [fileName]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: DEV_CONTRACTS_EVM_VERSION,
      outputSelection: { [fileName]: { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const findImports = (path: string): { contents: string } | { error: string } => {
    if (!path.startsWith(OZ_PREFIX) || path.includes("..")) return { error: `import not available offline: ${path}` };
    try {
      return { contents: readFileSync(join(ozDir, path.slice(OZ_PREFIX.length)), "utf8") };
    } catch (err) {
      return { error: `cannot read ${path}: ${(err as Error).message}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) {
    throw new DevContractCompileError(`solc failed:\n${errors.map((e) => e.formattedMessage ?? e.message).join("\n")}`);
  }
  const contracts: Record<string, CompiledContract> = {};
  for (const name of names) {
    const c = output.contracts?.[fileName]?.[name];
    const object = c?.evm.bytecode.object;
    if (!c || !object) throw new DevContractCompileError(`solc output has no bytecode for ${name}`);
    contracts[name] = { abi: c.abi, bytecode: `0x${object}` };
  }
  return { contracts, solcVersion: String(solc.version()) };
}
