/**
 * The "value of a token moved per day" search of issue 30, shared by the unit and integration
 * tests of the aggregations and by `npm run bench -- search`: the token's Transfer events, a
 * `date_histogram` per day, under it a `nested` aggregation on `args`, a `filter` on the `value`
 * argument and the `sum` of its `args.value.scaled` (the amount in token units).
 */

/** The event fields it names (es/mappings.ts): the event time and the scaled amount of an argument. */
export const VOLUME_FIELDS = { time: "timestamp", amount: "args.value.scaled" } as const;

/** The aggregations of the volume search: `per_day` → `args` (nested) → `value` (filter) → `sum`. */
export const VOLUME_AGGS = {
  per_day: {
    date_histogram: { field: VOLUME_FIELDS.time, calendar_interval: "day" },
    aggs: {
      args: {
        nested: { path: "args" },
        aggs: { value: { filter: { term: { "args.name": "value" } }, aggs: { sum: { sum: { field: VOLUME_FIELDS.amount } } } } },
      },
    },
  },
} as const;

/** The whole search body (no hits, `size: 0`) for the token contract `token` (an address, any letter case). */
export function volumePerDayBody(token: string): Record<string, unknown> {
  return {
    size: 0,
    query: { bool: { filter: [{ term: { address: token } }, { term: { "event.raw": "Transfer" } }] } },
    aggs: VOLUME_AGGS,
  };
}
