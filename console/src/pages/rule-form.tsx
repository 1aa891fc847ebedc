/**
 * The rule form: every input edits one place of a {@link RuleDraft} and shows the API's problems
 * whose path names that place ({@link FieldErrors}).
 * @module
 */
import type { AlertType } from "../../../lib/rules/model.js";
import type { ApiProblem, ChainStatus } from "../api.js";
import { chainKey } from "../api.js";
import {
  type Action,
  ALERT_TYPES,
  type Condition,
  newAction,
  newCondition,
  OPERATORS,
  type PayloadItem,
  parametersFor,
  type RuleDraft,
  TARGET_TYPES,
  takesList,
} from "../rule-model.js";
import { FieldErrors } from "../ui.js";
import { WATCHLIST_OPTIONS_ID, WatchlistOptions } from "../watchlists.js";

/** Applies a change to a copy of the draft. */
export type Edit = (change: (d: RuleDraft) => void) => void;

interface Ctx {
  edit: Edit;
  problems: readonly ApiProblem[];
}

function Text({
  label,
  path,
  value,
  onInput,
  ctx,
  type = "text",
  list,
}: {
  label: string;
  path: string;
  value: string;
  onInput: (v: string) => void;
  ctx: Ctx;
  type?: "text" | "number";
  list?: string;
}) {
  return (
    <label class="field">
      <span>{label}</span>
      <input
        type={type}
        value={value}
        data-path={path}
        list={list}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-invalid={ctx.problems.some((p) => p.path === path)}
      />
      <FieldErrors problems={ctx.problems} path={path} />
    </label>
  );
}

function Conditions({
  list,
  path,
  level,
  ctx,
  get,
}: {
  list: Condition[];
  path: string;
  level: number;
  ctx: Ctx;
  get: (d: RuleDraft) => Condition[];
}) {
  return (
    <div class="conditions" data-level={level}>
      <FieldErrors problems={ctx.problems} path={path} />
      {list.map((c, i) => {
        const p = `${path}[${i}]`;
        const at = (d: RuleDraft) => get(d)[i] as Condition;
        const operators = level === 3 ? OPERATORS.filter((o) => o !== "Inspect") : OPERATORS;
        const value = Array.isArray(c.value) ? c.value.join(", ") : (c.value ?? "");
        return (
          <fieldset class="condition" key={p} data-path={p}>
            <legend>
              Condition {i + 1} (level {level})
            </legend>
            <FieldErrors problems={ctx.problems} path={p} />
            <Text
              label="Attribute"
              path={`${p}.name`}
              value={c.name}
              ctx={ctx}
              onInput={(v) =>
                ctx.edit((d) => {
                  at(d).name = v;
                })
              }
            />
            <label class="field">
              <span>Operator</span>
              <select
                data-path={`${p}.operator`}
                value={c.operator}
                onChange={(e) => {
                  const op = e.currentTarget.value;
                  ctx.edit((d) => {
                    const t = at(d);
                    t.operator = op;
                    if (op === "Inspect") {
                      delete t.value;
                      delete t.useScaledValue;
                      t.operatorParameters = t.operatorParameters?.length ? t.operatorParameters : [newCondition()];
                    } else {
                      delete t.operatorParameters;
                      if (t.value === undefined) t.value = "";
                    }
                  });
                }}
              >
                {operators.map((o) => (
                  <option key={o}>{o}</option>
                ))}
              </select>
              <FieldErrors problems={ctx.problems} path={`${p}.operator`} />
            </label>
            {c.operator !== "Inspect" && (
              <Text
                label={takesList(c.operator) ? "Values (comma-separated)" : c.operator === "In watchlist" ? "Watchlist" : "Value"}
                path={`${p}.value`}
                value={value}
                ctx={ctx}
                {...(c.operator === "In watchlist" ? { list: WATCHLIST_OPTIONS_ID } : {})}
                onInput={(v) =>
                  ctx.edit((d) => {
                    at(d).value = takesList(c.operator) ? v.split(",").map((s) => s.trim()) : v;
                  })
                }
              />
            )}
            {level === 2 && c.operator !== "Inspect" && (
              <label class="field check">
                <input
                  type="checkbox"
                  data-path={`${p}.useScaledValue`}
                  checked={c.useScaledValue === true}
                  onChange={(e) =>
                    ctx.edit((d) => {
                      at(d).useScaledValue = e.currentTarget.checked;
                    })
                  }
                />
                <span>useScaledValue (compare the token-scaled amount)</span>
                <FieldErrors problems={ctx.problems} path={`${p}.useScaledValue`} />
              </label>
            )}
            {c.operator === "Inspect" && (
              <Conditions
                list={c.operatorParameters ?? []}
                path={`${p}.operatorParameters`}
                level={level + 1}
                ctx={ctx}
                get={(d) => at(d).operatorParameters ?? []}
              />
            )}
            <button type="button" class="small" onClick={() => ctx.edit((d) => void get(d).splice(i, 1))}>
              Remove condition {i + 1}
            </button>
          </fieldset>
        );
      })}
      <button
        type="button"
        class="small add-condition"
        data-level={level}
        onClick={() => ctx.edit((d) => void get(d).push(newCondition()))}
      >
        Add a level-{level} condition
      </button>
    </div>
  );
}

