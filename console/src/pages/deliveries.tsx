/**
 * Deliveries: the delivery log of a rule (`GET /alerting/rules/<id>/deliveries/`, newest first):
 * status, attempts, response code, time, dead letters (`final: false`), and each action's live
 * destination health. Refreshed every {@link REFRESH_MS} ms. The API has no replay route: the page
 * names the command that replays the rule's dead letters (docs/alerting-delivery.md "Dead letters and replay").
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import type { DeliveryLogPage } from "../../../lib/alerting/deliveries.js";
import type { ActionDeliveryStatus } from "../../../lib/alerting/destinations.js";
import { type ApiFailure, api } from "../api.js";
import { ErrorBox, Head, Scroll } from "../ui.js";

/** How often the log is read again, in ms. */
export const REFRESH_MS = 3000;

/**
 * The answer of `GET /alerting/rules/<id>/deliveries/`. Its types are the server's own, imported as
 * types only (erased by esbuild: no server code in the bundle; .dependency-cruiser.cjs allows only
 * type-only imports of these two lib/ modules, which import no Node module).
 */
type Page = DeliveryLogPage & { destinations: ActionDeliveryStatus[] };

export function DeliveriesPage({ ruleId }: { ruleId: string | undefined }) {
  const [rules, setRules] = useState<Array<{ id: string; name: string }>>([]);
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    api<{ rules: Array<{ id: string; name: string }> }>("GET", "/alerting/rules/")
      .then((a) => setRules(a.rules))
      .catch((err) => setError(err as ApiFailure));
  }, []);
  useEffect(() => {
    setPage(null);
    if (!ruleId) return;
    const tick = () =>
      api<Page>("GET", `/alerting/rules/${ruleId}/deliveries/?limit=100`)
        .then((p) => {
          setPage(p);
          setError(null);
        })
        .catch((err) => setError(err as ApiFailure));
    void tick();
    const timer = setInterval(tick, REFRESH_MS);
    return () => clearInterval(timer);
  }, [ruleId]);
  return (
    <section>
      <h1>Deliveries</h1>
      <label>
        Rule{" "}
        <select id="deliveries-rule" value={ruleId ?? ""} onChange={(e) => (location.hash = `#/deliveries/${e.currentTarget.value}`)}>
          <option value="">choose…</option>
          {rules.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
      <ErrorBox error={error} />
      {page && (
        <>
          <p id="deliveries-total">{page.total} deliveries kept (newest first; refreshed every few seconds)</p>
          {page.destinations.length > 0 && (
            <table id="destinations">
              <caption>Destinations</caption>
              <Head cols={["Action", "Destination", "Health", "Failures in a row", "Last error", "Last success"]} />
              <tbody>
                {page.destinations.map((d) => (
                  <tr key={d.actionIndex}>
                    <td>{d.actionIndex + 1}</td>
                    <td class="destination">{d.destination}</td>
                    <td>{d.unhealthy ? "unhealthy" : "healthy"}</td>
                    <td>{d.consecutiveFailures}</td>
                    <td>{d.lastError ?? ""}</td>
                    <td>{d.lastSuccessAt ? new Date(d.lastSuccessAt).toLocaleString() : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Scroll label="Delivery log">
            <table id="deliveries">
              <caption>Delivery log</caption>
              <Head cols={["Time", "Alert", "Status", "Action", "Destination", "Result", "Attempts", "Response", "Error"]} />
              <tbody>
                {page.entries.map((e) => (
                  <tr key={`${e.alertId}-${e.actionIndex}-${e.at}`} data-alert-id={e.alertId}>
                    <td>{new Date(e.at).toLocaleString()}</td>
                    <td title={e.alertId}>
                      #{e.sequence} {e.alertId.slice(0, 10)}…
                    </td>
                    <td>{e.status}</td>
                    <td>
                      {e.actionIndex + 1}: {e.type}
                    </td>
                    <td class="destination">{e.destination}</td>
                    <td class="result">{e.ok ? "delivered" : e.final === false ? "dead letter" : (e.state ?? "failed")}</td>
                    <td>{e.attempts}</td>
                    <td>{e.httpStatus ?? ""}</td>
                    <td>{e.code ? `${e.code}: ${e.error ?? ""}` : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
          <p class="hint" id="deliveries-replay">
            {page.entries.some((e) => e.final === false) ? "This rule has dead letters. " : ""}Dead letters are replayed by the operator:{" "}
            <code>npm run chainsift -- alerts replay --rule {ruleId}</code> (the API has no replay route; actions already delivered are not
            sent again; docs/alerting-delivery.md).
          </p>
        </>
      )}
    </section>
  );
}
