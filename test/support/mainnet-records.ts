/**
 * The real mainnet fixture blocks (`../shared/data/mainnet`, test/support/fixtures.ts) as the
 * records chainsift indexes, for the tests of the tools people use on Elasticsearch (the client
 * suites through test/python/serve.ts, the Grafana request shapes): blocks, transactions, logs and
 * decoded events built with the pipeline's own transforms (`toBlockBundle`, the decoder), and the
 * chain they are served under, in block-range partitions as a deployment has them.
 * @module
 */
import type { ChainId } from "../../lib/config/index.js";
import { type Partitioning, uniformPartitioning } from "../../lib/partitioning.js";
import type { EventRecord } from "../../lib/records.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../pipeline/ingest/transform.js";
import type { RecordsByKind } from "../integration/api/fixtures.js";
import { type FixtureBlock, loadCompleteBlocks } from "./fixtures.js";

/**
 * The chain the real fixture records are served under, beside the hand-written records'
 * `ethereum/ethereum/mainnet` (whose tests assert on those): `ethereum/ethereum/mainnet-fixtures`,
 * so its Elasticsearch-style index names are `ethereum-ethereum-mainnet-fixtures-<kind>`.
 */
export const MAINNET_FIXTURES: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet-fixtures" };

/**
 * Partitions of 5,000,000 blocks for every kind: the fixture blocks (47218 … 18000000) fall in
 * partitions 0 to 3, so each kind's alias has several backing indices, as a large deployment's has.
 */
export const MAINNET_FIXTURES_PARTITIONING: Partitioning = uniformPartitioning(5_000_000);

/**
 * Every record of the fixture blocks whose receipts are complete (`loadCompleteBlocks`), per kind:
 * `block`, `tx`, `log`, and `event` decoded with Ethereum mainnet's chain id (1, so token amounts
 * are `scaled` with the bundled token list's decimals); `call` is empty (traces are left out).
 * @throws when `../shared/data/mainnet` is absent (check `hasMainnetFixtures` first) or malformed.
 */
export function mainnetRecords(blocks: readonly FixtureBlock[] = loadCompleteBlocks()): RecordsByKind {
  const decoder = createDecoder({ chainId: 1 });
  const out: RecordsByKind = { block: [], tx: [], log: [], event: [], call: [] };
  for (const fb of blocks) {
    const bundle = toBlockBundle(fb.block, fb.receipts);
    out.block.push(bundle.block);
    out.tx.push(...bundle.transactions);
    for (const log of bundle.logs) {
      out.log.push(log);
      const event: EventRecord | null = decoder.decode(log);
      if (event) out.event.push(event);
    }
  }
  return out;
}