function Payload({
  items,
  path,
  ctx,
  get,
  sub,
}: {
  items: PayloadItem[];
  path: string;
  ctx: Ctx;
  get: (d: RuleDraft) => PayloadItem[];
  sub: boolean;
}) {
  return (
    <div class="payload">
      <FieldErrors problems={ctx.problems} path={path} />
      {items.map((item, i) => {
        const p = `${path}[${i}]`;
        const at = (d: RuleDraft) => get(d)[i] as PayloadItem;
        return (
          <div class="payload-item" key={p}>
            {!sub && (
              <label class="field">
                <span>Field type</span>
                <select
                  data-path={`${p}.fieldType`}
                  value={item.fieldType}
                  onChange={(e) =>
                    ctx.edit((d) => {
                      const t = at(d);
                      t.fieldType = e.currentTarget.value as PayloadItem["fieldType"];
                      if (t.fieldType === "Sub Field")
                        t.subPayloads = t.subPayloads?.length ? t.subPayloads : [{ fieldType: "Field", fieldName: "" }];
                      else delete t.subPayloads;
                    })
                  }
                >
                  <option>Field</option>
                  <option>Sub Field</option>
                </select>
              </label>
            )}
            <Text
              label={sub ? "Sub-field name" : "Field name"}
              path={`${p}.fieldName`}
              value={item.fieldName}
              ctx={ctx}
              onInput={(v) =>
                ctx.edit((d) => {
                  at(d).fieldName = v;
                })
              }
            />
            {item.fieldType === "Sub Field" && (
              <Payload items={item.subPayloads ?? []} path={`${p}.subPayloads`} ctx={ctx} get={(d) => at(d).subPayloads ?? []} sub={true} />
            )}
            <button type="button" class="small" onClick={() => ctx.edit((d) => void get(d).splice(i, 1))}>
              Remove {sub ? "sub-field" : "payload item"} {i + 1}
            </button>
          </div>
        );
      })}
      <button
        type="button"
        class="small add-payload"
        onClick={() => ctx.edit((d) => void get(d).push({ fieldType: "Field", fieldName: "" }))}
      >
        Add a {sub ? "sub-field" : "payload item"}
      </button>
    </div>
  );
}

const PARAMS: Record<AlertType, Array<[string, string]>> = {
  "Webhook (POST)": [["url", "URL ({field} tokens allowed in the path and query)"]],
  "Webhook (GET)": [["url", "URL ({field} tokens allowed in the path and query)"]],
  Slack: [
    ["url", "Webhook URL"],
    ["text", "Text"],
    ["channel", "Channel"],
    ["username", "Username"],
    ["template", "Message template (optional)"],
  ],
  Email: [
    ["recipients", "Recipients (comma-separated)"],
    ["subject", "Subject (optional)"],
    ["template", "Message template (optional)"],
  ],
  Discord: [
    ["url", "Discord webhook URL"],
    ["username", "Username (optional)"],
    ["template", "Message template (optional)"],
  ],
  Telegram: [
    ["chatId", "Chat id or @channel"],
    ["messageThreadId", "Topic id (optional)"],
    ["template", "Message template (optional)"],
  ],
  PagerDuty: [
    ["routingKey", "Integration key (Events API v2)"],
    ["severity", "Severity: critical, error, warning or info (optional, default error)"],
    ["template", "Summary template (optional)"],
  ],
  Opsgenie: [
    ["apiKey", "API integration key"],
    ["priority", "Priority P1–P5 (optional, default P3)"],
    ["template", "Message template (optional)"],
  ],
  Teams: [
    ["url", "Teams Workflows webhook URL"],
    ["template", "Heading template (optional)"],
  ],
  // SASL and TLS settings are kept as the API set them (docs/alerting.md "Kafka").
  Kafka: [
    ["brokers", "Bootstrap servers, host:port (comma-separated)"],
    ["topic", "Topic"],
    ["key", "Record key: ruleId or entityId (optional)"],
  ],
};

