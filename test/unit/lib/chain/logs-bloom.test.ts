import { describe, expect, it } from "vitest";
import { bloomMayContain } from "../../../../lib/chain/logs-bloom.js";
import { prng } from "../../../../lib/prng.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const EMPTY = `0x${"0".repeat(512)}`;

describe("bloomMayContain", () => {
  it("an empty bloom contains nothing", () => {
    expect(bloomMayContain(EMPTY, "0xdac17f958d2ee523a2206206994597c13d831ec7")).toBe(false);
  });
  it("refuses a bloom that is not 256 bytes", () => {
    expect(() => bloomMayContain("0x00", "0xdac17f958d2ee523a2206206994597c13d831ec7")).toThrow(RangeError);
  });
});

const seed = 3411;
describe.skipIf(!hasMainnetFixtures())(`logsBloom of mainnet headers${hasMainnetFixtures() ? "" : ` (${SKIP_NO_FIXTURES})`}`, () => {
  const blocks = hasMainnetFixtures() ? loadCompleteBlocks() : [];
  it("holds every log's address and topics of the block (any case); random addresses mostly not", () => {
    const rand = prng(seed);
    let checked = 0;
    for (const b of blocks) {
      const bloom = b.block.logsBloom as string;
      for (const r of b.receipts ?? [])
        for (const log of r.logs as Array<{ address: string; topics: string[] }>) {
          expect(bloomMayContain(bloom, log.address.toUpperCase().replace("0X", "0x"))).toBe(true);
          for (const t of log.topics) expect(bloomMayContain(bloom, t)).toBe(true);
          checked++;
        }
      if (bloom === EMPTY) continue;
      const random = Array.from(
        { length: 500 },
        () => `0x${Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(rand() * 16)]).join("")}`,
      );
      const maybe = random.filter((a) => bloomMayContain(bloom, a)).length;
      // A filter of a few hundred entries has a false-positive rate of a few percent at most.
      expect(maybe, `block ${b.number}: ${maybe} of 500 random addresses (seed ${seed})`).toBeLessThan(250);
    }
    expect(checked).toBeGreaterThan(1000);
  });
});
