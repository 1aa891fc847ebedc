/**
 * User ABIs end to end on anvil (test/support/anvil-env.ts with the index stage): a contract with
 * a custom event (a tuple, an array, an indexed string) compiled offline with solc-js, and an
 * EIP-1967 proxy in front of it. The contract emits an event BEFORE its ABI is registered; the
 * ABI is then registered through the API (`PUT /abis/<address>`), and the test finds, through the
 * event search of the API, both that earlier event (re-decoded from the log index) and a later one
 * emitted through the proxy (decoded with the implementation's ABI), and an Event rule on the
 * ABI's event name and argument fires on the later one (never on the re-decoded history).
 */

import { type Contract, ContractFactory, getAddress, id, keccak256, toUtf8Bytes } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import { compileSolidity } from "../../cli/devchain/contracts.js";
import type { EventRecord } from "../../lib/records.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { argIs } from "../support/rules.js";

const up = await probeStack();

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";

contract Pinger {
    struct Pair { uint8 a; bytes32 b; }
    event Ping(address indexed from, string indexed tag, uint256 amount, Pair pair, uint16[] counts, string note);

    function ping(string calldata tag, uint256 amount, string calldata note) external {
        uint16[] memory counts = new uint16[](2);
        counts[0] = 1;
        counts[1] = uint16(amount % 65536);
        emit Ping(msg.sender, tag, amount, Pair(7, keccak256(bytes(note))), counts, note);
    }
}

contract PingerProxy is ERC1967Proxy {
    constructor(address impl) ERC1967Proxy(impl, "") {}

    function _unsafeAllowUninitialized() internal pure override returns (bool) {
        return true;
    }
}
`;

const TOKEN = "abi-e2e-static-token";

describe.skipIf(!up.ok)("user ABIs end to end on anvil", () => {
  let env: AnvilEnv;
  let app: FastifyInstance;
  let pinger: Contract;
  let pingerAddress: string;
  let proxyAddress: string;
  let pingerAbi: unknown[];

  const search = async (query: object): Promise<EventRecord[]> => {
    const { technology, blockchain, network } = env.config.chain;
    const res = await app.inject({
      method: "POST",
      url: `/${technology}/${blockchain}/${network}/es/event/search/`,
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { query, size: 100 },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ hits: { hits: Array<{ _source: EventRecord }> } }>().hits.hits.map((h) => h._source);
  };

  /** Sends `ping` on `to` (the contract or the proxy), mines it and returns the transaction hash. */
  const ping = async (to: string, tag: string, amount: bigint, note: string): Promise<string> => {
    const tx = await (pinger.attach(to) as Contract).getFunction("ping")(tag, amount, note);
    await env.mine();
    await tx.wait();
    return tx.hash as string;
  };

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false, index: true, match: () => ({ reloadIntervalMs: 500 }) });
    env.config.api = { ...env.config.api, tokens: [TOKEN] };
    app = await buildApi({ config: env.config, es: env.h.es, logger: false });
    const { contracts } = await compileSolidity("Pinger.sol", SOURCE, ["Pinger", "PingerProxy"]);
    const deploy = async (c: { abi: unknown; bytecode: string }, ...args: unknown[]) => {
      const contract = await new ContractFactory(c.abi as never, c.bytecode, env.deployer).deploy(...args);
      await env.mine();
      return (await contract.waitForDeployment()) as unknown as Contract;
    };
    const compiledPinger = contracts.Pinger as { abi: unknown[]; bytecode: string };
    pingerAbi = compiledPinger.abi;
    pinger = await deploy(compiledPinger);
    pingerAddress = getAddress(await pinger.getAddress());
    const proxy = await deploy(contracts.PingerProxy as { abi: unknown[]; bytecode: string }, pingerAddress);
    proxyAddress = getAddress(await proxy.getAddress());
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await env?.stop();
  });

  it("decodes history after a registration through the API, follows the proxy, and fires a rule on the event", async () => {
    // 1. Before any ABI: the log is indexed, no event is produced for it.
    const earlyTx = await ping(pingerAddress, "early", 1000n, "before the ABI");
    await waitFor(async () => {
      const res = await env.h.es.search({
        index: `${env.h.config.elasticsearch.indexPrefix}ethereum-ethereum-anvil-log`,
        query: { term: { transactionHash: earlyTx } },
      });
      return res.hits.hits.length > 0;
    }, 60_000);
    expect(await search({ term: { transactionHash: earlyTx } })).toEqual([]);

    // 2. A rule on the ABI's event name and argument (it knows nothing of the ABI yet).
    const rule = await env.rules.create("static", {
      name: "Ping above 100",
      maxConfirmationCount: 1,
      sendPendingAlerts: true,
      state: "enabled",
      ...env.config.chain,
      config: {
        targetType: "Event",
        targetMap: [{ name: "event", operator: "Equals", value: "Ping" }, argIs("amount", "Greater", "100")],
        alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("abi") }, payload: null }],
      },
    });
    await env.waitActive([rule.id]);

    // 3. Register the ABI through the API.
    const put = await app.inject({
      method: "PUT",
      url: `/abis/${pingerAddress}`,
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { abi: pingerAbi, name: "Pinger" },
    });
    expect(put.statusCode, put.body).toBe(201);

    // 4. The earlier event is re-decoded from the log index and searchable, with the ABI's names and types.
    const [early] = await waitFor(async () => {
      const hits = await search({ term: { transactionHash: earlyTx } });
      return hits.length > 0 ? hits : undefined;
    }, 60_000);
    expect(early).toMatchObject({ event: "Ping", source: "abi", standard: "abi", error: null, address: pingerAddress });
    expect(early?.signature).toBe("Ping(address,string,uint256,(uint8,bytes32),uint16[],string)");
    const args = Object.fromEntries((early?.args ?? []).map((a) => [a.name, a.value]));
    expect(Object.keys(args)).toEqual(["from", "tag", "amount", "pair", "counts", "note"]);
    expect(args.from?.hex).toBe(env.deployer.address.toLowerCase());
    // An indexed string is logged as its keccak-256: rendered as that hash, typed `string`.
    expect(args.tag).toMatchObject({ hex: id("early"), type: "string", num: null });
    expect(args.amount).toMatchObject({ hex: "0x3e8", num: 1000 });
    expect(JSON.parse(args.pair?.hex ?? "null")).toEqual(["0x7", keccak256(toUtf8Bytes("before the ABI"))]);
    expect(JSON.parse(args.counts?.hex ?? "null")).toEqual(["0x1", "0x3e8"]);
    expect(args.note?.hex).toBe(`0x${Buffer.from("before the ABI").toString("hex")}`);

    // 5. A later event through the EIP-1967 proxy decodes live with the implementation's ABI, and the rule fires on it.
    const lateTx = await ping(proxyAddress, "late", 500n, "through the proxy");
    const [late] = await waitFor(async () => {
      const hits = await search({ term: { transactionHash: lateTx } });
      return hits.length > 0 ? hits : undefined;
    }, 60_000);
    expect(late).toMatchObject({ event: "Ping", source: "abi", standard: "abi", error: null, address: proxyAddress });
    const alerts = await env.waitAlerts("abi", 1, 60_000);
    expect(alerts[0]).toMatchObject({ ruleId: rule.id, targetType: "Event", entityId: `${lateTx}_e_0` });
    // The re-decoded history (amount 1000 > 100 too) never alerts.
    expect(env.alertsAt("abi").filter((a) => a.entityId.startsWith(earlyTx))).toEqual([]);
  }, 240_000);
});
