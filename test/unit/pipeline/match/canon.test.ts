import { describe, expect, it } from "vitest";
import { createCanonicalView } from "../../../../pipeline/match/canon.js";

describe("the match stage's canonical view (blocks and reorgs topics consumed concurrently)", () => {
  it("a reorg record orphans its block and names the replacement; the head follows", () => {
    const v = createCanonicalView();
    v.observeBlock(1, "0xa1", 1);
    v.observeBlock(2, "0xa2", 2);
    v.observeReorg(2, "0xa2", "0xb2", 3);
    expect(v.hashAt(2)).toBe("0xb2");
    expect(v.isOrphaned(2, "0xa2")).toBe(true);
    expect(v.isOrphaned(2, "0xb2")).toBe(false);
    expect(v.head()).toEqual({ number: 2, hash: "0xb2" });
  });

  it("the larger sequence number wins whatever the arrival order", () => {
    const v = createCanonicalView();
    v.observeBlock(5, "0xb5", 30); // the new branch's block arrives first
    v.observeReorg(5, "0xa5", "0xb5", 20); // then the announcement
    v.observeBlock(5, "0xa5", 10); // then the orphaned block (lagging partition)
    expect(v.hashAt(5)).toBe("0xb5");
    expect(v.isOrphaned(5, "0xa5")).toBe(true);
  });

  it("a reorg to a shorter chain leaves no block at the height and moves the head down", () => {
    const v = createCanonicalView();
    for (let n = 0; n <= 4; n++) v.observeBlock(n, `0xa${n}`, n + 1);
    v.observeReorg(4, "0xa4", null, 10);
    expect(v.hashAt(4)).toBe("");
    expect(v.isOrphaned(4, "0xa4")).toBe(true);
    expect(v.head()).toEqual({ number: 3, hash: "0xa3" });
    v.observeBlock(4, "0xc4", 11);
    expect(v.head()).toEqual({ number: 4, hash: "0xc4" });
  });

  it("records without sequence numbers apply as the latest; heights below the window are forgotten", () => {
    const v = createCanonicalView(4);
    v.observeBlock(1, "0xa1", undefined);
    v.observeBlock(1, "0xb1", undefined);
    expect(v.hashAt(1)).toBe("0xb1");
    for (let n = 2; n <= 10; n++) v.observeBlock(n, `0x${n}`, undefined);
    expect(v.hashAt(1)).toBeUndefined();
    expect(v.hashAt(7)).toBe("0x7");
    expect(v.isOrphaned(1, "0xdead")).toBe(false);
  });
});
