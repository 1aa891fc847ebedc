/**
 * Elasticsearch's `standard` analyzer in TypeScript, for the saved-search evaluator's `match` and
 * `term` on `text` fields: the `standard` tokenizer (Unicode Text Segmentation word boundaries,
 * UAX #29, https://unicode.org/reports/tr29/#Word_Boundaries, as Lucene's `StandardTokenizer`
 * implements them; `max_token_length` 255) followed by the `lowercase` filter, no stop words (the
 * ES default, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/analysis-standard-analyzer.html).
 *
 * Exact for ASCII text (the word-boundary rules WB5–WB13b over letters, digits, `_`, the
 * mid-letter `:` `·`, the mid-number `,` `;`, the mid-number-or-letter `.` and the quote `'`).
 * Outside ASCII a Unicode letter counts as a letter and a decimal digit as a digit, which is exact
 * for alphabetic scripts but not for ideographs, Hiragana, Thai or emoji (Lucene gives each
 * ideograph its own token); query texts with non-ASCII characters are therefore refused by the
 * evaluator (`CS_SEARCH_INEXACT`), and chainsift's own text fields (event names, `str`) are ASCII.
 * @module
 */

/** Character classes of the word-boundary rules. */
type WordClass = "A" | "N" | "E" | "ML" | "MNL" | "MN" | "SQ" | "O";

const LETTER = /\p{L}/u;
const DIGIT = /\p{Nd}/u;
const CONNECTOR = /\p{Pc}/u;

/** UAX #29 Word_Break class of one character (simplified outside ASCII, see the module doc). */
function classOf(ch: string): WordClass {
  const c = ch.codePointAt(0) ?? 0;
  if (c < 0x80) {
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) return "A";
    if (c >= 0x30 && c <= 0x39) return "N";
    if (ch === "_") return "E";
    if (ch === ":") return "ML";
    if (ch === ".") return "MNL";
    if (ch === "'") return "SQ";
    if (ch === "," || ch === ";") return "MN";
    return "O";
  }
  if (ch === "\u00b7") return "ML";
  if (ch === "\u2018" || ch === "\u2019") return "MNL";
  if (LETTER.test(ch)) return "A";
  if (DIGIT.test(ch)) return "N";
  if (CONNECTOR.test(ch)) return "E";
  return "O";
}

const WORD = new Set<WordClass>(["A", "N", "E"]);

/** Lucene's default `max_token_length` of the standard tokenizer: longer words are split every 255 characters. */
export const MAX_TOKEN_LENGTH = 255;

/**
 * The tokens of a text as the `standard` analyzer produces them (lower-case, in order, duplicates kept).
 * @param text - any string.
 * @returns the tokens; `[]` for a text without letters or digits.
 */
export function standardTokens(text: string): string[] {
  const chars = Array.from(text);
  const classes = chars.map(classOf);
  const out: string[] = [];
  let i = 0;
  while (i < chars.length) {
    if (!WORD.has(classes[i] as WordClass)) {
      i += 1;
      continue;
    }
    const start = i;
    let hasAlnum = classes[i] !== "E";
    i += 1;
    while (i < chars.length) {
      const c = classes[i] as WordClass;
      if (WORD.has(c)) {
        if (c !== "E") hasAlnum = true;
        i += 1;
        continue;
      }
      const prev = classes[i - 1];
      const next = classes[i + 1];
      // WB6/7: letter (MidLetter | MidNumLet | Single_Quote) letter; WB11/12: digit (MidNum | MidNumLet | Single_Quote) digit.
      const letterJoin = prev === "A" && next === "A" && (c === "ML" || c === "MNL" || c === "SQ");
      const digitJoin = prev === "N" && next === "N" && (c === "MN" || c === "MNL" || c === "SQ");
      if (letterJoin || digitJoin) {
        i += 2;
        continue;
      }
      break;
    }
    if (!hasAlnum) continue;
    const word = chars.slice(start, i);
    for (let k = 0; k < word.length; k += MAX_TOKEN_LENGTH)
      out.push(
        word
          .slice(k, k + MAX_TOKEN_LENGTH)
          .join("")
          .toLowerCase(),
      );
  }
  return out;
}
