/**
 * The block header's `logsBloom`: a 2048-bit Bloom filter of the address and topics of every log in
 * the block (Ethereum Yellow Paper, section 4.4.3, function M3:2048 — for each of the first three
 * byte pairs of keccak256(value), its low 11 bits select one bit, numbered from the low end of the
 * 256-byte big-endian filter; https://ethereum.github.io/yellowpaper/paper.pdf). A clear bit proves
 * the value is absent; all three set means "maybe" (a false positive costs the caller one extra look).
 * @module
 */
import { getBytes, keccak256 } from "ethers";

/** Bytes of a `logsBloom` (2048 bits). */
export const LOGS_BLOOM_BYTES = 256;

/**
 * Whether a block's `logsBloom` may contain `value` (a log's emitting address, or one of its topics).
 * @param bloom - the header's `logsBloom`, `0x` + 512 hex digits.
 * @param value - the address (20 bytes) or topic (32 bytes), `0x` hex, any case.
 * @returns false only when no log of the block has that address/topic; true otherwise (maybe).
 * @throws {RangeError} when `bloom` is not 256 bytes of hex.
 */
export function bloomMayContain(bloom: string, value: string): boolean {
  const filter = getBytes(bloom);
  if (filter.length !== LOGS_BLOOM_BYTES) throw new RangeError(`logsBloom must be ${LOGS_BLOOM_BYTES} bytes, got ${filter.length}`);
  const hash = getBytes(keccak256(getBytes(value.toLowerCase())));
  for (let i = 0; i < 6; i += 2) {
    const bit = (((hash[i] as number) << 8) | (hash[i + 1] as number)) & 2047;
    const byte = filter[LOGS_BLOOM_BYTES - 1 - (bit >> 3)] as number;
    if ((byte & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}
