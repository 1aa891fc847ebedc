import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConnectedAccountStore, connectAccountStore } from "../../../lib/accounts/store.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "./redis.js";

const h: Harness = createHarness();
await h.es.close();
const url = h.config.redisUrl;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

const root = fileURLToPath(new URL("../../../", import.meta.url));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node --import tsx cli/chainsift.ts ...args` (this Node, no npx) in the repo with this run's Redis prefix. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/chainsift.ts", ...args], {
      cwd: root,
      env: { ...process.env, REDIS_URL: url, CHAINSIFT_REDIS_PREFIX: h.config.redisKeyPrefix, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(!up)("chainsift CLI end to end (real Redis)", () => {
  let conn: ConnectedAccountStore;

  beforeAll(async () => {
    conn = await connectAccountStore(h.config);
  });

  afterAll(async () => {
    await conn?.close();
    await deletePrefix(url, h.config.redisKeyPrefix);
    expect(await keysOf(url, h.config.redisKeyPrefix)).toEqual([]);
  });

  it("creates an account, issues, lists and revokes a token", async () => {
    const created = await cli(["accounts", "create", "--name", "CLI test", "--email", "cli@example.com"]);
    expect(created.code, created.stderr).toBe(0);
    const account = JSON.parse(created.stdout) as { id: string; name: string; email: string; disabled: boolean };
    expect(account).toMatchObject({ name: "CLI test", email: "cli@example.com", disabled: false });

    const listed = await cli(["accounts", "list", "--json"]);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((a) => a.id)).toEqual([account.id]);

    const issued = await cli(["tokens", "issue", "--account", account.id, "--name", "laptop", "--expires-in-days", "30"]);
    expect(issued.code, issued.stderr).toBe(0);
    const secret = /cs_[A-Za-z0-9_-]{43}/.exec(issued.stdout)?.[0];
    expect(secret).toBeDefined();
    expect(issued.stdout.split(secret!)).toHaveLength(2); // printed exactly once
    expect(issued.stderr).toMatch(/WARNING: the token is shown only this once/);
    const tokenId = /token id: (\S+)/.exec(issued.stdout)?.[1];
    expect(tokenId).toMatch(/^[0-9a-f-]{36}$/);

    // The issued token works against the store (as the API will use it).
    expect((await conn.store.authenticate(secret!))?.account.id).toBe(account.id);

    const tokens = await cli(["tokens", "list", "--account", account.id, "--json"]);
    expect(tokens.code).toBe(0);
    expect(tokens.stdout).not.toContain(secret!.slice(3));
    const infos = JSON.parse(tokens.stdout) as { id: string; name: string; prefix: string; expiresAt: string; revokedAt: null }[];
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ id: tokenId, name: "laptop", prefix: secret!.slice(3, 11), revokedAt: null });
    const days = (Date.parse(infos[0]!.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    const human = await cli(["tokens", "list", "--account", account.id]);
    expect(human.stdout).toMatch(/active/);
    expect(human.stdout).not.toContain(secret!.slice(3));

    const revoked = await cli(["tokens", "revoke", tokenId!]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toMatch(/revoked at/);
    expect(await conn.store.authenticate(secret!)).toBeNull(); // immediately, in another process

    const after = await cli(["tokens", "list", "--account", account.id]);
    expect(after.stdout).toMatch(/revoked/);
  });

  it("disables an account: its token stops authenticating", async () => {
    const account = JSON.parse((await cli(["accounts", "create", "--name", "to disable", "--json"])).stdout) as { id: string };
    const issued = await cli(["tokens", "issue", "--account", account.id, "--json"]);
    const { token } = JSON.parse(issued.stdout) as { token: string };
    expect(await conn.store.authenticate(token)).not.toBeNull();
    const disabled = await cli(["accounts", "disable", account.id, "--json"]);
    expect(disabled.code).toBe(0);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ id: account.id, disabled: true });
    expect(await conn.store.authenticate(token)).toBeNull();
  });

  it("exits 1 for unknown ids and unreachable Redis, 2 for usage errors", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const results = await Promise.all([
      cli(["tokens", "revoke", missing]),
      cli(["tokens", "list", "--account", missing]),
      cli(["accounts", "disable", missing]),
      cli(["accounts", "list"], { REDIS_URL: "redis://127.0.0.1:1" }),
      cli(["accounts", "create"]),
      cli(["accounts", "create", "--name", "x", "--email", "not-an-email"]),
      cli(["tokens", "issue", "--account", missing, "--expires-in-days", "soon"]),
      cli(["tokens"]),
      cli(["nonsense"]),
      cli(["--help"]),
    ]);
    expect(results.map((r) => r.code)).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 2, 0]);
    expect(results[0]!.stderr).toMatch(/CS_TOKEN_NOT_FOUND/);
    expect(results[1]!.stderr).toMatch(/CS_ACCOUNT_NOT_FOUND/);
    expect(results[3]!.stderr).toMatch(/cannot connect to Redis/);
    expect(results[5]!.stderr).toMatch(/CS_ACCOUNT_INVALID/);
    expect(results[9]!.stdout).toMatch(/tokens issue/);
  });
});
