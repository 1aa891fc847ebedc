/**
 * `partitions seal --below <block>` of the admin CLI: force-merges and write-blocks the backing
 * indices whose blocks all lie below a height (es/partitions.ts `sealPartitions`; docs/operations.md
 * "Shards and partitions", old ranges).
 * @module
 */
import { Client } from "@elastic/elasticsearch";
import { sealPartitions } from "../../es/partitions.js";
import { type CliCommand, EXIT_OK, printJson, UsageError } from "./core.js";

/** `partitions seal --below <block>`: seals the partitions entirely below the block (e.g. the finalized height). */
export const partitionsSealCommand: CliCommand = {
  path: ["partitions", "seal"],
  summary: "force-merge and write-block the index partitions entirely below a block (e.g. the finalized height)",
  usage: "--below <block>",
  details:
    "Every record kind of the configured chain (CHAINSIFT_INDEX_PARTITION_BLOCKS must be the index stage's). A partition\n" +
    "holding the block or a later one is left alone; sealed ones are skipped. Reorgs never reach below finality.",
  options: { below: { type: "string" } },
  run: async (ctx, args) => {
    const below = Number(args.values.below);
    if (args.values.below === undefined || !Number.isSafeInteger(below) || below < 0)
      throw new UsageError("--below: expected a block number (a non-negative integer)");
    const { config } = ctx;
    // Force-merging a large partition takes minutes: a client-side timeout of an hour.
    const es = new Client({ node: config.elasticsearch.url, requestTimeout: 3_600_000 });
    try {
      const sealed = await sealPartitions(es, config.chain, config.elasticsearch.indexPrefix, config.elasticsearch.partitioning, below);
      if (args.json) printJson(ctx.output, { sealed });
      else ctx.output.out(sealed.length === 0 ? "nothing to seal" : `sealed ${sealed.length}: ${sealed.join(", ")}`);
    } finally {
      await es.close();
    }
    return EXIT_OK;
  },
};
