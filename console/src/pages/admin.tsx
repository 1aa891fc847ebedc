/**
 * ABIs and accounts: the caller's ABI registrations (`GET /abis/`), registering one
 * (`PUT /abis/<address>` with `{abi, name}`), its re-decode status (`GET /abis/<address>`) and
 * deleting it; and, with the admin token (typed here, kept for the tab in sessionStorage like the API
 * token), the accounts (`GET/POST /admin/accounts/`, disable) and their tokens (list, issue — the
 * secret shown once —, revoke).
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ApiProblem, api } from "../api.js";
import { ErrorBox, FieldErrors, Head, Scroll } from "../ui.js";

const ADMIN_KEY = "chainsift.console.admin";

interface Registration {
  address: string;
  name: string | null;
  events: number;
  updatedAt: string;
  redecode?: { state?: string; status?: string } | null;
}

interface Account {
  id: string;
  name: string;
  email: string | null;
  createdAt: string;
  disabled: boolean;
}

interface TokenInfo {
  id: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

const asFailure = (err: unknown) =>
  err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "CONSOLE", message: String(err), path: null }]);

function Abis() {
  const [abis, setAbis] = useState<Registration[]>([]);
  const [form, setForm] = useState({ address: "", name: "", abi: "" });
  const [problems, setProblems] = useState<ApiProblem[]>([]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [status, setStatus] = useState<Registration | null>(null);
  const reload = () =>
    api<{ abis: Registration[] }>("GET", "/abis/")
      .then((a) => setAbis(a.abis))
      .catch((err) => setError(asFailure(err)));
  useEffect(() => {
    void reload();
  }, []);
  const register = async (e: Event) => {
    e.preventDefault();
    setProblems([]);
    setError(null);
    try {
      const abi = JSON.parse(form.abi) as unknown;
      await api("PUT", `/abis/${form.address.trim()}`, { abi, ...(form.name ? { name: form.name } : {}) });
      await reload();
    } catch (err) {
      const f = asFailure(err);
      setProblems(f.problems);
      setError(f);
    }
  };
  return (
    <section aria-labelledby="abis-title">
      <h2 id="abis-title">ABIs</h2>
      <table id="abis">
        <caption>Your ABI registrations</caption>
        <Head cols={["Address", "Name", "Events", "Updated", "Actions"]} />
        <tbody>
          {abis.map((a) => (
            <tr key={a.address} data-address={a.address}>
              <th scope="row">{a.address}</th>
              <td>{a.name ?? ""}</td>
              <td>{a.events}</td>
              <td>{new Date(a.updatedAt).toLocaleString()}</td>
              <td class="row-actions">
                <button
                  type="button"
                  class="small"
                  onClick={() => api<Registration>("GET", `/abis/${a.address}`).then(setStatus, (err) => setError(asFailure(err)))}
                >
                  Re-decode status
                </button>
                <button
                  type="button"
                  class="small"
                  onClick={() => api("DELETE", `/abis/${a.address}`).then(reload, (err) => setError(asFailure(err)))}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {status && (
        <p id="abi-status">
          {status.address}: re-decode {status.redecode ? JSON.stringify(status.redecode) : "not started (no history to re-decode yet)"}
        </p>
      )}
      <form id="abi-form" class="rule-form" onSubmit={register}>
        <label class="field">
          <span>Address (0x… or any)</span>
          <input value={form.address} data-path="address" onInput={(e) => setForm({ ...form, address: e.currentTarget.value })} />
        </label>
        <label class="field">
          <span>Name</span>
          <input value={form.name} data-path="name" onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
          <FieldErrors problems={problems} path="name" />
        </label>
        <label class="field">
          <span>ABI (JSON)</span>
          <textarea rows={5} cols={70} data-path="abi" value={form.abi} onInput={(e) => setForm({ ...form, abi: e.currentTarget.value })} />
          <FieldErrors problems={problems} path="abi" within={true} />
        </label>
        <button type="submit" id="abi-register">
          Register
        </button>
      </form>
      <ErrorBox error={error} />
    </section>
  );
}

function Accounts() {
  const [admin, setAdmin] = useState(sessionStorage.getItem(ADMIN_KEY) ?? "");
  const [typed, setTyped] = useState("");
  const [accounts, setAccounts] = useState<Account[] | null>(null);
  const [tokens, setTokens] = useState<Record<string, TokenInfo[]>>({});
  const [issued, setIssued] = useState("");
  const [name, setName] = useState("");
  const [error, setError] = useState<ApiFailure | null>(null);
  const call = <T,>(method: string, path: string, body?: unknown) => api<T>(method, path, body, admin);
  const reload = async (token = admin) => {
    try {
      setAccounts((await api<{ accounts: Account[] }>("GET", "/admin/accounts/", undefined, token)).accounts);
      setError(null);
    } catch (err) {
      setError(asFailure(err));
    }
  };
  useEffect(() => {
    if (admin) void reload();
  }, [admin]);
  if (!admin || (error?.status === 401 && accounts === null)) {
    return (
      <section aria-labelledby="accounts-title">
        <h2 id="accounts-title">Accounts and tokens</h2>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            sessionStorage.setItem(ADMIN_KEY, typed);
            setAdmin(typed);
          }}
        >
          <label>
            Admin token (kept for this tab){" "}
            <input id="admin-token" type="password" autocomplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          </label>{" "}
          <button type="submit">Open</button>
        </form>
        <ErrorBox error={error} />
      </section>
    );
  }
  const listTokens = async (id: string) =>
    setTokens({ ...tokens, [id]: (await call<{ tokens: TokenInfo[] }>("GET", `/admin/accounts/${id}/tokens/`)).tokens });
  const act = (p: Promise<unknown>) => p.catch((err) => setError(asFailure(err)));
  return (
    <section aria-labelledby="accounts-title">
      <h2 id="accounts-title">Accounts and tokens</h2>
      <form
        class="controls"
        onSubmit={(e) => {
          e.preventDefault();
          void act(call("POST", "/admin/accounts/", { name }).then(() => reload()));
        }}
      >
        <label>
          New account name <input id="account-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <button type="submit" id="account-create">
          Create account
        </button>
        <button
          type="button"
          onClick={() => {
            sessionStorage.removeItem(ADMIN_KEY);
            setAdmin("");
            setAccounts(null);
          }}
        >
          Forget the admin token
        </button>
      </form>
      {issued && (
        <p id="token-issued" role="status">
          New token (shown once): <code>{issued}</code>
        </p>
      )}
      <ErrorBox error={error} />
      <Scroll label="Accounts">
        <table id="accounts">
          <Head cols={["Name", "E-mail", "Created", "State", "Tokens", "Actions"]} />
          <tbody>
            {(accounts ?? []).map((a) => (
              <tr key={a.id} data-account-id={a.id}>
                <th scope="row">{a.name}</th>
                <td>{a.email ?? ""}</td>
                <td>{new Date(a.createdAt).toLocaleString()}</td>
                <td>{a.disabled ? "disabled" : "active"}</td>
                <td>
                  {(tokens[a.id] ?? []).map((t) => (
                    <div key={t.id}>
                      {t.prefix}… {t.name ?? ""} {t.revokedAt ? "(revoked)" : ""}{" "}
                      {!t.revokedAt && (
                        <button
                          type="button"
                          class="small"
                          onClick={() => act(call("DELETE", `/admin/tokens/${t.id}`).then(() => listTokens(a.id)))}
                        >
                          Revoke
                        </button>
                      )}
                    </div>
                  ))}
                </td>
                <td class="row-actions">
                  <button type="button" class="small" onClick={() => act(listTokens(a.id))}>
                    List tokens
                  </button>
                  <button
                    type="button"
                    class="small"
                    disabled={a.disabled}
                    onClick={() =>
                      act(
                        call<{ token: string }>("POST", `/admin/accounts/${a.id}/tokens/`, {}).then(async (t) => {
                          setIssued(t.token);
                          await listTokens(a.id);
                        }),
                      )
                    }
                  >
                    Issue token
                  </button>
                  <button
                    type="button"
                    class="small"
                    disabled={a.disabled}
                    onClick={() => act(call("POST", `/admin/accounts/${a.id}/disable`).then(() => reload()))}
                  >
                    Disable
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
    </section>
  );
}

export function AdminPage() {
  return (
    <section>
      <h1>ABIs and accounts</h1>
      <Abis />
      <Accounts />
    </section>
  );
}
