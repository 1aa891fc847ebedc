/**
 * Unit tests of `entitiesOf` (lib/match/entities.ts): the entities the match stage evaluates
 * per consumed record, on real mainnet blocks with their receipts and callTracer frames
 * (../shared/data/mainnet), checked against the per-type adapters.
 */
import { describe, expect, it } from "vitest";
import { callEntity, flattenCallTrace } from "../../../../lib/chain/calltrace.js";
import { MalformedRpcDataError } from "../../../../lib/chain/rpc-values.js";
import {
  contractEntitiesFromTrace,
  contractEntity,
  entitiesOf,
  eventEntity,
  logEntity,
  methodEntity,
  transactionEntity,
} from "../../../../lib/match/entities.js";
import type { TraceRecord } from "../../../../lib/records.js";
import { createDecoder } from "../../../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** The real blocks that have call traces, as ingest's records. */
const tracedBundles = () =>
  loadCompleteBlocks()
    .filter((b) => b.traces)
    .map((b) => toBlockBundle(b.block, b.receipts, b.traces));

describe.skipIf(!fixtures)("entitiesOf", () => {
  it("transactions give Transaction, then Method and Contract where they exist", () => {
    let methods = 0;
    for (const bundle of tracedBundles()) {
      for (const tx of bundle.transactions) {
        const expected = [
          { type: "Transaction", entity: transactionEntity(tx) },
          ...[methodEntity(tx, { chainId: 1 })].filter((m) => m !== null).map((entity) => ({ type: "Method", entity })),
          ...[contractEntity(tx)].filter((c) => c !== null).map((entity) => ({ type: "Contract", entity })),
        ];
        methods += expected.length > 1 ? 1 : 0;
        expect(entitiesOf({ topicKind: "transactions", record: tx }, { chainId: 1 })).toEqual(expected);
      }
    }
    expect(methods).toBeGreaterThan(0);
  });

  it("logs give a Log, events an Event (Token entities come from the token tracker)", () => {
    const decoder = createDecoder({ chainId: 1 });
    const bundle = tracedBundles()[0];
    if (!bundle) throw new Error("no traced block");
    for (const log of bundle.logs) {
      expect(entitiesOf({ topicKind: "logs", record: log }, { chainId: 1 })).toEqual([{ type: "Log", entity: logEntity(log) }]);
      const ev = decoder.decode(log);
      if (ev) expect(entitiesOf({ topicKind: "events", record: ev }, { chainId: 1 })).toEqual([{ type: "Event", entity: eventEntity(ev) }]);
    }
  });

  it("traces give per frame a Trace then its Call, then the contracts created", () => {
    let calls = 0;
    for (const bundle of tracedBundles()) {
      for (const t of bundle.traces) {
        const frames = flattenCallTrace(JSON.parse(t.frameJson), t);
        const expected = [
          ...frames.flatMap((f) => {
            const call = callEntity(f, { chainId: 1 });
            return call
              ? [
                  { type: "Trace", entity: f },
                  { type: "Call", entity: call },
                ]
              : [{ type: "Trace", entity: f }];
          }),
          ...contractEntitiesFromTrace(frames, t).map((entity) => ({ type: "Contract", entity })),
        ];
        calls += expected.filter((e) => e.type === "Call").length;
        expect(entitiesOf({ topicKind: "traces", record: t }, { chainId: 1 })).toEqual(expected);
      }
    }
    expect(calls).toBeGreaterThan(0);
  });

  it("throws SyntaxError for frames that are not JSON, MalformedRpcDataError for malformed frames; other topics give nothing", () => {
    const t = tracedBundles()[0]?.traces[0] as TraceRecord;
    expect(() => entitiesOf({ topicKind: "traces", record: { ...t, frameJson: "{" } }, { chainId: 1 })).toThrow(SyntaxError);
    expect(() => entitiesOf({ topicKind: "traces", record: { ...t, frameJson: '{"type":"CALL","from":"nope"}' } }, { chainId: 1 })).toThrow(
      MalformedRpcDataError,
    );
    expect(entitiesOf({ topicKind: "blocks", record: {} }, { chainId: 1 })).toEqual([]);
  });
});
