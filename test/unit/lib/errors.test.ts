import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../api/errors.js";
import { AccountError } from "../../../lib/accounts/model.js";
import { ConfigError } from "../../../lib/config/parse.js";
import { ChainsiftError, isRetryable, NonRetryableError, RETRYABLE, RetryableError } from "../../../lib/errors.js";
import { BadAnswerError } from "../../../lib/rpc/client.js";
import { RpcAnswerError, RpcTransportError } from "../../../lib/rpc/transport.js";
import { ChainIdMismatchError } from "../../../pipeline/runtime.js";
import { REPO_ROOT as ROOT, SOURCE_FOLDERS, sourceFiles } from "../../support/source-files.js";

describe("ChainsiftError tree", () => {
  it("no production class extends Error (or another built-in error) directly but ChainsiftError itself", () => {
    const direct: string[] = [];
    for (const file of SOURCE_FOLDERS.flatMap((f) => sourceFiles(join(ROOT, f)))) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/class (\w+)(?:<[^>]*>)? extends (Error|TypeError|RangeError|SyntaxError)\b/g)) {
        if (m[1] !== "ChainsiftError") direct.push(`${relative(ROOT, file)}: ${m[1]} extends ${m[2]}`);
      }
    }
    expect(direct).toEqual([]);
  });

  it("the branches are ChainsiftErrors with a code; only NonRetryableError is not retryable", () => {
    const retry = new RetryableError("node down", { cause: new Error("ECONNREFUSED") });
    const bad = new NonRetryableError("CS_MALFORMED_RECORD", "no hash");
    expect(retry).toBeInstanceOf(ChainsiftError);
    expect([retry.code, retry.name, (retry.cause as Error).message]).toEqual([RETRYABLE, "RetryableError", "ECONNREFUSED"]);
    expect(bad).toBeInstanceOf(ChainsiftError);
    expect([bad.code, bad.name]).toEqual(["CS_MALFORMED_RECORD", "NonRetryableError"]);
    expect([isRetryable(retry), isRetryable(bad), isRetryable(new Error("x"))]).toEqual([true, false, true]);
  });

  it("subclasses keep their branch, name and own code", () => {
    const answer = new RpcAnswerError("eth_call", -32601, "method not found");
    expect(answer).toBeInstanceOf(RetryableError);
    expect([answer.code, answer.name]).toEqual([-32601, "RpcAnswerError"]);
    expect(new BadAnswerError("inconsistent", "x")).toBeInstanceOf(RetryableError);
    const mismatch = new ChainIdMismatchError(1, 5, "m");
    expect([mismatch instanceof NonRetryableError, mismatch.code]).toEqual([true, "CS_CHAIN_ID_MISMATCH"]);
    // Neither branch: as retryable as any unknown error, as before the tree existed.
    const neither = [
      new RpcTransportError("timeout", "t"),
      new ConfigError("CHAINSIFT_X", "bad"),
      new AccountError("CS_ACCOUNT_NOT_FOUND", "gone"),
      new ApiError({ code: "CS_BAD_REQUEST", message: "m", path: null }),
    ];
    for (const e of neither) {
      expect(e).toBeInstanceOf(ChainsiftError);
      expect(e).not.toBeInstanceOf(RetryableError);
      expect(isRetryable(e)).toBe(true);
      expect(e.code).toMatch(/^CS_[A-Z_]+$/);
    }
    expect(neither.map((e) => e.name)).toEqual(["RpcTransportError", "ConfigError", "AccountError", "ApiError"]);
  });
});
