/**
 * The JSON-RPC replay node of `npm run bench -- ingest` in its own process (so that it shares no
 * event loop with a stage): `node --import tsx bench/support/replay-child.ts --copies N --start S`
 * serves {@link contiguousCopies} of the complete mainnet fixture blocks (test/support/rpc-replay.ts,
 * 127.0.0.1, a free port), prints `{"url","pid","from","to"}` on one stdout line, and runs until
 * SIGTERM or SIGINT.
 * @module
 */
import { loadCompleteBlocks } from "../../test/support/fixtures.js";
import { startRpcReplay } from "../../test/support/rpc-replay.js";
import { contiguousCopies, numberArg } from "./data.js";

const args = process.argv.slice(2);
const start = numberArg(args, "--start", 20_000_000);
const blocks = contiguousCopies(loadCompleteBlocks(), numberArg(args, "--copies", 10), start);
const replay = await startRpcReplay({ blocks });
const stop = () => void replay.close().then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
console.log(JSON.stringify({ url: replay.url, pid: process.pid, from: start, to: start + blocks.length - 1 }));
