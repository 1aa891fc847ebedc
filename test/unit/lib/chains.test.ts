import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CHAINS_FILE_INVALID, ChainsFileError, loadChainsFile, parseChainsFile } from "../../../lib/config/chains-file.js";
import { type ChainSettings, ConfigError, configOfChain, loadConfig } from "../../../lib/config/index.js";
import { CHAIN_ID_MISMATCH, ChainIdMismatchError, checkChainId } from "../../../pipeline/runtime.js";

const dir = mkdtempSync(join(tmpdir(), "chainsift-chains-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
/** Writes `text` to a fresh file of the temporary directory and returns its path. */
const file = (text: string, ext = "yaml") => {
  const path = join(dir, `chains-${++n}.${ext}`);
  writeFileSync(path, text);
  return path;
};

const BASE = `  - technology: ethereum
    blockchain: base
    network: mainnet
    chainId: 8453
    rpcUrls: [https://base.example/rpc]
`;
const MAINNET = `  - technology: ethereum
    blockchain: ethereum
    network: mainnet
    chainId: 1
    rpcUrls: [http://127.0.0.1:8545]
`;

/** The ChainsFileError `parseChainsFile(text)` throws. */
function errorOf(text: string): ChainsFileError {
  try {
    parseChainsFile(text, "f.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ChainsFileError);
    return err as ChainsFileError;
  }
  throw new Error("no error");
}

describe("parseChainsFile", () => {
  it("accepts every documented field and keeps them as written", () => {
    const f = parseChainsFile(`chains:
  - technology: ethereum
    blockchain: arbitrum
    network: one
    chainId: 42161
    rpcUrls: [https://a.example, "https://user:secret@b.example/v2/0123456789abcdef"]
    blockTimeMs: 250
    finality: finalized
    traces: "on"
    tokenDecimals: [calls]
    explorerUrl: https://arbiscan.io
    confirmations: 20
    ingestConcurrency: 8
${BASE}`);
    expect(f.chains).toHaveLength(2);
    expect(f.chains[0]).toEqual({
      technology: "ethereum",
      blockchain: "arbitrum",
      network: "one",
      chainId: 42161,
      rpcUrls: ["https://a.example", "https://user:secret@b.example/v2/0123456789abcdef"],
      blockTimeMs: 250,
      finality: "finalized",
      traces: "on",
      tokenDecimals: ["calls"],
      explorerUrl: "https://arbiscan.io",
      confirmations: 20,
      ingestConcurrency: 8,
    });
  });
  it("reads JSON (a YAML subset) the same way", () => {
    const json = JSON.stringify({
      chains: [{ technology: "ethereum", blockchain: "base", network: "mainnet", chainId: 8453, rpcUrls: ["https://base.example/rpc"] }],
    });
    expect(parseChainsFile(json)).toEqual(parseChainsFile(`chains:\n${BASE}`));
  });
  it("refuses an empty list, naming the path and the code", () => {
    const err = errorOf("chains: []");
    expect(err.code).toBe(CHAINS_FILE_INVALID);
    expect(err.problems).toEqual([{ path: "chains", message: "must not have fewer than 1 items, got 0" }]);
    expect(err.message).toBe("f.yaml: CS_CHAINS_FILE_INVALID: chains: must not have fewer than 1 items, got 0");
  });
  it("refuses unknown keys, at the top and in a chain", () => {
    expect(errorOf(`chain: []\nchains:\n${BASE}`).message).toBe("f.yaml: CS_CHAINS_FILE_INVALID: chain: unknown property");
    expect(errorOf(`chains:\n${BASE}    rpcUrl: http://x\n`).problems).toEqual([{ path: "chains[0].rpcUrl", message: "unknown property" }]);
  });
  it("refuses bad types with the path of each, and never echoes an endpoint", () => {
    const err = errorOf(`chains:
${MAINNET}  - technology: ethereum
    blockchain: base
    network: mainnet
    chainId: "8453"
    rpcUrls: ["wss://user:secret@base.example"]
    traces: maybe
    finality: -1
`);
    expect(err.problems).toEqual([
      { path: "chains[1].chainId", message: "must be an integer, got a string" },
      { path: "chains[1].rpcUrls[0]", message: 'must match pattern "^https?://[^\\s]+$"' },
      { path: "chains[1].finality", message: "must be >= 0" },
      { path: "chains[1].traces", message: 'must be one of "auto", "on", "off", got "maybe"' },
    ]);
    expect(err.message).not.toContain("secret");
  });
  it("refuses a chain without rpcUrls or with an empty list of them", () => {
    expect(errorOf("chains:\n  - {technology: ethereum, blockchain: base, network: mainnet, chainId: 8453}").problems).toEqual([
      { path: "chains[0].rpcUrls", message: "is required" },
    ]);
    expect(errorOf("chains:\n  - {technology: ethereum, blockchain: base, network: mainnet, chainId: 8453, rpcUrls: []}").problems).toEqual(
      [{ path: "chains[0].rpcUrls", message: "must not have fewer than 1 items, got 0" }],
    );
  });
  it("refuses duplicate chains and duplicate chain ids", () => {
    expect(errorOf(`chains:\n${BASE}${MAINNET}${BASE}`).problems).toEqual([
      { path: "chains[2]", message: "duplicate chain ethereum/base/mainnet (also chains[0])" },
      { path: "chains[2].chainId", message: "duplicate chain id 8453 (also chains[0])" },
    ]);
    const sameId = `${BASE.replace("network: mainnet", "network: main")}`;
    expect(errorOf(`chains:\n${BASE}${sameId}`).message).toBe(
      "f.yaml: CS_CHAINS_FILE_INVALID: chains[1].chainId: duplicate chain id 8453 (also chains[0])",
    );
  });
  it("refuses text that is not YAML and a key given twice", () => {
    expect(errorOf("chains: [").message).toMatch(/^f\.yaml: CS_CHAINS_FILE_INVALID: not YAML: /);
    expect(errorOf(`chains:\n${BASE}    chainId: 1\n`).message).toMatch(/^f\.yaml: CS_CHAINS_FILE_INVALID: not YAML: .*unique/i);
  });
  it("names an unreadable file", () => {
    expect(() => loadChainsFile(join(dir, "missing.yaml"))).toThrow(/missing\.yaml: CS_CHAINS_FILE_INVALID: cannot read: ENOENT/);
  });
});

describe("loadConfig with CHAINSIFT_CHAINS_FILE", () => {
  it("without a file: the env shorthand, exactly as before (chain id 1 by default, not checked)", () => {
    const c = loadConfig({});
    expect(c.chain).toEqual({ technology: "ethereum", blockchain: "ethereum", network: "mainnet" });
    expect(c).toMatchObject({ chainId: 1, chainIdFrom: "default", chainsFile: undefined });
    expect(c.ingest).toMatchObject({ rpcUrls: ["http://127.0.0.1:8545"], concurrency: 4, traces: true, tracesRequired: false });
    expect(c.decode).toMatchObject({ tokenCalls: true, tokenList: true });
    expect(loadConfig({ CHAINSIFT_CHAIN_ID: "8453" })).toMatchObject({ chainId: 8453, chainIdFrom: "env" });
    expect(() => loadConfig({ CHAINSIFT_CHAIN_ID: "0" })).toThrow(/^CHAINSIFT_CHAIN_ID: expected an integer >= 1, got "0"$/);
  });
  it("a one-chain file gives the configuration the same env shorthand gives", () => {
    const env = {
      CHAINSIFT_TECHNOLOGY: "ethereum",
      CHAINSIFT_BLOCKCHAIN: "base",
      CHAINSIFT_NETWORK: "mainnet",
      CHAINSIFT_CHAIN_ID: "8453",
      CHAINSIFT_RPC_URLS: "https://a.example,https://b.example",
      CHAINSIFT_INGEST_CONCURRENCY: "6",
      CHAINSIFT_INGEST_TRACES: "false",
      CHAINSIFT_DECODE_TOKEN_CALLS: "false",
      CHAINSIFT_INSTANCE_ID: "x",
      // Drawn at random when unset (the test-only crash hook's seed): fixed on both sides.
      CHAINSIFT_TEST_CRASH_SEED: "1",
    };
    const path = file(`chains:
  - technology: ethereum
    blockchain: base
    network: mainnet
    chainId: 8453
    rpcUrls: [https://a.example, https://b.example]
    ingestConcurrency: 6
    traces: "off"
    tokenDecimals: [tokenList]
`);
    const fromFile = loadConfig({ CHAINSIFT_CHAINS_FILE: path, CHAINSIFT_INSTANCE_ID: "x", CHAINSIFT_TEST_CRASH_SEED: "1" });
    const fromEnv = loadConfig(env);
    expect(fromFile.chainIdFrom).toBe("file");
    expect(fromFile.chainsFile?.path).toBe(path);
    const asEnv = <T>(x: T) => ({ ...x, chainIdFrom: "env", chainsFile: undefined });
    expect({ ...asEnv(fromFile), served: fromFile.served.map(asEnv) }).toEqual(fromEnv);
  });
  it("maps traces on, token sources and the explorer URL", () => {
    const path = file(`chains:\n${BASE}    traces: "on"\n    tokenDecimals: []\n    explorerUrl: https://basescan.org/\n`);
    const c = loadConfig({ CHAINSIFT_CHAINS_FILE: path });
    expect(c.ingest).toMatchObject({ traces: true, tracesRequired: true, concurrency: 4 });
    expect(c.decode).toMatchObject({ tokenCalls: false, tokenList: false });
    expect(c.notify.explorerUrls["ethereum/base/mainnet"]).toBe("https://basescan.org");
    const off = loadConfig({ CHAINSIFT_CHAINS_FILE: file(`chains:\n${MAINNET}    explorerUrl: ""\n`) });
    expect(off.notify.explorerUrls["ethereum/ethereum/mainnet"]).toBeUndefined();
  });
  it("refuses a per-chain variable next to the file", () => {
    const path = file(`chains:\n${BASE}`);
    expect(() => loadConfig({ CHAINSIFT_CHAINS_FILE: path, CHAINSIFT_RPC_URL: "http://x" })).toThrow(
      `CHAINSIFT_RPC_URL: set by the chains file (CHAINSIFT_CHAINS_FILE=${path}); unset it or remove the file`,
    );
  });
  it("serves the chains CHAINSIFT_CHAIN names (a comma list), every chain of the file without it; an unlisted one is refused", () => {
    const path = file(`chains:\n${MAINNET}${BASE}`);
    expect(loadConfig({ CHAINSIFT_CHAINS_FILE: path, CHAINSIFT_CHAIN: "ethereum/base/mainnet" })).toMatchObject({
      chain: { technology: "ethereum", blockchain: "base", network: "mainnet" },
      chainId: 8453,
      ingest: { rpcUrls: ["https://base.example/rpc"], rpcUrl: "https://base.example/rpc" },
    });
    const all = loadConfig({ CHAINSIFT_CHAINS_FILE: path });
    expect(all.served.map((s) => [s.chain.blockchain, s.chainId, s.rpcUrls])).toEqual([
      ["ethereum", 1, ["http://127.0.0.1:8545"]],
      ["base", 8453, ["https://base.example/rpc"]],
    ]);
    expect(all.chain.blockchain).toBe("ethereum");
    const base = configOfChain(all, all.served[1] as ChainSettings);
    expect(base).toMatchObject({ chain: { blockchain: "base" }, chainId: 8453, ingest: { rpcUrl: "https://base.example/rpc" } });
    expect(base.served).toHaveLength(1);
    const listed = loadConfig({ CHAINSIFT_CHAINS_FILE: path, CHAINSIFT_CHAIN: " ethereum/base/mainnet , ethereum/ethereum/mainnet" });
    expect(listed.served.map((s) => s.chainId)).toEqual([8453, 1]);
    expect(() => loadConfig({ CHAINSIFT_CHAINS_FILE: path, CHAINSIFT_CHAIN: "ethereum/op/mainnet" })).toThrow(
      `CHAINSIFT_CHAIN: "ethereum/op/mainnet" is not in ${path} (it lists ethereum/ethereum/mainnet, ethereum/base/mainnet)`,
    );
  });
  it("an invalid file is a ConfigError of CHAINSIFT_CHAINS_FILE carrying the code and the problems", () => {
    const path = file(`chains:\n${BASE}    colour: blue\n`);
    let err: unknown;
    try {
      loadConfig({ CHAINSIFT_CHAINS_FILE: path });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe("CHAINSIFT_CHAINS_FILE");
    expect((err as Error).message).toBe(`CHAINSIFT_CHAINS_FILE: ${path}: CS_CHAINS_FILE_INVALID: chains[0].colour: unknown property`);
    expect(((err as Error).cause as ChainsFileError).code).toBe("CS_CHAINS_FILE_INVALID");
  });
});

describe("checkChainId", () => {
  const config = loadConfig({ CHAINSIFT_CHAINS_FILE: file(`chains:\n${MAINNET}`) });
  it("passes the configured chain's node", () => {
    expect(() => checkChainId(config, 1, ["http://127.0.0.1:8545"])).not.toThrow();
  });
  it("refuses another chain's node with both ids and the endpoints redacted", () => {
    let err: unknown;
    try {
      checkChainId(config, 31337, ["https://user:pw@node.example/v3/0123456789abcdef0123"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ChainIdMismatchError);
    expect((err as ChainIdMismatchError).code).toBe(CHAIN_ID_MISMATCH);
    expect((err as Error).message).toBe(
      `CS_CHAIN_ID_MISMATCH: ethereum/ethereum/mainnet is configured as chain id 1 (chains file ${config.chainsFile?.path}) but https://node.example/v3/*** answers eth_chainId 31337; refusing to start`,
    );
  });
});
