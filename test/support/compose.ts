/**
 * Reads docker-compose.yml as Docker Compose does, without a Docker engine: YAML with merge keys
 * (`<<: *anchor`), then variable interpolation in every string value, per the Compose
 * Specification (https://github.com/compose-spec/compose-spec/blob/main/spec.md#interpolation):
 * `$VAR`, `${VAR}`, `${VAR:-default}` (unset or empty), `${VAR-default}` (unset),
 * `${VAR:?message}` / `${VAR?message}` (required), `$$` for a literal `$`. Also reads the scrape
 * targets of Prometheus configuration files.
 * @module
 */
import { parse } from "yaml";

/** An error for a required variable (`${VAR:?message}`) that is missing. */
export class InterpolationError extends Error {}

const PATTERN = /\$(?:(\$)|([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])((?:[^{}]|\{[^{}]*\})*))?\})/g;

/**
 * Interpolates one string value.
 * @param env - the variables (e.g. `{}` for the defaults, or `process.env`).
 * @throws {InterpolationError} for a required variable that is unset (or empty with `:?`).
 */
export function interpolate(value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(
    PATTERN,
    (
      _all,
      dollar: string | undefined,
      bare: string | undefined,
      name: string | undefined,
      op: string | undefined,
      arg: string | undefined,
    ) => {
      if (dollar) return "$";
      const key = (bare ?? name) as string;
      const v = env[key];
      if (!op) return v ?? "";
      const missing = op.startsWith(":") ? v === undefined || v === "" : v === undefined;
      if (op.endsWith("-")) return missing ? interpolate(arg ?? "", env) : (v as string);
      if (missing) throw new InterpolationError(`required variable ${key} is missing: ${arg ?? ""}`);
      return v as string;
    },
  );
}

/** Interpolates every string of a parsed document (keys stay as written). */
export function interpolateDeep(value: unknown, env: Readonly<Record<string, string | undefined>>): unknown {
  if (typeof value === "string") return interpolate(value, env);
  if (Array.isArray(value)) return value.map((v) => interpolateDeep(v, env));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateDeep(v, env)]));
  return value;
}

/**
 * Parses a Compose file's text: YAML 1.1 merge keys resolved, then interpolated with `env`.
 * @throws the YAML parser's errors; {@link InterpolationError}.
 */
export function parseCompose(text: string, env: Readonly<Record<string, string | undefined>> = {}): Record<string, unknown> {
  return interpolateDeep(parse(text, { merge: true }), env) as Record<string, unknown>;
}

/** One Prometheus scrape target: host and port, and the job and file it came from. */
export interface ScrapeTarget {
  job: string;
  host: string;
  port: number;
  file: string;
}

/**
 * The scrape targets of a Prometheus configuration (https://prometheus.io/docs/prometheus/latest/configuration/configuration/):
 * `static_configs[].targets` (`host:port`) and `dns_sd_configs[].names` with their `port`.
 * @throws the YAML parser's errors.
 */
export function scrapeTargets(text: string, file: string): ScrapeTarget[] {
  const doc = parse(text) as { scrape_configs?: Array<Record<string, unknown>> } | null;
  const out: ScrapeTarget[] = [];
  for (const sc of doc?.scrape_configs ?? []) {
    const job = String(sc.job_name);
    for (const st of (sc.static_configs as Array<{ targets?: string[] }> | undefined) ?? []) {
      for (const t of st.targets ?? []) {
        const i = t.lastIndexOf(":");
        out.push({ job, host: t.slice(0, i), port: Number(t.slice(i + 1)), file });
      }
    }
    for (const dns of (sc.dns_sd_configs as Array<{ names?: string[]; port?: number }> | undefined) ?? []) {
      for (const name of dns.names ?? []) out.push({ job, host: name.replace(/^tasks\./, ""), port: Number(dns.port), file });
    }
  }
  return out;
}

/**
 * The container ports a Compose service listens on as far as the file says: `expose` entries and
 * the container side of `ports` (short syntax `[ip:][host:]container[/proto]` or long `{target}`).
 */
export function containerPorts(service: Record<string, unknown>): Set<number> {
  const ports = new Set<number>();
  for (const e of (service.expose as Array<string | number> | undefined) ?? []) ports.add(Number(String(e).split("/")[0]));
  for (const p of (service.ports as Array<string | number | { target: number }> | undefined) ?? []) {
    if (typeof p === "object") ports.add(Number(p.target));
    else ports.add(Number(String(p).split("/")[0]?.split(":").at(-1)));
  }
  return ports;
}
