/**
 * `npm run bench -- decode [--copies N] [--rounds R]`: the decode stage's pure work per log on the
 * mainnet fixture logs (N copies of every complete fixture block's logs, default 20), in one
 * process, no Kafka:
 * - `bundled list only`: `decodeBatch` as with `CHAINSIFT_DECODE_TOKEN_CALLS=false` (the decoder
 *   alone, the stage's cost before on-chain decimals);
 * - `with on-chain decimals`: `tokenRequests` over the batch, then `decodeBatch` with the batch's
 *   resolved metadata as the fallback lookup (every unlisted contract answered from memory, as the
 *   cache does after its first batch; the JSON-RPC and Redis round trips are not measured here).
 * - `ethers path`: `decodeBatch` with `createDecoder({ chainId: 1, fastPath: false })`: every layout decoded with
 *   ethers' AbiCoder, as before the fast path (pipeline/decode/words.ts); same records;
 * - `signatures off`: `decodeBatch` with `createDecoder({ chainId: 1, signatures: false })`
 *   (`CHAINSIFT_DECODE_SIGNATURES=false`); the two above decode with the signature database on (the default);
 * - `unknown topic0, sigs on` / `… off`: only the logs whose topic0 is no standard layout (the
 *   ones that reach the signature database), with the database on and off: the per-log cost of a
 *   signature lookup (and decode, for the few that fit).
 * The signature database is loaded before the rounds; its load time is printed.
 * Each is run R times (default 5), the variants alternated round by round (same machine load); the
 * median is printed.
 * @module
 */
import type { TokenMetadata } from "../lib/chain/token-metadata.js";
import { createDecoder, supportedEvents } from "../pipeline/decode/decoder.js";
import { signatureDatabase } from "../pipeline/decode/signatures.js";
import { decodeBatch } from "../pipeline/decode/stage.js";
import { lookupOf, tokenRequests } from "../pipeline/decode/token-batch.js";
import { toBlockBundle } from "../pipeline/ingest/transform.js";
import type { InputRecord } from "../pipeline/kafka/consumer.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../test/support/fixtures.js";

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Runs the decode benchmark (module notes). */
export async function benchDecode(args: string[]): Promise<void> {
  if (!hasMainnetFixtures()) {
    console.log(SKIP_NO_FIXTURES);
    return;
  }
  const opt = (name: string, fallback: number) => Number(args[args.indexOf(name) + 1] ?? 0) || fallback;
  const copies = opt("--copies", 20);
  const rounds = opt("--rounds", 5);
  const logs = loadCompleteBlocks().flatMap((b) => toBlockBundle(b.block, b.receipts).logs);
  const toInputs = (from: typeof logs) =>
    Array.from({ length: copies }, () => from)
      .flat()
      .map((record) => ({ record, message: { headers: {} } }) as unknown as InputRecord<"logs">);
  const inputs = toInputs(logs);
  const standard = new Set(supportedEvents().map((e) => e.topic0));
  const unknown = toInputs(logs.filter((l) => typeof l.topics[0] === "string" && !standard.has(l.topics[0].toLowerCase())));
  const decoder = createDecoder({ chainId: 1 });
  const withoutSignatures = createDecoder({ chainId: 1, signatures: false });
  const ethersOnly = createDecoder({ chainId: 1, fastPath: false });
  const db = signatureDatabase();
  const resolved = new Map<string, TokenMetadata>(
    tokenRequests(logs, 1).map((r) => [r.address, { decimals: 18, symbol: "T", name: null }] as const),
  );
  console.log(
    `bench decode: ${inputs.length} logs (${logs.length} fixture logs x ${copies}), ${resolved.size} contracts outside the token list, median of ${rounds}`,
  );
  console.log(
    `signature database: ${db.package} ${db.version}, ${db.artifacts} artifacts, ${db.layouts} layouts, loaded in ${db.loadMs.toFixed(1)} ms; ${unknown.length / copies} fixture logs with a topic0 no standard layout has`,
  );
  const variants: Array<{ label: string; inputs: number; run: () => number; us: number[]; events: number }> = [
    { label: "bundled list only", inputs: inputs.length, run: () => decodeBatch(decoder, inputs).out.length, us: [], events: 0 },
    {
      label: "with on-chain decimals",
      inputs: inputs.length,
      run: () => {
        const requests = tokenRequests(
          inputs.map((i) => i.record),
          1,
        );
        const batch = new Map(requests.map((r) => [r.address, resolved.get(r.address) as TokenMetadata]));
        return decodeBatch(decoder, inputs, lookupOf(batch)).out.length;
      },
      us: [],
      events: 0,
    },
    { label: "ethers path", inputs: inputs.length, run: () => decodeBatch(ethersOnly, inputs).out.length, us: [], events: 0 },
    { label: "signatures off", inputs: inputs.length, run: () => decodeBatch(withoutSignatures, inputs).out.length, us: [], events: 0 },
    { label: "unknown topic0, sigs on", inputs: unknown.length, run: () => decodeBatch(decoder, unknown).out.length, us: [], events: 0 },
    {
      label: "unknown topic0, sigs off",
      inputs: unknown.length,
      run: () => decodeBatch(withoutSignatures, unknown).out.length,
      us: [],
      events: 0,
    },
  ];
  // Alternated round by round, so both see the same machine load.
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const t0 = performance.now();
      v.events = v.run();
      v.us.push(((performance.now() - t0) * 1000) / v.inputs);
    }
  }
  for (const v of variants) console.log(`${v.label.padEnd(26)}: ${median(v.us).toFixed(2)} µs/log (${v.events} events)`);
}
