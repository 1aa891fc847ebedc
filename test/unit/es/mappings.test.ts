import { describe, expect, it } from "vitest";
import { indexName, kindOfIndex, mappedFields } from "../../../es/mappings.js";
import { loadConfig } from "../../../lib/config/index.js";
import { toIndexDocs } from "../../../pipeline/index/indexer.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";

const chain = loadConfig({}).chain;

describe("index names", () => {
  it("follow <technology>-<blockchain>-<network>-<kind> and round-trip the kind", () => {
    expect(indexName(chain, "event", "p-")).toBe("p-ethereum-ethereum-mainnet-event");
    expect(kindOfIndex(indexName(chain, "tx"))).toBe("tx");
    expect(kindOfIndex("something-else")).toBeUndefined();
  });
});

describe("mappedFields", () => {
  it("lists the contract's query fields for each kind", () => {
    const paths = (k: Parameters<typeof mappedFields>[0]) => mappedFields(k).map((f) => f.path);
    expect(paths("block")).toEqual(expect.arrayContaining(["number.num", "hash"]));
    expect(paths("tx")).toEqual(expect.arrayContaining(["blockHash", "blockNumber.num", "from", "to", "from.raw"]));
    expect(paths("log")).toEqual(expect.arrayContaining(["transactionHash", "address", "address.raw"]));
    expect(paths("event")).toEqual(
      expect.arrayContaining(["event", "event.raw", "source", "address.raw", "args", "args.name", "args.value.hex", "args.value.scaled"]),
    );
  });
  it("marks nested paths and unsearchable blobs", () => {
    const ev = mappedFields("event");
    expect(ev.find((f) => f.path === "args.value.hex")?.nestedPath).toBe("args");
    expect(ev.find((f) => f.path === "address")?.nestedPath).toBeUndefined();
    expect(mappedFields("tx").find((f) => f.path === "input")?.searchable).toBe(false);
  });
});

describe("toIndexDocs", () => {
  const input = (topicKind: InputRecord["topicKind"], record: Record<string, unknown>): InputRecord =>
    ({ topicKind, topic: "t", partition: 0, offset: "0", key: null, record, message: {} }) as unknown as InputRecord;

  it("gives each record its deterministic _id and its kind's index", () => {
    const docs = toIndexDocs(
      [
        input("blocks", { hash: "0xb" }),
        input("transactions", { hash: "0xt", blockHash: "0xb" }),
        input("logs", { transactionHash: "0xt", logIndex: { num: 4, raw: "0x4" } }),
        input("events", { transactionHash: "0xt", logIndex: { num: 4, raw: "0x4" } }),
        input("dead-letter", { stage: "x" }),
      ],
      chain,
      "",
      [],
      { chainId: 1 },
    );
    expect(docs.map((d) => [d.index, d.id])).toEqual([
      ["ethereum-ethereum-mainnet-block", "0xb"],
      ["ethereum-ethereum-mainnet-tx", "0xt"],
      ["ethereum-ethereum-mainnet-log", "0xt_l_4"],
      ["ethereum-ethereum-mainnet-event", "0xt_e_4"],
    ]);
  });

  it("turns a trace record into one call document per frame, and refuses an unparsable one", () => {
    const trace = {
      transactionHash: "0xt",
      transactionIndex: { num: 0, raw: "0x0" },
      transactionFrom: "0x1111111111111111111111111111111111111111",
      blockHash: "0xb",
      blockNumber: { num: 7, raw: "0x7" },
      timestamp: "2024-01-01T00:00:00",
      frameJson: JSON.stringify({
        type: "CALL",
        from: "0x1111111111111111111111111111111111111111",
        to: "0x2222222222222222222222222222222222222222",
        input: "0x",
        gas: "0x5208",
        gasUsed: "0x5208",
        value: "0x1",
        calls: [
          {
            type: "STATICCALL",
            from: "0x2222222222222222222222222222222222222222",
            to: "0x3333333333333333333333333333333333333333",
            input: "0x",
          },
        ],
      }),
    };
    const failures: Parameters<typeof toIndexDocs>[3] = [];
    const docs = toIndexDocs([input("traces", trace), input("traces", { ...trace, frameJson: "{not json" })], chain, "", failures, {
      chainId: 1,
    });
    expect(docs.map((d) => [d.index, d.id])).toEqual([
      ["ethereum-ethereum-mainnet-call", "0xt_c_"],
      ["ethereum-ethereum-mainnet-call", "0xt_c_0"],
    ]);
    expect(docs[1]?.doc).toMatchObject({ type: "STATICCALL", depth: 1, traceAddress: [0], name: null, args: [] });
    expect(failures).toHaveLength(1);
    expect(failures[0]?.error.code).toBe("CS_MALFORMED_RECORD");
  });
});
