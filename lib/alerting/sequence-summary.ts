/**
 * The one-line summary of a sequence alert (docs/alerting.md, "Sequences"): what the text channels
 * (Slack, Discord, Telegram, Teams, e-mail) show in place of the entity's line, through
 * `summaryLine` of ./render.ts. The alert's entity carries `sequenceMatch`
 * (`SequenceMatch` of pipeline/match/sequences/evaluator.ts).
 * @module
 */
import type { Alert } from "./alert.js";
import { chainText } from "./template.js";

interface RecordRef {
  blockNumber: number;
  timestamp: number;
}

/**
 * What a sequence alert paired, in one line (empty for other alerts), e.g.
 * `sequence 0x7: block 11 followed by block 14 (3 blocks, 36 s later) on ethereum/mainnet`.
 */
export function sequenceSummary(alert: Alert): string {
  const m = alert.entity?.sequenceMatch as { key: string; first: RecordRef; followedBy: RecordRef } | undefined;
  if (typeof m !== "object" || m === null || typeof m.first !== "object" || typeof m.followedBy !== "object") return "";
  const blocks = m.followedBy.blockNumber - m.first.blockNumber;
  const seconds = m.followedBy.timestamp - m.first.timestamp;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the correlate value is user data on one line
  const text = String(m.key).replace(/[\u0000-\u001f\u007f]+/g, " ");
  const key = text.length > 100 ? `${text.slice(0, 99)}…` : text;
  return `sequence ${key}: block ${m.first.blockNumber} followed by block ${m.followedBy.blockNumber} (${blocks} block${blocks === 1 ? "" : "s"}, ${seconds} s later) on ${chainText(alert.chain)}`;
}
