import { describe, expect, it } from "vitest";
import { indexWritesChannel, parseIndexWrites, publishIndexWrites } from "../../../lib/index-writes.js";

describe("index write notices", () => {
  it("are published on <prefix>index:writes, sorted and without duplicates, and read back", async () => {
    const sent: Array<[string, string]> = [];
    const redis = { publish: async (channel: string, message: string) => sent.push([channel, message]) };
    await publishIndexWrites(redis, "cs:", ["b-event", "a-tx", "b-event"]);
    await publishIndexWrites(redis, "cs:", []);
    expect(sent).toEqual([["cs:index:writes", '{"indices":["a-tx","b-event"]}']]);
    expect(indexWritesChannel("x:")).toBe("x:index:writes");
    expect(parseIndexWrites((sent[0] as [string, string])[1])).toEqual({ indices: ["a-tx", "b-event"] });
  });

  it("reads probes and ignores anything else", () => {
    expect(parseIndexWrites('{"probe":"ab"}')).toEqual({ probe: "ab" });
    expect(parseIndexWrites("not json")).toBeUndefined();
    expect(parseIndexWrites('{"indices":[1]}')).toBeUndefined();
    expect(parseIndexWrites("null")).toBeUndefined();
  });
});
