/**
 * An exact set of addresses held in the match process: a copy of an address watchlist
 * (lib/match/watchlist-filters.ts) that answers "member or not" without asking Redis, so a batch
 * with listed senders needs no round trip (issue 34's target: `In watchlist` at ≥ 0.8× of a
 * 10-address inline list, `npm run bench -- match --watchlist`).
 *
 * Layout: open addressing with linear probing over one `Uint32Array` of 6 words per slot — a state
 * word (0 empty, 1 full, 2 removed) then the address's 20 bytes as five 32-bit words, hex digits
 * 34–41 first. The slot is chosen from those last 8 digits (an address is the last 20 bytes of a
 * keccak-256 hash, so they are uniform; vanity addresses share leading digits, not these), mixed
 * by a multiplicative hash; a probe compares that word before parsing the rest, so a value that is
 * not a member costs about 8 digits parsed and one or two slots read. One slot is 24 bytes and the
 * table keeps at most half its slots used, so 1,000,000 addresses take 2^21 slots = 48 MiB
 * (a JS `Set` of the 42-character strings took 85 bytes per address, measured on Node 24, plus
 * its growth by doubling).
 *
 * Values: an address as an entity carries it (`0x` + 40 hex digits, any case: EIP-55 only changes
 * letter case); anything else is never a member (normalised members are exactly that shape,
 * lib/watchlists/store.ts `normalizeMember`, so other values get `false` from {@link AddressSet.has}
 * after trimming, as Redis would answer).
 * Linear probing: Knuth, TAOCP vol. 3, 6.4 (expected probes of a miss ≈ ½(1 + 1/(1−α)²), 2.5 at α = ½).
 * @module
 */

/** Words per slot: state + 5 words of the address. */
const W = 6;
const EMPTY = 0;
const FULL = 1;
const REMOVED = 2;
/** Smallest table, in slots. */
const MIN_SLOTS = 1_024;

/** Slots of a table for `members` (a power of two, at least {@link MIN_SLOTS}, at most half used). */
function slotsFor(members: number): number {
  let n = MIN_SLOTS;
  while (n < 2 * members) n *= 2;
  return n;
}

/**
 * Bytes of the table an {@link AddressSet} built for `members` addresses takes (24 per slot).
 * @param members - the list's size.
 */
export function addressSetBytes(members: number): number {
  return slotsFor(members) * W * 4;
}

/** The value of a hex digit's char code, or -1 for any other character. */
function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 32;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/** Eight hex digits of `v` from `at` as an unsigned 32-bit number, or -1 when one is not a hex digit. */
function word(v: string, at: number): number {
  let x = 0;
  for (let i = at; i < at + 8; i++) {
    const n = nibble(v.charCodeAt(i));
    if (n < 0) return -1;
    x = x * 16 + n;
  }
  return x;
}

/** Start of the 8 digits of word `j` (0 = digits 34–41, the slot's key; 4 = digits 2–9). */
const at = (j: number) => 34 - 8 * j;

/** The address of `v` (trimmed when it has to be), or null when it is not `0x` + 40 characters. */
function shaped(value: string): string | null {
  const v = value.length === 42 ? value : value.trim();
  return v.length === 42 && v.charCodeAt(0) === 48 && (v.charCodeAt(1) | 32) === 120 ? v : null;
}

/** See the module comment. */
export class AddressSet {
  #slots: Uint32Array;
  #mask: number;
  #shift: number;
  #size = 0;
  /** Full and removed slots (a removed slot still lengthens probes until the next rehash). */
  #used = 0;

  /**
   * @param expected - members expected (the table starts with room for them at half load).
   */
  constructor(expected = 0) {
    const n = slotsFor(expected);
    this.#slots = new Uint32Array(n * W);
    this.#mask = n - 1;
    this.#shift = 32 - Math.log2(n);
  }

  /** Members held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the table. */
  get bytes(): number {
    return this.#slots.byteLength;
  }

  /**
   * The slot holding `v` (≥ 0), or −(slot to insert at) − 1 when it is absent; NaN when `v` is not
   * an address.
   */
  #find(v: string): number {
    const w0 = word(v, at(0));
    if (w0 < 0) return Number.NaN;
    const s = this.#slots;
    let i = Math.imul(w0, 0x9e3779b1) >>> this.#shift;
    let free = -1;
    for (;;) {
      const base = i * W;
      const state = s[base] as number;
      if (state === EMPTY) return -(free >= 0 ? free : i) - 1;
      if (state === REMOVED) {
        if (free < 0) free = i;
      } else if (s[base + 1] === w0 && this.#rest(v, base)) return i;
      i = (i + 1) & this.#mask;
    }
  }

  /** Whether words 1–4 of slot `base` are those of `v` (a non-hex digit never matches). */
  #rest(v: string, base: number): boolean {
    const s = this.#slots;
    for (let j = 1; j < 5; j++) if (s[base + 1 + j] !== word(v, at(j))) return false;
    return true;
  }

  /**
   * Whether `value` is a member.
   * @param value - an address in any case (other values are never members).
   */
  has(value: string): boolean {
    const v = shaped(value);
    return v !== null && this.#find(v) >= 0;
  }

  /**
   * Adds an address; false when it was there or is not an address.
   * @param value - `0x` + 40 hex digits, any case.
   */
  add(value: string): boolean {
    const v = shaped(value);
    if (v === null) return false;
    const at0 = this.#find(v);
    if (Number.isNaN(at0) || at0 >= 0) return false;
    for (let j = 1; j < 5; j++) if (word(v, at(j)) < 0) return false;
    const i = -at0 - 1;
    const base = i * W;
    if (this.#slots[base] === EMPTY) this.#used++;
    this.#slots[base] = FULL;
    for (let j = 0; j < 5; j++) this.#slots[base + 1 + j] = word(v, at(j));
    this.#size++;
    if (2 * this.#used > this.#mask + 1) this.#rehash();
    return true;
  }

  /**
   * Removes an address; false when it was not there.
   * @param value - `0x` + 40 hex digits, any case.
   */
  delete(value: string): boolean {
    const v = shaped(value);
    if (v === null) return false;
    const i = this.#find(v);
    if (!(i >= 0)) return false;
    this.#slots[i * W] = REMOVED;
    this.#size--;
    return true;
  }

  /** Copies the members into a table sized for them (drops removed slots; doubles when full). */
  #rehash(): void {
    const old = this.#slots;
    const n = slotsFor(this.#size);
    this.#slots = new Uint32Array(n * W);
    this.#mask = n - 1;
    this.#shift = 32 - Math.log2(n);
    this.#used = this.#size;
    const s = this.#slots;
    for (let base = 0; base < old.length; base += W) {
      if (old[base] !== FULL) continue;
      let i = Math.imul(old[base + 1] as number, 0x9e3779b1) >>> this.#shift;
      while (s[i * W] !== EMPTY) i = (i + 1) & this.#mask;
      s.set(old.subarray(base, base + W), i * W);
    }
  }
}
