/**
 * Splits a hits envelope (`{"took":…,"hits":{"total":…,"hits":[{hit},{hit},…]},…}`) into the JSON
 * text of each hit as its bytes arrive, without parsing the whole answer: the export reads the
 * `size: -1` answer, which the API streams (docs/api.md "size: -1"), hit by hit.
 * @module
 */

/** A push parser: feed it the answer's text in chunks; each call returns the hits completed by that chunk. */
export class HitSplitter {
  #depth = 0;
  #inString = false;
  #escape = false;
  /** The text of the last string at depth ≤ 2 (a key of the envelope or of `hits`). */
  #string = "";
  #key = "";
  #inHits = false;
  /** The parts of the hit being read (it may span chunks), or null between hits. */
  #current: string[] | null = null;

  /**
   * @param chunk - the next piece of the answer's text.
   * @returns the JSON text of every hit that ends in this chunk, in order.
   */
  feed(chunk: string): string[] {
    const out: string[] = [];
    let start = this.#current ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (c === "\\") this.#escape = true;
        else if (c === '"') this.#inString = false;
        else if (this.#depth <= 2) this.#string += c;
        continue;
      }
      if (c === '"') {
        this.#inString = true;
        this.#string = "";
      } else if (c === ":") {
        this.#key = this.#string;
      } else if (c === "{" || c === "[") {
        this.#depth++;
        if (c === "[" && this.#depth === 3 && this.#key === "hits") this.#inHits = true;
        else if (c === "{" && this.#inHits && this.#depth === 4) {
          start = i;
          this.#current = [];
        }
      } else if (c === "}" || c === "]") {
        if (c === "}" && this.#inHits && this.#depth === 4 && this.#current) {
          this.#current.push(chunk.slice(start, i + 1));
          out.push(this.#current.join(""));
          this.#current = null;
          start = -1;
        } else if (c === "]" && this.#inHits && this.#depth === 3) {
          this.#inHits = false;
        }
        this.#depth--;
      }
    }
    if (this.#current && start >= 0) this.#current.push(chunk.slice(start));
    return out;
  }
}
