/**
 * docker-compose.yml, checked without a Docker engine: valid against the Compose Specification's
 * JSON schema (vendored in test/support/compose-spec/, see its SOURCE.md) after Compose's own
 * interpolation; chainsift's services run the right entry points with the replica counts of
 * docs/operations.md; and every scrape target of the Prometheus configuration under
 * ops/prometheus/ (when present) is a service of the file that listens on that port.
 */
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are Compose variables, not templates
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { containerPorts, InterpolationError, interpolate, parseCompose, type ScrapeTarget, scrapeTargets } from "../../support/compose.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const COMPOSE = readFileSync(join(ROOT, "docker-compose.yml"), "utf8");
const SCHEMA = JSON.parse(readFileSync(join(ROOT, "test/support/compose-spec/compose-spec.json"), "utf8")) as object;
const PROMETHEUS_DIR = join(ROOT, "ops/prometheus");

type Service = Record<string, unknown> & { command?: string[]; deploy?: { replicas?: number | string }; profiles?: string[] };
const servicesOf = (doc: Record<string, unknown>) => doc.services as Record<string, Service>;

const validate = new Ajv2020({ strict: false, allErrors: true }).compile(SCHEMA);

describe("Compose interpolation (pure)", () => {
  it("applies defaults, values, required variables and $$ as Compose does", () => {
    expect(interpolate("${A:-2}", {})).toBe("2");
    expect(interpolate("${A:-2}", { A: "" })).toBe("2");
    expect(interpolate("${A-2}", { A: "" })).toBe("");
    expect(interpolate("${A:-2}", { A: "5" })).toBe("5");
    expect(interpolate("x $A y ${B}", { A: "1" })).toBe("x 1 y ");
    expect(interpolate("$$url", {})).toBe("$url");
    expect(interpolate("${A:-${B:-3}}", {})).toBe("3");
    expect(() => interpolate("${A:?set A}", {})).toThrow(InterpolationError);
    expect(interpolate("${A?set A}", { A: "" })).toBe("");
  });
});

describe("Prometheus scrape targets and a service's ports (pure)", () => {
  it("reads static and DNS targets, and expose and ports entries", () => {
    const prom = `scrape_configs:
  - job_name: decode
    dns_sd_configs: [{ names: ["tasks.decode"], type: A, port: 9464 }]
  - job_name: api
    static_configs: [{ targets: ["api:8080", "ingest:9464"] }]
`;
    expect(scrapeTargets(prom, "p.yml")).toEqual([
      { job: "decode", host: "decode", port: 9464, file: "p.yml" },
      { job: "api", host: "api", port: 8080, file: "p.yml" },
      { job: "api", host: "ingest", port: 9464, file: "p.yml" },
    ]);
    expect([...containerPorts({ expose: ["9464"], ports: ["127.0.0.1:8080:8081", "9000/udp", { target: 7000 }] })].sort()).toEqual([
      7000, 8081, 9000, 9464,
    ]);
  });
});

describe("docker-compose.yml", () => {
  const doc = parseCompose(COMPOSE);
  const services = servicesOf(doc);

  it("is valid against the Compose Specification schema with the defaults and with every replica count set", () => {
    const ok = validate(doc);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(ok).toBe(true);
    const scaled = parseCompose(COMPOSE, {
      DECODE_REPLICAS: "3",
      INDEX_REPLICAS: "3",
      MATCH_REPLICAS: "2",
      NOTIFY_REPLICAS: "3",
      API_REPLICAS: "2",
    });
    expect(validate(scaled), JSON.stringify(validate.errors)).toBe(true);
  });

  it("rejects what Compose rejects (the schema really checks): an unknown service key, a bad replica count", () => {
    const bad = structuredClone(doc) as { services: Record<string, Service> };
    (bad.services.decode as Service).replicas = 2; // belongs under deploy
    expect(validate(bad)).toBe(false);
    const worse = structuredClone(doc) as { services: Record<string, Service> };
    (worse.services.decode as Service).deploy = { replicas: [2] as unknown as number };
    expect(validate(worse)).toBe(false);
  });

  it("runs ingest, each consuming stage and the API from the built image, next to the backing services", () => {
    for (const s of ["kafka", "elasticsearch", "registry", "registry-init", "redis"]) expect(services[s], s).toBeDefined();
    for (const stage of ["ingest", "decode", "index", "match", "notify"]) {
      expect(services[stage]?.command, stage).toEqual(["dist/cli/stage.js", stage]);
    }
    expect(services.api?.command).toEqual(["dist/cli/api.js"]);
    for (const s of ["ingest", "decode", "index", "match", "notify", "api"]) {
      const svc = services[s] as Service;
      expect(svc.build, s).toEqual({ context: ".", dockerfile: "Dockerfile" });
      expect(svc.profiles, s).toEqual(["pipeline"]);
      // Every dependency is a service of the file.
      for (const dep of Object.keys((svc.depends_on as Record<string, unknown>) ?? {}))
        expect(services[dep], `${s} → ${dep}`).toBeDefined();
      // On the compose network, the stores are reached by service name (Kafka on its DOCKER listener).
      const env = svc.environment as Record<string, string>;
      expect(env.KAFKA_BROKERS, s).toBe("kafka:29092");
      expect(env.ELASTICSEARCH_URL, s).toBe("http://elasticsearch:9200");
      expect(env.REDIS_URL, s).toBe("redis://redis:6379");
    }
    const kafkaEnv = services.kafka?.environment as Record<string, string>;
    expect(kafkaEnv.KAFKA_ADVERTISED_LISTENERS).toContain("DOCKER://kafka:29092");
    expect(kafkaEnv.KAFKA_ADVERTISED_LISTENERS).toContain("PLAINTEXT://127.0.0.1:9092");
  });

  it("takes replica counts from the environment, with the defaults of docs/operations.md; ingest stays at one", () => {
    const replicas = (d: Record<string, unknown>) =>
      Object.fromEntries(
        ["ingest", "decode", "index", "match", "notify", "api"].map((s) => [s, String(servicesOf(d)[s]?.deploy?.replicas)]),
      );
    expect(replicas(doc)).toEqual({ ingest: "1", decode: "2", index: "2", match: "1", notify: "1", api: "1" });
    expect(
      replicas(parseCompose(COMPOSE, { DECODE_REPLICAS: "3", INDEX_REPLICAS: "4", MATCH_REPLICAS: "2", NOTIFY_REPLICAS: "3" })),
    ).toEqual({
      ingest: "1",
      decode: "3",
      index: "4",
      match: "2",
      notify: "3",
      api: "1",
    });
  });

  it.skipIf(!existsSync(PROMETHEUS_DIR))(
    "every Prometheus scrape target is a compose service listening on that port (ops/prometheus)",
    () => {
      const targets: ScrapeTarget[] = [];
      for (const f of readdirSync(PROMETHEUS_DIR, { recursive: true }).map(String)) {
        if (/\.ya?ml$/.test(f)) targets.push(...scrapeTargets(readFileSync(join(PROMETHEUS_DIR, f), "utf8"), f));
      }
      expect(targets.length).toBeGreaterThan(0);
      const problems: string[] = [];
      for (const t of targets) {
        const svc = services[t.host];
        if (!svc) problems.push(`${t.file} job ${t.job}: ${t.host} is not a service of docker-compose.yml`);
        else if (!containerPorts(svc).has(t.port))
          problems.push(`${t.file} job ${t.job}: service ${t.host} does not expose port ${t.port}`);
      }
      expect(problems).toEqual([]);
    },
  );
});
