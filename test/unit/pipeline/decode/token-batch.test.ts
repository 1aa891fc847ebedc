/**
 * The decode stage's token batch on real mainnet logs (../shared/data/mainnet): which contracts of
 * a batch need on-chain decimals (computed here independently from the raw topics and the bundled
 * list), and the decoding of the batch with a fake batch lookup standing in for the cache
 * (lib/chain/token-cache.ts; the real one is exercised by test/e2e/token-decimals.test.ts).
 */
import { formatUnits, id } from "ethers";
import { describe, expect, it } from "vitest";
import type { TokenMetadata } from "../../../../lib/chain/token-metadata.js";
import { lookupToken } from "../../../../lib/chain/tokens.js";
import type { EventRecord, LogRecord } from "../../../../lib/records.js";
import { createDecoder } from "../../../../pipeline/decode/decoder.js";
import { decodeBatch } from "../../../../pipeline/decode/stage.js";
import { lookupOf, tokenRequests } from "../../../../pipeline/decode/token-batch.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import type { InputRecord } from "../../../../pipeline/kafka/consumer.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** topic0 → topic count of the layouts whose amount is scaled (ERC-20 Transfer/Approval, WETH Deposit/Withdrawal). */
const SCALED = new Map([
  [id("Transfer(address,address,uint256)"), 3],
  [id("Approval(address,address,uint256)"), 3],
  [id("Deposit(address,uint256)"), 2],
  [id("Withdrawal(address,uint256)"), 2],
]);
const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";

const input = (record: LogRecord): InputRecord<"logs"> =>
  ({
    topicKind: "logs",
    topic: "t",
    partition: 0,
    offset: "0",
    key: null,
    record,
    message: { headers: {} },
  }) as unknown as InputRecord<"logs">;

describe.skipIf(!fixtures)("token batch on mainnet fixture logs", () => {
  const block = fixtures ? loadCompleteBlocks().find((b) => b.number === 11_098_450) : undefined;
  const logs = block ? toBlockBundle(block.block, block.receipts).logs : [];

  it("requests exactly the contracts of scaled layouts the bundled list does not know, once each, at their block", () => {
    const expected = new Set(
      logs
        .filter((l) => SCALED.get(l.topics[0] as string) === l.topics.length && !lookupToken(l.address.toLowerCase(), 1))
        .map((l) => l.address.toLowerCase()),
    );
    const requests = tokenRequests(logs, 1);
    expect(requests.length).toBe(expected.size);
    expect(new Set(requests.map((r) => r.address))).toEqual(expected);
    expect(requests.every((r) => r.blockNumber === 11_098_450)).toBe(true);
    expect(requests.length).toBe(50);
    // The decoder's own lookup is honoured: a contract it knows is not requested.
    const first = requests[0]!.address;
    expect(
      tokenRequests(logs, 1, (a, c) => (a === first ? { symbol: "X", decimals: 1 } : lookupToken(a, c))).map((r) => r.address),
    ).not.toContain(first);
    // Malformed records are skipped, not thrown on.
    expect(tokenRequests([null, {}, { topics: "x" }, { ...logs[0], blockNumber: null }], 1)).toEqual([]);
  });

  it("decodes the batch with the resolved metadata: scaled from on-chain decimals, null without; listed tokens unchanged", () => {
    const requests = tokenRequests(logs, 1);
    const resolved = new Map<string, TokenMetadata>();
    const [reverted, ...rest] = requests.map((r) => r.address);
    resolved.set(reverted!, { decimals: null, symbol: null, name: null }); // decimals() reverted
    for (const a of rest) resolved.set(a, { decimals: 8, symbol: a === rest[0] ? null : "FAKE", name: null });
    const decoder = createDecoder({ chainId: 1 });
    const { out, failures } = decodeBatch(decoder, logs.map(input), lookupOf(resolved));
    expect(failures).toEqual([]);
    const events = out.map((o) => o.record as EventRecord);
    const amount = (ev: EventRecord) => ev.args.find((a) => a.name === "value" || a.name === "wad");
    let scaledByChain = 0;
    for (const ev of events) {
      const address = ev.address.toLowerCase();
      const log = logs.find((l) => l.logIndex.num === ev.logIndex.num) as LogRecord;
      if (SCALED.get(log.topics[0] as string) !== log.topics.length) continue;
      const a = amount(ev);
      const value = BigInt(a?.value.hex ?? "0x0");
      const listed = lookupToken(address, 1);
      if (listed) expect(a?.value.scaled, address).toBe(Number(formatUnits(value, listed.decimals)));
      else if (address === reverted) expect(a?.value.scaled).toBeNull();
      else {
        expect(a?.value.scaled, address).toBe(Number(formatUnits(value, 8)));
        expect(ev.str).toContain(address === rest[0] ? "]" : " FAKE]");
        scaledByChain++;
      }
    }
    expect(scaledByChain).toBeGreaterThan(40);
    // USDT keeps its listed 6 decimals whatever the batch lookup says.
    const usdt = events.find((e) => e.address.toLowerCase() === USDT && e.event === "Transfer") as EventRecord;
    expect(amount(usdt)?.value.scaled).toBe(Number(formatUnits(BigInt(amount(usdt)?.value.hex as string), 6)));
    // Without the batch lookup, those amounts stay unscaled (the contract's "popular tokens" rule).
    const plain = decodeBatch(decoder, logs.map(input)).out.map((o) => o.record as EventRecord);
    const unlisted = plain.filter((e) => rest.includes(e.address.toLowerCase()) && amount(e) !== undefined);
    expect(unlisted.length).toBeGreaterThan(40);
    expect(unlisted.filter((e) => amount(e)?.value.scaled !== null)).toEqual([]);
  });
});
