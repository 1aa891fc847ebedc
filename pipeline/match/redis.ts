/**
 * The Redis surface of the match stage: Lua scripts only (EVALSHA, falling back to EVAL when the
 * server does not have the script cached), so every state change is atomic on the server.
 * Assumes a single Redis node (the keys of one script are not hash-tagged for Redis Cluster).
 * @module
 */
import { createHash } from "node:crypto";

/**
 * The Redis commands the match stage uses: a structural subset of a node-redis v5 client
 * (`createClient()` from `redis`), so any such client, or a test double, can be passed.
 */
export interface MatchRedis {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** A Lua script with its SHA-1, ready for {@link runScript}. */
export interface Script {
  source: string;
  sha1: string;
}

/** Prepares a Lua script (computes its SHA-1 once). */
export function script(source: string): Script {
  return { source, sha1: createHash("sha1").update(source).digest("hex") };
}

/**
 * Runs a script with EVALSHA, or EVAL when Redis answers NOSCRIPT (first use, or after a restart
 * or SCRIPT FLUSH of the server).
 * @throws whatever the client throws for other errors (connection, script errors).
 */
export async function runScript(redis: MatchRedis, s: Script, keys: string[], args: string[]): Promise<unknown> {
  try {
    return await redis.evalSha(s.sha1, { keys, arguments: args });
  } catch (err) {
    if (!String((err as Error)?.message ?? err).includes("NOSCRIPT")) throw err;
    return redis.eval(s.source, { keys, arguments: args });
  }
}
