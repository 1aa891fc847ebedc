import { describe, expect, it, vi } from "vitest";
import {
  type CliCommand,
  type CliOutput,
  commands,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  runCli,
  tokenStatus,
} from "../../../../cli/chainsift.js";
import { AccountError, type TokenInfo } from "../../../../lib/accounts/model.js";
import type { AccountStore, ConnectedAccountStore } from "../../../../lib/accounts/store.js";
import { loadConfig } from "../../../../lib/config/index.js";
import { testAccount, testTokenInfo } from "../../../support/accounts.js";

const ACCOUNT = testAccount({ name: "Acme" });
const INFO: TokenInfo = testTokenInfo({ name: "ci" });
const SECRET = `cs_abcdefgh${"x".repeat(35)}`;

function fakeStore(overrides: Partial<AccountStore> = {}): AccountStore {
  const notFound = () => Promise.reject(new AccountError("CS_ACCOUNT_NOT_FOUND", 'no account with id "nope"'));
  return {
    createAccount: vi.fn(async (input) => ({ ...ACCOUNT, name: input.name, email: input.email ?? null })),
    getAccount: vi.fn(async () => ACCOUNT),
    listAccounts: vi.fn(async () => [ACCOUNT]),
    disableAccount: vi.fn(async (id) => (id === ACCOUNT.id ? { ...ACCOUNT, disabled: true } : notFound())),
    issueToken: vi.fn(async () => ({ token: SECRET, info: INFO })),
    getToken: vi.fn(async () => INFO),
    listTokens: vi.fn(async () => [INFO]),
    revokeToken: vi.fn(async () => ({ ...INFO, revokedAt: "2025-01-02T00:00:00.000Z" })),
    authenticate: vi.fn(async () => null),
    ...overrides,
  };
}

function harness(store: AccountStore = fakeStore()) {
  const out: string[] = [];
  const err: string[] = [];
  const output: CliOutput = { out: (t) => out.push(t), err: (t) => err.push(t) };
  const close = vi.fn(async () => {});
  const connectAccounts = vi.fn(async (): Promise<ConnectedAccountStore> => ({ store, close }));
  const run = (...argv: string[]) => runCli(argv, { config: loadConfig({}), output, connectAccounts });
  return { out, err, run, close, connectAccounts, store };
}

