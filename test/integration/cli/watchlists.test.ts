/**
 * `chainsift watchlists create|list|add|rm|delete` against the real Redis, run in-process through
 * `runCli` with this run's Redis key prefix (deleted afterwards): a CSV with a header, a JSON array
 * and plain lines are uploaded to an account's list, read back through the same store the API uses
 * (membership, count); a file with a bad member names its line and writes nothing; a file larger
 * than the API's per-request cap goes in several batches; unknown accounts and lists are refused.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "../../../cli/chainsift.js";
import { connectAccountStore } from "../../../lib/accounts/store.js";
import { DEFAULT_WATCHLISTS_CONFIG } from "../../../lib/config/watchlists.js";
import type { ConnectedStore } from "../../../lib/redis.js";
import { connectWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import { createHarness } from "../../support/harness.js";
import { deletePrefix, redisSkipMessage, redisUp } from "../accounts/redis.js";
import { cliRunner } from "./run-cli.js";

const h = createHarness();
await h.es.close();
const up = await redisUp(h.config.redisUrl);
if (!up) console.warn(redisSkipMessage(h.config.redisUrl));

/** The i-th test address (checksum-free, mixed case to see the normalisation). */
const addr = (i: number) => `0xAbC${i.toString(16).padStart(37, "0")}`;

describe.skipIf(!up)("chainsift watchlists (real Redis)", () => {
  let dir: string;
  let accountId: string;
  let store: ConnectedStore<WatchlistStore>;

  const run = cliRunner(h.config);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "chainsift-watchlists-"));
    const accounts = await connectAccountStore(h.config);
    accountId = (await accounts.store.createAccount({ name: "watchlist cli" })).id;
    await accounts.close();
    store = await connectWatchlistStore(h.config);
  });

  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
    await deletePrefix(h.config.redisUrl, h.redisPrefix);
  });

  it("creates a list, adds CSV, JSON and plain-line files, removes members, lists and deletes it", async () => {
    const created = await run("watchlists", "create", "--account", accountId, "--name", "deposits", "--json");
    expect(created.code, created.err).toBe(EXIT_OK);
    const id = (JSON.parse(created.out) as { id: string }).id;

    const csv = join(dir, "a.csv");
    await writeFile(csv, `address,label\n${addr(1)},one\n"${addr(2)}",two\n${addr(1)},again\n`);
    const added = await run("watchlists", "add", id, "--account", accountId, "--file", csv, "--json");
    expect(added.code, added.err).toBe(EXIT_OK);
    expect(JSON.parse(added.out)).toMatchObject({ id, added: 2, count: 2, read: 3, batches: 1 });

    const json = join(dir, "b.json");
    await writeFile(json, JSON.stringify([addr(3), addr(2)]));
    expect(JSON.parse((await run("watchlists", "add", id, "--account", accountId, "--file", json, "--json")).out)).toMatchObject({
      added: 1,
      count: 3,
    });
    // The API's store sees the same members, lowercased.
    expect(await store.store.contains(accountId, id, [addr(1).toLowerCase(), addr(3).toLowerCase(), addr(4).toLowerCase()])).toEqual([
      true,
      true,
      false,
    ]);

    const lines = join(dir, "c.txt");
    await writeFile(lines, `${addr(1)}\n\n"${addr(4)}"\n`);
    const removed = await run("watchlists", "rm", id, "--account", accountId, "--file", lines, "--json");
    expect(JSON.parse(removed.out)).toMatchObject({ removed: 1, count: 2 });

    const listed = await run("watchlists", "list", "--account", accountId);
    expect(listed.out).toMatch(new RegExp(`${id}\\s+deposits\\s+address\\s+2\\s`));

    expect((await run("watchlists", "delete", id, "--account", accountId)).code).toBe(EXIT_OK);
    expect(await store.store.get(accountId, id)).toBeNull();
    expect((await run("watchlists", "delete", id, "--account", accountId)).code).toBe(EXIT_FAILURE);
  });

  it("names the line of a bad member and writes nothing; refuses unknown accounts, lists and kinds", async () => {
    const id = (await store.store.create(accountId, { name: "strict", kind: "address" })).id;
    const file = join(dir, "bad.csv");
    await writeFile(file, `${addr(5)}\n${addr(6)}\nnot-an-address\n`);
    const bad = await run("watchlists", "add", id, "--account", accountId, "--file", file);
    expect(bad.code).toBe(EXIT_USAGE);
    expect(bad.err).toContain("lines[3]");
    expect(bad.err).toContain("CS_WATCHLIST_MEMBER_INVALID");
    expect(await store.store.count(accountId, id)).toBe(0);

    const good = join(dir, "good.csv");
    await writeFile(good, `${addr(5)}\n`);
    expect((await run("watchlists", "add", id, "--account", "no-such-account", "--file", good)).code).toBe(EXIT_FAILURE);
    expect((await run("watchlists", "add", "00000000-0000-4000-8000-000000000000", "--account", accountId, "--file", good)).code).toBe(
      EXIT_FAILURE,
    );
    expect((await run("watchlists", "create", "--account", accountId, "--name", "x", "--kind", "number")).code).toBe(EXIT_USAGE);
    expect((await run("watchlists", "add", id, "--account", accountId)).code).toBe(EXIT_USAGE);
  });

  it("writes a file larger than the API's per-request cap in batches", async () => {
    const id = (await store.store.create(accountId, { name: "big", kind: "address" })).id;
    const n = DEFAULT_WATCHLISTS_CONFIG.maxMembersPerRequest * 2 + 1;
    const file = join(dir, "big.csv");
    await writeFile(file, `${Array.from({ length: n }, (_, i) => addr(i)).join("\n")}\n`);
    const added = await run("watchlists", "add", id, "--account", accountId, "--file", file, "--json");
    expect(added.code, added.err).toBe(EXIT_OK);
    expect(JSON.parse(added.out)).toMatchObject({ added: n, count: n, read: n, batches: 3 });
    expect(await store.store.count(accountId, id)).toBe(n);
  });
});
