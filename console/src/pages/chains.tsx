/**
 * Chains: every served chain (`GET /chains/`) with the node's head, the ingested block and the lag,
 * refreshed every {@link REFRESH_MS} ms, and the backends' readiness (`GET /readyz`); each chain's
 * consumer health as `chainsift status` shows it (`GET /chains/health/`: every stage's consumer-group
 * lag and the dead letters of the last hour), refreshed every {@link HEALTH_REFRESH_MS} ms.
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ChainHealth, type ChainStatus, chainKey, chainsHealth, listChains } from "../api.js";
import { ErrorBox, Head } from "../ui.js";

/** How often the page asks again, in ms. */
export const REFRESH_MS = 2000;
/** How often the consumer health (read from Kafka by the API) is asked again, in ms. */
export const HEALTH_REFRESH_MS = 5000;

interface Ready {
  status: string;
  elasticsearch?: string;
  redis?: string;
}

export function ChainsPage() {
  const [chains, setChains] = useState<ChainStatus[] | null>(null);
  const [ready, setReady] = useState<Ready | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [at, setAt] = useState<Date | null>(null);
  const [health, setHealth] = useState<ChainHealth[] | null>(null);
  const [healthError, setHealthError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    const tick = () =>
      chainsHealth()
        .then((h) => {
          setHealth(h);
          setHealthError(null);
        })
        .catch((err) => err instanceof ApiFailure && setHealthError(err));
    void tick();
    const timer = setInterval(tick, HEALTH_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const stages = health?.[0]?.groups.map((g) => g.stage) ?? [];
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        setChains(await listChains());
        setError(null);
        setAt(new Date());
      } catch (err) {
        if (err instanceof ApiFailure) setError(err);
      }
      try {
        const res = await fetch("/readyz");
        const body = (await res.json()) as Ready & { error?: { message: string } };
        setReady(res.ok ? body : { status: body.error?.message ?? `HTTP ${res.status}` });
      } catch {
        setReady({ status: "unreachable" });
      }
    };
    void tick();
    const timer = setInterval(() => !stop && void tick(), REFRESH_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  return (
    <section>
      <h1>Chains</h1>
      <p class="hint">
        Refreshed every {REFRESH_MS / 1000} s{at ? `, last at ${at.toLocaleTimeString()}` : ""}. Backends:{" "}
        <span id="readiness">
          {ready ? `${ready.status}${ready.elasticsearch ? ` (Elasticsearch ${ready.elasticsearch}, Redis ${ready.redis})` : ""}` : "…"}
        </span>
      </p>
      <ErrorBox error={error} />
      <table id="chains">
        <Head cols={["Chain", "Chain id", "Head", "Ingested", "Lag (blocks)", "Lag (s)", "Head read at"]} />
        <tbody>
          {(chains ?? []).map((c) => (
            <tr key={chainKey(c)} data-chain={chainKey(c)}>
              <th scope="row">{chainKey(c)}</th>
              <td>{c.chainId ?? "–"}</td>
              <td class="head">{c.head ?? "–"}</td>
              <td>{c.ingested?.number ?? "–"}</td>
              <td>{c.lagBlocks ?? "–"}</td>
              <td>{c.lagSeconds === null ? "–" : c.lagSeconds.toFixed(1)}</td>
              <td>{c.headAt ? new Date(c.headAt).toLocaleTimeString() : "–"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Consumers</h2>
      <p class="hint">
        What <code>chainsift status</code> shows: each stage's consumer-group lag (records written and not yet consumed; – when the stage
        never ran) and the dead letters of the last hour, read from Kafka every {HEALTH_REFRESH_MS / 1000} s.
      </p>
      <ErrorBox error={healthError} />
      <table id="chains-health">
        <Head cols={["Chain", ...stages.map((s) => `${s} lag`), "Dead letters (1 h)"]} />
        <tbody>
          {(health ?? []).map((c) => (
            <tr key={chainKey(c)} data-chain={chainKey(c)}>
              <th scope="row">{chainKey(c)}</th>
              {c.groups.map((g) => (
                <td key={g.stage} data-stage={g.stage}>
                  {g.lag ?? "–"}
                </td>
              ))}
              <td class="dead-letters">{c.deadLettersLastHour ?? "–"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
