/**
 * The console's shell: sign-in (the token, checked with `GET /chains/`, kept in sessionStorage),
 * the navigation and a hash router (`#/chains`, `#/search`, `#/charts`, `#/rules`, `#/deliveries`, `#/admin`,
 * `#/record/<chain>/<hash>`). The hash holds page state only, never the token.
 * @module
 */
import "uplot/dist/uPlot.min.css";
import "./app.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ChainStatus, currentToken, listChains, setToken } from "./api.js";
import { AdminPage } from "./pages/admin.js";
import { ChainsPage } from "./pages/chains.js";
import { DeliveriesPage } from "./pages/deliveries.js";
import { RecordPage } from "./pages/record.js";
import { RulesPage } from "./pages/rules.js";
import { SearchPage } from "./pages/search.js";
import { lazyPage } from "./ui.js";

// uPlot is only in the charts page's chunk: loaded when that page is first opened.
const ChartsPage = lazyPage(() => import("./pages/charts.js").then((m) => m.ChartsPage));

const PAGES = [
  ["chains", "Chains"],
  ["search", "Search"],
  ["charts", "Charts"],
  ["rules", "Rules"],
  ["deliveries", "Deliveries"],
  ["admin", "ABIs and accounts"],
] as const;

function useHash(): string[] {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
}

function SignIn({ onSignedIn }: { onSignedIn: (chains: ChainStatus[]) => void }) {
  const [token, setValue] = useState("");
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setToken(token.trim());
      onSignedIn(await listChains());
    } catch (err) {
      setToken(null);
      setError(err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "NETWORK", message: String(err), path: null }]));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>chainsift console</h1>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          value={token}
          onInput={(e) => setValue(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p class="hint">The token is kept for this browser tab only (sessionStorage) and sent as a bearer header.</p>
        {error && (
          <p class="error" role="alert" id="signin-error">
            <code>{error.code}</code> {error.message}
          </p>
        )}
      </form>
    </main>
  );
}

function App() {
  const [chains, setChains] = useState<ChainStatus[] | null>(null);
  const [checking, setChecking] = useState(currentToken() !== null);
  const route = useHash();
  useEffect(() => {
    if (!currentToken()) return;
    listChains()
      .then(setChains)
      .catch(() => setToken(null))
      .finally(() => setChecking(false));
  }, []);
  if (checking) return <p>Loading…</p>;
  if (!chains) return <SignIn onSignedIn={setChains} />;
  const page = route[0] || "chains";
  const signOut = () => {
    setToken(null);
    setChains(null);
  };
  return (
    <>
      <header>
        <span class="brand">chainsift</span>
        <nav aria-label="Pages">
          {PAGES.map(([id, label]) => (
            <a key={id} href={`#/${id}`} aria-current={page === id ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <button type="button" class="signout" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {page === "chains" && <ChainsPage />}
        {page === "search" && <SearchPage chains={chains} />}
        {page === "charts" && <ChartsPage chains={chains} />}
        {page === "rules" && <RulesPage chains={chains} />}
        {page === "deliveries" && <DeliveriesPage ruleId={route[1]} />}
        {page === "admin" && <AdminPage />}
        {page === "record" && <RecordPage chains={chains} chain={route[1] ?? ""} hash={route[2] ?? ""} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app") as HTMLElement);
