/**
 * Chains: every served chain (`GET /chains/`) with the node's head, the ingested block and the lag,
 * refreshed every {@link REFRESH_MS} ms, and the backends' readiness (`GET /readyz`).
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ChainStatus, chainKey, listChains } from "../api.js";
import { ErrorBox, Head } from "../ui.js";

/** How often the page asks again, in ms. */
export const REFRESH_MS = 2000;

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
    </section>
  );
}