describe("runCli dispatcher", () => {
  it("prints help with --help (exit 0) and on no command (exit 2, stderr)", async () => {
    const h = harness();
    expect(await h.run("--help")).toBe(EXIT_OK);
    expect(h.out.join("\n")).toMatch(/tokens revoke/);
    expect(await h.run()).toBe(EXIT_USAGE);
    expect(h.err.join("\n")).toMatch(/accounts create/);
    expect(h.connectAccounts).not.toHaveBeenCalled();
  });

  it("answers usage errors with exit 2 without touching Redis", async () => {
    const h = harness();
    expect(await h.run("frobnicate")).toBe(EXIT_USAGE);
    expect(await h.run("accounts")).toBe(EXIT_USAGE);
    expect(await h.run("accounts", "frob")).toBe(EXIT_USAGE);
    expect(await h.run("accounts", "create", "--bogus")).toBe(EXIT_USAGE);
    expect(await h.run("accounts", "disable")).toBe(EXIT_USAGE);
    expect(await h.run("tokens", "revoke", "a", "b")).toBe(EXIT_USAGE);
    expect(h.err.join("\n")).toMatch(/unexpected argument "b"/);
    expect(h.connectAccounts).not.toHaveBeenCalled();
    expect(await h.run("accounts", "create")).toBe(EXIT_USAGE);
    expect(h.err.join("\n")).toMatch(/--name <value> is required/);
    for (const d of ["0", "-1", "abc", "", "36501"])
      expect(await h.run("tokens", "issue", "--account", ACCOUNT.id, "--expires-in-days", d)).toBe(EXIT_USAGE);
    expect(h.store.issueToken).not.toHaveBeenCalled();
  });

  it("prints command and group help with exit 0", async () => {
    const h = harness();
    expect(await h.run("tokens", "issue", "--help")).toBe(EXIT_OK);
    expect(h.out.pop()).toMatch(/--expires-in-days/);
    expect(await h.run("accounts", "--help")).toBe(EXIT_OK);
    expect(h.out.pop()).toMatch(/accounts disable <account-id>/);
  });

  it("maps AccountError codes to exit codes (invalid → 2, not found → 1)", async () => {
    const h = harness(
      fakeStore({ createAccount: vi.fn(async () => Promise.reject(new AccountError("CS_ACCOUNT_INVALID", "bad email", "email"))) }),
    );
    expect(await h.run("accounts", "create", "--name", "x", "--email", "y")).toBe(EXIT_USAGE);
    expect(await h.run("accounts", "disable", "nope")).toBe(EXIT_FAILURE);
    expect(h.err.join("\n")).toMatch(/CS_ACCOUNT_NOT_FOUND/);
    expect(h.close).toHaveBeenCalledTimes(2);
  });

  it("reports an unreachable Redis with exit 1 and a redacted URL", async () => {
    const err: string[] = [];
    const code = await runCli(["accounts", "list"], {
      config: loadConfig({ REDIS_URL: "redis://:hunter2@127.0.0.1:1" }),
      output: { out: () => {}, err: (t) => err.push(t) },
      connectAccounts: async () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:1")),
    });
    expect(code).toBe(EXIT_FAILURE);
    expect(err.join("\n")).toMatch(/cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
    expect(err.join("\n")).not.toContain("hunter2");
  });
});

describe("commands", () => {
  it("accounts create passes name and e-mail and prints the account as JSON", async () => {
    const h = harness();
    expect(await h.run("accounts", "create", "--name", "Acme", "--email", "a@b.de")).toBe(EXIT_OK);
    expect(h.store.createAccount).toHaveBeenCalledWith({ name: "Acme", email: "a@b.de" });
    expect(JSON.parse(h.out.join("\n"))).toMatchObject({ id: ACCOUNT.id, name: "Acme", email: "a@b.de" });
  });

  it("tokens issue prints the secret once on stdout and the warning on stderr", async () => {
    const h = harness();
    const before = Date.now();
    expect(await h.run("tokens", "issue", "--account", ACCOUNT.id, "--name", "ci", "--expires-in-days", "1.5")).toBe(EXIT_OK);
    const [, opts] = vi.mocked(h.store.issueToken).mock.calls[0]!;
    const exp = (opts!.expiresAt as Date).getTime();
    expect(exp - before).toBeGreaterThanOrEqual(1.5 * 86_400_000 - 5);
    expect(exp - Date.now()).toBeLessThanOrEqual(1.5 * 86_400_000 + 5);
    const stdout = h.out.join("\n");
    expect(stdout.split(SECRET)).toHaveLength(2);
    expect(stdout).toContain(INFO.id);
    expect(h.err.join("\n")).toMatch(/shown only this once/);
    expect(h.err.join("\n")).not.toContain(SECRET);
  });

  it("--json gives one parseable document (before or after the command)", async () => {
    const h = harness();
    expect(await h.run("--json", "tokens", "issue", "--account", ACCOUNT.id)).toBe(EXIT_OK);
    expect(JSON.parse(h.out.pop()!)).toEqual({ token: SECRET, info: INFO });
    expect(await h.run("tokens", "list", "--account", ACCOUNT.id, "--json")).toBe(EXIT_OK);
    expect(JSON.parse(h.out.pop()!)).toEqual([INFO]);
    expect(await h.run("accounts", "list", "--json")).toBe(EXIT_OK);
    expect(JSON.parse(h.out.pop()!)).toEqual([ACCOUNT]);
    expect(await h.run("tokens", "revoke", INFO.id, "--json")).toBe(EXIT_OK);
    expect(JSON.parse(h.out.pop()!)).toMatchObject({ id: INFO.id, revokedAt: "2025-01-02T00:00:00.000Z" });
  });

  it("human listings show status and never a secret", async () => {
    const h = harness();
    expect(await h.run("tokens", "list", "--account", ACCOUNT.id)).toBe(EXIT_OK);
    expect(h.out.join("\n")).toMatch(/cs_abcdefgh….*ci.*active/);
    expect(h.out.join("\n")).not.toContain(SECRET);
  });

  it("tokenStatus tells active, revoked and expired apart", () => {
    const now = new Date("2025-06-01T00:00:00Z");
    expect(tokenStatus(INFO, now)).toBe("active");
    expect(tokenStatus({ ...INFO, revokedAt: "2025-01-02T00:00:00Z" }, now)).toBe("revoked");
    expect(tokenStatus({ ...INFO, expiresAt: "2025-06-01T00:00:00Z" }, now)).toBe("expired");
  });

  it("takes new commands through the registry", async () => {
    const ran = vi.fn(async (_from: unknown) => 0);
    const extra: CliCommand = {
      path: ["demo", "echo"],
      summary: "an extra command",
      usage: "--from <n>",
      options: { from: { type: "string" } },
      run: async (_ctx, args) => {
        await ran(args.values.from);
        return EXIT_OK;
      },
    };
    const h = harness();
    const code = await runCli(["demo", "echo", "--from", "7"], {
      config: loadConfig({}),
      output: { out: (t) => h.out.push(t), err: (t) => h.err.push(t) },
      registry: [...commands, extra],
    });
    expect(code).toBe(EXIT_OK);
    expect(ran).toHaveBeenCalledWith("7");
  });
});
