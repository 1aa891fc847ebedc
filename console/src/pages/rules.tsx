/**
 * Rules and saved searches: the caller's rules (`GET /alerting/rules/`) with state and last alert
 * (the newest entry of `GET /alerting/rules/<id>/deliveries/?limit=1`), enable/disable (`PUT` with
 * `{state}`), delete; the form ({@link RuleForm}) with the JSON it sends, a backtest preview over the
 * newest N blocks or a block range (`POST /alerting/rules/test/`, NDJSON read as it arrives) and save (`POST`, or
 * `PUT` when editing). The API's problems are shown at the field their path names. Saved searches
 * (`GET /alerting/searches/`) are listed.
 * @module
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, type ApiProblem, api, apiResponse, type ChainStatus, chainKey, readNdjson } from "../api.js";
import { newRule, type RuleDraft, ruleBody } from "../rule-model.js";
import { ErrorBox, Head, Scroll } from "../ui.js";
import { type Edit, RuleForm } from "./rule-form.js";

interface Listed extends RuleDraft {
  id: string;
  version: number;
  updatedAt: string;
}

interface SavedSearch {
  id: string;
  name: string;
  state: string;
  technology: string;
  blockchain: string;
  network: string;
  kinds?: string[];
}

interface Match {
  blockNumber: number;
  entityId: string;
  alerts: Array<{ alert: { status: string }; actions: Array<{ url?: string; type: string }> }>;
}

interface Backtest {
  matches: Match[];
  end: Record<string, unknown> | null;
  start: Record<string, unknown> | null;
}

const asFailure = (err: unknown) =>
  err instanceof ApiFailure ? err : new ApiFailure(0, [{ code: "CONSOLE", message: String(err), path: null }]);

export function RulesPage({ chains }: { chains: ChainStatus[] }) {
  const [rules, setRules] = useState<Listed[]>([]);
  const [lastAlert, setLastAlert] = useState<Record<string, string>>({});
  const [searches, setSearches] = useState<SavedSearch[]>([]);
  const [draft, setDraft] = useState<RuleDraft>(() => newRule(chains[0] ?? { technology: "", blockchain: "", network: "" }));
  const [problems, setProblems] = useState<ApiProblem[]>([]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [saved, setSaved] = useState("");
  const [last, setLast] = useState(100);
  const [range, setRange] = useState({ from: "", to: "" });
  const [backtest, setBacktest] = useState<Backtest | null>(null);
  const [busy, setBusy] = useState(false);

  const edit: Edit = (change) =>
    setDraft((d) => {
      const copy = structuredClone(d);
      change(copy);
      return copy;
    });

  const reload = async () => {
    try {
      const list = (await api<{ rules: Listed[] }>("GET", "/alerting/rules/")).rules;
      setRules(list);
      const alerts: Record<string, string> = {};
      await Promise.all(
        list.map(async (r) => {
          const page = await api<{ entries: Array<{ at: string; status: string; ok: boolean }> }>(
            "GET",
            `/alerting/rules/${r.id}/deliveries/?limit=1`,
          );
          const e = page.entries[0];
          if (e) alerts[r.id] = `${new Date(e.at).toLocaleString()} (${e.status}, ${e.ok ? "delivered" : "failed"})`;
        }),
      );
      setLastAlert(alerts);
      setSearches((await api<{ searches: SavedSearch[] }>("GET", "/alerting/searches/")).searches);
    } catch (err) {
      setError(asFailure(err));
    }
  };
  useEffect(() => {
    void reload();
  }, []);

  const body = ruleBody(draft);
  const refused = (err: unknown, prefix: string) => {
    const f = asFailure(err);
    setProblems(f.problems.map((p) => ({ ...p, path: p.path?.startsWith(prefix) ? p.path.slice(prefix.length) : p.path })));
    setError(f);
  };

  const save = async () => {
    setBusy(true);
    setError(null);
    setProblems([]);
    setSaved("");
    try {
      const stored = draft.id
        ? await api<Listed>("PUT", `/alerting/rules/${draft.id}/`, body)
        : await api<Listed>("POST", "/alerting/rules/", body);
      setSaved(`Saved rule ${stored.id} (version ${stored.version})`);
      setDraft(stored);
      await reload();
    } catch (err) {
      refused(err, "");
    } finally {
      setBusy(false);
    }
  };

  const preview = async () => {
    setBusy(true);
    setError(null);
    setProblems([]);
    const result: Backtest = { matches: [], end: null, start: null };
    setBacktest({ ...result });
    try {
      const { id: _i, version: _v, ...rule } = body;
      const res = await apiResponse(
        "POST",
        "/alerting/rules/test/",
        range.from !== "" && range.to !== "" ? { rule, from: Number(range.from), to: Number(range.to) } : { rule, last },
      );
      await readNdjson(res, (line) => {
        if (line.type === "match") result.matches.push(line as unknown as Match);
        else if (line.type === "end") result.end = line;
        else if (line.type === "start") result.start = line;
        else if (line.type === "error") result.end = line;
        setBacktest({ ...result, matches: [...result.matches] });
      });
    } catch (err) {
      refused(err, "rule.");
    } finally {
      setBusy(false);
    }
  };

  const setState = async (r: Listed, state: "enabled" | "disabled") => {
    try {
      await api("PUT", `/alerting/rules/${r.id}/`, { state });
      await reload();
    } catch (err) {
      setError(asFailure(err));
    }
  };
  const remove = async (r: Listed) => {
    if (!confirm(`Delete rule "${r.name}"?`)) return;
    try {
      await api("DELETE", `/alerting/rules/${r.id}/`);
      await reload();
    } catch (err) {
      setError(asFailure(err));
    }
  };

  return (
    <section>
      <h1>Rules and saved searches</h1>
      <table id="rules">
        <caption>Rules</caption>
        <Head cols={["Name", "Chain", "Target", "State", "Version", "Last alert", "Actions"]} />
        <tbody>
          {rules.map((r) => (
            <tr key={r.id} data-rule-id={r.id}>
              <th scope="row">{r.name}</th>
              <td>{chainKey(r)}</td>
              <td>{r.config.targetType}</td>
              <td class="state">{r.state}</td>
              <td>{r.version}</td>
              <td>{lastAlert[r.id] ?? "none yet"}</td>
              <td class="row-actions">
                <button type="button" class="small" onClick={() => setDraft(structuredClone(r))}>
                  Edit
                </button>
                <button type="button" class="small toggle" onClick={() => setState(r, r.state === "enabled" ? "disabled" : "enabled")}>
                  {r.state === "enabled" ? "Disable" : "Enable"}
                </button>
                <button type="button" class="small" onClick={() => remove(r)}>
                  Delete
                </button>
                <a href={`#/deliveries/${r.id}`}>Deliveries</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {searches.length > 0 && (
        <table id="searches">
          <caption>Saved searches</caption>
          <Head cols={["Name", "Chain", "Kinds", "State"]} />
          <tbody>
            {searches.map((s) => (
              <tr key={s.id}>
                <th scope="row">{s.name}</th>
                <td>{chainKey(s)}</td>
                <td>{(s.kinds ?? []).join(", ")}</td>
                <td>{s.state}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>{draft.id ? `Edit rule ${draft.name}` : "New rule"}</h2>
      <div class="rule-editor">
        <form
          id="rule-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <RuleForm draft={draft} chains={chains} edit={edit} problems={problems} />
          <div class="controls">
            <label>
              Backtest over the newest{" "}
              <input id="backtest-last" type="number" min={1} value={last} onInput={(e) => setLast(Number(e.currentTarget.value))} /> blocks
            </label>
            <label>
              or from block{" "}
              <input
                id="backtest-from"
                type="number"
                min={0}
                value={range.from}
                onInput={(e) => setRange({ ...range, from: e.currentTarget.value })}
              />
            </label>
            <label>
              to{" "}
              <input
                id="backtest-to"
                type="number"
                min={0}
                value={range.to}
                onInput={(e) => setRange({ ...range, to: e.currentTarget.value })}
              />
            </label>
            <button type="button" id="rule-backtest" disabled={busy} onClick={preview}>
              Preview (backtest)
            </button>
            <button type="submit" id="rule-save" disabled={busy}>
              {draft.id ? "Save changes" : "Create rule"}
            </button>
            <button type="button" onClick={() => setDraft(newRule(chains[0] ?? draft))}>
              New rule
            </button>
          </div>
          <p id="rule-saved" role="status">
            {saved}
          </p>
          <ErrorBox error={error} />
        </form>
        <div class="rule-json">
          <h3>The JSON sent</h3>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region needs a focus stop (axe-core scrollable-region-focusable) */}
          <pre id="rule-json" tabIndex={0}>
            {JSON.stringify(body, null, 2)}
          </pre>
        </div>
      </div>
      {backtest && (
        <div id="backtest">
          <h2>Backtest preview</h2>
          <p id="backtest-summary">
            {backtest.start ? `blocks ${backtest.start.from}–${backtest.start.to}: ` : ""}
            {backtest.matches.length} matches
            {backtest.end
              ? ` (${backtest.end.type === "error" ? `error: ${String(backtest.end.message)}` : `complete: ${String(backtest.end.complete)}`})`
              : " …"}
          </p>
          <Scroll label="Backtest matches">
            <table id="backtest-matches">
              <Head cols={["Block", "Entity", "Alerts", "First action"]} />
              <tbody>
                {backtest.matches.map((m) => (
                  <tr key={`${m.entityId}@${m.blockNumber}`} data-entity={m.entityId}>
                    <td>{m.blockNumber}</td>
                    <td>{m.entityId}</td>
                    <td>{m.alerts.map((a) => a.alert.status).join(", ")}</td>
                    <td class="wrap">
                      {m.alerts[0]?.actions[0] ? `${m.alerts[0].actions[0].type} ${m.alerts[0].actions[0].url ?? ""}` : ""}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        </div>
      )}
    </section>
  );
}