function storm(a: Action): string {
  if (a.digest) return "digest";
  if (a.throttle === false) return "off";
  if (a.throttle) return "throttle";
  return "default";
}

function Actions({ actions, ctx }: { actions: Action[]; ctx: Ctx }) {
  return (
    <div class="actions">
      <FieldErrors problems={ctx.problems} path="config.alerts" />
      {actions.map((a, i) => {
        const p = `config.alerts[${i}]`;
        const at = (d: RuleDraft) => d.config.alerts[i] as Action;
        const mode = storm(a);
        return (
          <fieldset class="action" key={p}>
            <legend>Action {i + 1}</legend>
            <FieldErrors problems={ctx.problems} path={p} />
            <label class="field">
              <span>Channel</span>
              <select
                data-path={`${p}.type`}
                value={a.type}
                onChange={(e) =>
                  ctx.edit((d) => {
                    at(d).type = e.currentTarget.value;
                    at(d).parameters = parametersFor(e.currentTarget.value);
                  })
                }
              >
                {ALERT_TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </label>
            <FieldErrors problems={ctx.problems} path={`${p}.parameters`} />
            {(PARAMS[a.type as AlertType] ?? []).map(([name, label]) => {
              const raw = a.parameters[name];
              const shown = Array.isArray(raw) ? raw.join(", ") : raw === undefined || raw === null ? "" : String(raw);
              return (
                <Text
                  key={name}
                  label={label}
                  path={`${p}.parameters.${name}`}
                  value={shown}
                  ctx={ctx}
                  onInput={(v) =>
                    ctx.edit((d) => {
                      const params = at(d).parameters;
                      if (name === "recipients" || name === "brokers")
                        params[name] = v
                          .split(",")
                          .map((s) => s.trim())
                          .filter((s) => s !== "");
                      else if (name === "messageThreadId") params[name] = v === "" ? "" : Number(v);
                      else if ((name === "severity" || name === "priority" || name === "key") && v === "") delete params[name];
                      else params[name] = v;
                    })
                  }
                />
              );
            })}
            <label class="field">
              <span>Storm control</span>
              <select
                data-path={`${p}.throttle`}
                value={mode}
                onChange={(e) =>
                  ctx.edit((d) => {
                    const t = at(d);
                    delete t.throttle;
                    delete t.digest;
                    const m = e.currentTarget.value;
                    if (m === "off") t.throttle = false;
                    if (m === "throttle") t.throttle = { max: 10, windowSec: 60 };
                    if (m === "digest") t.digest = { windowSec: 60, maxEntities: 10 };
                  })
                }
              >
                <option value="default">default</option>
                <option value="off">off (every alert)</option>
                <option value="throttle">throttle</option>
                <option value="digest">digest</option>
              </select>
            </label>
            {a.throttle && (
              <>
                <Text
                  label="At most (messages)"
                  type="number"
                  path={`${p}.throttle.max`}
                  value={String(a.throttle.max)}
                  ctx={ctx}
                  onInput={(v) =>
                    ctx.edit((d) => {
                      (at(d).throttle as { max: number }).max = Number(v);
                    })
                  }
                />
                <Text
                  label="Per window (s)"
                  type="number"
                  path={`${p}.throttle.windowSec`}
                  value={String(a.throttle.windowSec)}
                  ctx={ctx}
                  onInput={(v) =>
                    ctx.edit((d) => {
                      (at(d).throttle as { windowSec: number }).windowSec = Number(v);
                    })
                  }
                />
              </>
            )}
            {a.digest && (
              <>
                <Text
                  label="Digest window (s)"
                  type="number"
                  path={`${p}.digest.windowSec`}
                  value={String(a.digest.windowSec)}
                  ctx={ctx}
                  onInput={(v) =>
                    ctx.edit((d) => {
                      (at(d).digest as { windowSec: number }).windowSec = Number(v);
                    })
                  }
                />
                <Text
                  label="Entities named"
                  type="number"
                  path={`${p}.digest.maxEntities`}
                  value={String(a.digest.maxEntities ?? 10)}
                  ctx={ctx}
                  onInput={(v) =>
                    ctx.edit((d) => {
                      (at(d).digest as { maxEntities: number }).maxEntities = Number(v);
                    })
                  }
                />
              </>
            )}
            <h4>Payload</h4>
            <Payload
              items={a.payload ?? []}
              path={`${p}.payload`}
              ctx={ctx}
              get={(d) => {
                const t = at(d);
                t.payload ??= [];
                return t.payload;
              }}
              sub={false}
            />
            <button type="button" class="small" onClick={() => ctx.edit((d) => void d.config.alerts.splice(i, 1))}>
              Remove action {i + 1}
            </button>
          </fieldset>
        );
      })}
      <button type="button" class="small" onClick={() => ctx.edit((d) => void d.config.alerts.push(newAction()))}>
        Add an action
      </button>
    </div>
  );
}

/** The whole form (without its buttons). */
export function RuleForm({
  draft,
  chains,
  edit,
  problems,
}: {
  draft: RuleDraft;
  chains: ChainStatus[];
  edit: Edit;
  problems: readonly ApiProblem[];
}) {
  const ctx: Ctx = { edit, problems };
  const key = chainKey(draft);
  return (
    <div class="rule-form">
      <Text
        label="Name"
        path="name"
        value={draft.name}
        ctx={ctx}
        onInput={(v) =>
          edit((d) => {
            d.name = v;
          })
        }
      />
      <Text
        label="Description"
        path="description"
        value={draft.description ?? ""}
        ctx={ctx}
        onInput={(v) =>
          edit((d) => {
            d.description = v;
          })
        }
      />
      <label class="field">
        <span>Chain</span>
        <select
          data-path="network"
          value={key}
          disabled={draft.id !== undefined}
          onChange={(e) => {
            const c = chains.find((x) => chainKey(x) === e.currentTarget.value);
            if (c) edit((d) => Object.assign(d, { technology: c.technology, blockchain: c.blockchain, network: c.network }));
          }}
        >
          {chains.map((c) => (
            <option key={chainKey(c)}>{chainKey(c)}</option>
          ))}
        </select>
        <FieldErrors problems={problems} path="network" />
      </label>
      <Text
        label="Confirmations (maxConfirmationCount)"
        type="number"
        path="maxConfirmationCount"
        value={String(draft.maxConfirmationCount)}
        ctx={ctx}
        onInput={(v) =>
          edit((d) => {
            d.maxConfirmationCount = v === "" ? 0 : Number(v);
          })
        }
      />
      <label class="field check">
        <input
          type="checkbox"
          data-path="confirmOn"
          checked={draft.confirmOn === "finalized"}
          onChange={(e) =>
            edit((d) => {
              if (e.currentTarget.checked) d.confirmOn = "finalized";
              else delete d.confirmOn;
            })
          }
        />
        <span>Confirm on finality</span>
        <FieldErrors problems={problems} path="confirmOn" />
      </label>
      <label class="field check">
        <input
          type="checkbox"
          data-path="sendPendingAlerts"
          checked={draft.sendPendingAlerts}
          onChange={(e) =>
            edit((d) => {
              d.sendPendingAlerts = e.currentTarget.checked;
            })
          }
        />
        <span>Send pending alerts</span>
      </label>
      <label class="field">
        <span>State</span>
        <select
          data-path="state"
          value={draft.state}
          onChange={(e) =>
            edit((d) => {
              d.state = e.currentTarget.value as RuleDraft["state"];
            })
          }
        >
          <option>enabled</option>
          <option>disabled</option>
        </select>
      </label>
      <label class="field">
        <span>Target type</span>
        <select
          data-path="config.targetType"
          value={draft.config.targetType}
          onChange={(e) =>
            edit((d) => {
              d.config.targetType = e.currentTarget.value;
            })
          }
        >
          {TARGET_TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        <FieldErrors problems={problems} path="config.targetType" />
      </label>
      <h3>Conditions (all must hold)</h3>
      <WatchlistOptions />
      <Conditions list={draft.config.targetMap} path="config.targetMap" level={1} ctx={ctx} get={(d) => d.config.targetMap} />
      <h3>Alert actions</h3>
      <Actions actions={draft.config.alerts} ctx={ctx} />
    </div>
  );
}
