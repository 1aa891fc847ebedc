/**
 * `chainsift abis add|list|rm` against the real Redis, run in-process through `runCli` with this
 * run's Redis key prefix (deleted afterwards): a Foundry-style artifact file is registered for an
 * account, listed, refused when malformed (every problem printed with its path), and removed; an
 * unknown account and a missing namespace option are refused.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "../../../cli/chainsift.js";
import { connectAccountStore } from "../../../lib/accounts/store.js";
import { createHarness } from "../../support/harness.js";
import { deletePrefix, redisSkipMessage, redisUp } from "../accounts/redis.js";
import { cliRunner } from "./run-cli.js";

const h = createHarness();
await h.es.close();
const up = await redisUp(h.config.redisUrl);
if (!up) console.warn(redisSkipMessage(h.config.redisUrl));

const ADDRESS = "0x00000000000001ad428E4906aE43D8F9852d0dD6";
const EVENT = { type: "event", name: "Ping", inputs: [{ name: "n", type: "uint256", indexed: true }] };

describe.skipIf(!up)("chainsift abis (real Redis)", () => {
  let dir: string;
  let accountId: string;

  const run = cliRunner(h.config);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "chainsift-abis-"));
    const accounts = await connectAccountStore(h.config);
    accountId = (await accounts.store.createAccount({ name: "abi cli" })).id;
    await accounts.close();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await deletePrefix(h.config.redisUrl, h.redisPrefix);
  });

  it("adds an artifact's ABI, lists it, and removes it", async () => {
    const file = join(dir, "artifact.json");
    await writeFile(file, JSON.stringify({ abi: [EVENT], bytecode: { object: "0x" } }));
    const added = await run("abis", "add", ADDRESS, "--file", file, "--account", accountId, "--name", "Pinger", "--json");
    expect(added.code, added.err).toBe(EXIT_OK);
    expect(JSON.parse(added.out)).toMatchObject({
      namespace: accountId,
      address: ADDRESS.toLowerCase(),
      name: "Pinger",
      events: 1,
      created: true,
    });
    const listed = await run("abis", "list", "--account", accountId);
    expect(listed.out).toContain(ADDRESS.toLowerCase());
    expect((await run("abis", "list", "--global")).out).toBe("no ABIs");
    expect((await run("abis", "rm", ADDRESS, "--account", accountId)).code).toBe(EXIT_OK);
    expect((await run("abis", "rm", ADDRESS, "--account", accountId)).code).toBe(EXIT_FAILURE);
  });

  it("refuses a malformed ABI with the offending paths, and a missing or unknown namespace", async () => {
    const file = join(dir, "bad.json");
    await writeFile(file, JSON.stringify([EVENT, { type: "event", name: "E", inputs: [{ name: "x", type: "uint7" }] }]));
    const bad = await run("abis", "add", ADDRESS, "--file", file, "--global");
    expect(bad.code).toBe(EXIT_USAGE);
    expect(bad.err).toContain("abi[1].inputs[0].type:");
    const good = join(dir, "good.json");
    await writeFile(good, JSON.stringify([EVENT]));
    expect((await run("abis", "add", ADDRESS, "--file", good)).code).toBe(EXIT_USAGE);
    expect((await run("abis", "add", ADDRESS, "--file", good, "--account", "no-such-account")).code).toBe(EXIT_FAILURE);
  });
});
