/**
 * Chaos test of the multi-process pipeline on a real EVM node: anvil (0.25 s blocks) with ERC-20
 * traffic, and ingest, decode, index and match each running as its own process
 * (`cli/stage.ts <stage>`) against this run's harness prefixes. While the chain grows by ≥ 300
 * blocks, a seeded PRNG SIGKILLs random stages (each restarted after a short random delay) and
 * makes random reorgs (`anvil_reorg`, depth 1..4). At the end the search API must serve exactly
 * the node's canonical chain (compareWithChain, orphaned hashes not searchable) and the alerts
 * topic must hold, for every canonical token Transfer past the confirmation threshold, exactly one
 * distinct `confirmed` alert id, on its canonical block; no `confirmed` alert of a block that is
 * not canonical; and a `removed` alert for every `pending` alert of a block that is not canonical
 * (pipeline/match/confirmations/decide.ts: a tracked match whose block leaves the chain before its
 * threshold is dropped, with `removed` when `pending` went out; the threshold here is larger than
 * any reorg depth, so every orphaned match is still tracked when its block leaves the chain).
 *
 * Two variants (issue 19 §4): the plain one, and one whose ingest process reads the node through
 * the faulty node (test/support/faulty-node.ts, seeded with the run's seed): every request faulted
 * at {@link FAULT_RATE}, the mode drawn among lagging, stale-branch, 429, 503, truncated JSON and a
 * head going backwards (no hang: a stage process has the default 10 s JSON-RPC timeout, and a hang
 * costs that), with smaller minimums so that it stays bounded.
 *
 * Reproduce a run with `CHAOS_SEED=<seed>` (the seed is printed at start).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { toQuantity } from "ethers";
import type { FastifyInstance } from "fastify";
import type { Consumer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import { prng } from "../../bench/support/prng.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { startTraffic, type TrafficHandle } from "../../cli/devchain/traffic.js";
import type { AlertAvro } from "../../lib/alerting/avro.js";
import { connectRuleStore } from "../../lib/rules/store.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { alertProblems } from "../support/alert-check.js";
import { type ChainComparison, compareWithChain } from "../support/canonical.js";
import { FAULT_MODES, type FaultyNode, startFaultyNode } from "../support/faulty-node.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";
import { configEnv } from "../support/stage-process.js";
import { stopChainTest } from "../support/teardown.js";

const up = await probeStack();

const STAGES = ["ingest", "decode", "index", "match"] as const;
type Stage = (typeof STAGES)[number];
/** The rule's maxConfirmationCount: larger than the deepest reorg. */
const CONFIRMATIONS = 7;
const MAX_REORG_DEPTH = 4;
/** Fault rate of the faulty-node variant. */
const FAULT_RATE = 0.2;
/** Longest chaos phase; the test fails its minimums rather than run longer. */
const CHAOS_BUDGET_MS = 120_000;
/** Longest wait for a (re)started stage's ready line. */
const READY_TIMEOUT_MS = 90_000;
/** Longest wait for the index to equal the chain, then for the alerts to check out. */
const CONVERGE_TIMEOUT_MS = 90_000;
const ALERTS_TIMEOUT_MS = 60_000;
/**
 * The test's own deadline: every phase is bounded (chaos, the restarts still due and the unarmed
 * ingest, each a start of at most {@link READY_TIMEOUT_MS}, convergence, alerts), so past this sum
 * something hangs; the test then fails with its phase and timeline (a CI log keeps only the failure
 * message: a run on a slower CI machine timed out at 300 s with nothing to go on).
 */
const DEADLINE_MS = CHAOS_BUDGET_MS + 3 * READY_TIMEOUT_MS + CONVERGE_TIMEOUT_MS + ALERTS_TIMEOUT_MS + 30_000;
const TEST_TIMEOUT_MS = DEADLINE_MS + 30_000;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One stage process. */
interface Proc {
  stage: Stage;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set when the test killed it on purpose. */
  killed: boolean;
  /** Set once it printed its ready line. */
  ready: boolean;
  /** The crash point it SIGKILLed itself at (its stderr line), if it did. */
  crashedAt?: string;
}

/** A chaos run: its minimums (each reached before the chaos phase ends, within its budget) and whether ingest reads through the faulty node. */
interface Variant {
  title: string;
  minBlocks: number;
  minKills: number;
  minReorgs: number;
  faults: boolean;
  /**
   * Arm ingest's test-only crash hook (`CHAINSIFT_TEST_CRASH_POINT`, pipeline/ingest/crash.ts) at
   * every (re)start during the chaos phase: a point drawn from the seeded PRNG, `announce-unwind`
   * (the next reorg it announces) or `produce-tip` (after producing a block, before the tip write;
   * {@link PRODUCE_TIP_PERCENT} % of blocks). `backfill-chunk` is not drawn: the stage follows here.
   */
  crashPoints: boolean;
}
/** Chance in % that a pass through `produce-tip` kills ingest (once per block). */
const PRODUCE_TIP_PERCENT = 3;
/** The line pipeline/ingest/crash.ts writes to stderr before SIGKILLing its process. */
const CRASH_LINE = /chainsift test crash point (\S+) reached/;
const VARIANTS: Variant[] = [
  {
    title: "SIGKILL chaos: stages as processes, random kills and reorgs (anvil + ERC-20 traffic)",
    minBlocks: 300,
    minKills: 10,
    minReorgs: 5,
    faults: false,
    crashPoints: false,
  },
  {
    title: `SIGKILL chaos through a faulty node (mixed faults at ${FAULT_RATE * 100} %) with ingest crash points: stages as processes, random kills and reorgs`,
    minBlocks: 150,
    minKills: 5,
    minReorgs: 3,
    faults: true,
    crashPoints: true,
  },
];

for (const { title, minBlocks: MIN_BLOCKS, minKills: MIN_KILLS, minReorgs: MIN_REORGS, faults, crashPoints } of VARIANTS)
  describe.skipIf(!up.ok)(title, () => {
    const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
    const random = prng(seed);
    const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

    let h: Harness;
    let anvil: AnvilHandle;
    let traffic: TrafficHandle;
    let pipeline: Pipeline;
    let app: FastifyInstance;
    let watcher: Consumer | undefined;
    let closeRules: (() => Promise<void>) | undefined;
    let ruleId: string;
    const decoder = createDecoder({ chainId: 1 });
    const published: AlertAvro[] = [];
    const running = new Map<Stage, Proc>();
    /** Output tail per stage (stdout + stderr), for diagnostics. */
    const tails = new Map<Stage, string[]>();
    const unexpectedExits: string[] = [];
    const kills: Record<Stage, number> = { ingest: 0, decode: 0, index: 0, match: 0 };
    /** Restarts begun after a kill / of them, ready; kills that hit a process still starting. */
    let restarts = 0;
    let restartsReady = 0;
    let killedStarting = 0;
    let childEnv: NodeJS.ProcessEnv;
    let faulty: FaultyNode | undefined;
    /** Ingest (re)starts arm the crash hook while set (the chaos phase of a `crashPoints` variant). */
    let crashArmed = false;
    /** Crash-point exits by point. */
    const crashes: Record<string, number> = {};
    /** Restarts a stage that SIGKILLed itself at a crash point (set by the test). */
    let onCrash: ((stage: Stage) => void) | undefined;
    /** What happened when (wall clock), printed when the alert checks fail. */
    const timeline: string[] = [];
    const note = (what: string) => timeline.push(`${new Date().toISOString()} ${what}`);
    /** The phase the test is in, for its deadline's message. */
    let phase = "starting";
    const enter = (next: string) => {
      phase = next;
      note(`phase: ${next}`);
      console.log(`[chaos] phase: ${next}`);
    };

    const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
    const headNumber = async () => Number(await rpc("eth_blockNumber"));
    const hashAt = async (n: number) =>
      ((await rpc("eth_getBlockByNumber", [toQuantity(n), false])) as { hash: string } | null)?.hash.toLowerCase();

    const tail = (stage: Stage, line: string) => {
      const t = tails.get(stage) ?? [];
      t.push(line);
      if (t.length > 40) t.shift();
      tails.set(stage, t);
    };

    /** Spawns a stage process and waits for its ready line. */
    const spawnStage = async (stage: Stage, extraArgs: string[] = []): Promise<Proc> => {
      let env = childEnv;
      if (stage === "ingest" && crashArmed) {
        const point = random() < 0.5 ? "announce-unwind" : "produce-tip";
        env = {
          ...childEnv,
          CHAINSIFT_TEST_CRASH_POINT: point,
          CHAINSIFT_TEST_CRASH_PERCENT: String(point === "produce-tip" ? PRODUCE_TIP_PERCENT : 100),
          CHAINSIFT_TEST_CRASH_SEED: String(between(1, 2 ** 30)),
        };
        note(`ingest armed at ${point}`);
      }
      const child = spawn(process.execPath, ["--import", "tsx", "cli/stage.ts", stage, ...extraArgs], {
        cwd: ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      const proc: Proc = {
        stage,
        child,
        killed: false,
        ready: false,
        exited: new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal }))),
      };
      running.set(stage, proc);
      let onReady: () => void = () => {};
      const ready = new Promise<void>((resolve) => {
        onReady = resolve;
      });
      createInterface({ input: child.stdout! }).on("line", (line) => {
        tail(stage, line);
        if (line.includes('"ready":true')) {
          proc.ready = true;
          note(`${stage} ready (pid ${child.pid})`);
          onReady();
        }
      });
      createInterface({ input: child.stderr! }).on("line", (line) => {
        tail(stage, `[stderr] ${line}`);
        const crash = CRASH_LINE.exec(line);
        if (crash) proc.crashedAt = crash[1];
      });
      // "close": after its output ended, so a crash point's stderr line has been read.
      child.once("close", (code, signal) => {
        if (proc.killed) return;
        if (proc.crashedAt) {
          crashes[proc.crashedAt] = (crashes[proc.crashedAt] ?? 0) + 1;
          note(`${stage} crashed itself at ${proc.crashedAt}`);
          console.log(`[chaos] ${stage} SIGKILLed itself at crash point ${proc.crashedAt}`);
          if (running.get(stage) === proc) running.delete(stage);
          onCrash?.(stage);
        } else {
          unexpectedExits.push(`${stage} pid ${child.pid} exited by itself (code ${code}, signal ${signal})`);
          console.error(`[chaos] ${stage} exited unexpectedly; output tail:\n${(tails.get(stage) ?? []).join("\n")}`);
        }
      });
      const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
      const outcome = await Promise.race([
        ready.then(() => "ready" as const),
        closed.then(() => "exited" as const),
        sleep(READY_TIMEOUT_MS).then(() => "timeout" as const),
      ]);
      // A crash point reached before the ready line: restarted by onCrash like any other.
      if (outcome === "exited" && proc.crashedAt !== undefined) return proc;
      if (outcome !== "ready") throw new Error(`${stage} did not become ready (${outcome}):\n${(tails.get(stage) ?? []).join("\n")}`);
      return proc;
    };

    /** SIGKILLs the running process of a stage (by its pid) and waits until it is gone. */
    const killStage = async (stage: Stage) => {
      const proc = running.get(stage);
      if (!proc) return;
      proc.killed = true;
      if (!proc.ready) killedStarting++;
      if (proc.child.exitCode === null && proc.child.signalCode === null && proc.child.pid !== undefined)
        process.kill(proc.child.pid, "SIGKILL");
      await proc.exited;
      running.delete(stage);
    };

    beforeAll(async () => {
      console.log(`[chaos] seed ${seed} (reproduce with CHAOS_SEED=${seed})${faults ? "; ingest through a faulty node" : ""}`);
      h = createHarness({ chain: { technology: "ethereum", blockchain: "ethereum", network: "anvil" } });
      h.config.api.rateLimitMax = 1_000_000;
      anvil = await startAnvil({ blockTimeSec: 0.25 });
      h.config.ingest = { ...h.config.ingest, rpcUrl: anvil.rpcUrl, rpcUrls: [anvil.rpcUrl], pollIntervalMs: 100 };
      traffic = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 200, nft: false });
      // Topics, schemas and indices before any process starts (no stage consumes in this process).
      pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, decoder, stages: [] });
      app = await buildApi({ config: h.config, es: h.es, logger: false });

      const connected = await connectRuleStore(h.config);
      closeRules = () => connected.close();
      const input = tokenTransferRule({
        name: "chaos: every Transfer of the traffic token",
        chain: h.config.chain,
        token: traffic.token,
        maxConfirmationCount: CONFIRMATIONS,
        url: "http://127.0.0.1:9/chaos",
      });
      ruleId = (await connected.store.create("acc-e2e-chaos", input)).id;

      watcher = pipeline.bus.kafka.consumer({ groupId: `chainsift-test-${h.id}-alerts-watch` });
      await watcher.connect();
      await watcher.subscribe({ topics: [pipeline.bus.topic("alerts")], fromBeginning: true });
      await watcher.run({
        eachMessage: async ({ message }) => {
          published.push((await pipeline.bus.decode(message.value)) as AlertAvro);
        },
      });

      // Faults only once every stage started (set after the ingest process is ready).
      if (faults)
        faulty = await startFaultyNode({
          upstream: anvil.rpcUrl,
          seed,
          name: "chaos faulty-node",
          mixedModes: FAULT_MODES.filter((m) => m !== "hang"),
        });
      childEnv = configEnv(h.config, {
        CHAINSIFT_RPC_URL: faulty?.url ?? anvil.rpcUrl,
        CHAINSIFT_POLL_INTERVAL_MS: "100",
        CHAINSIFT_INGEST_TRACES: "false",
        LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      });
      // The consumers first; ingest's first start backfills from block 0 (later starts resume from Redis).
      await Promise.all((["decode", "index", "match"] as const).map((s) => spawnStage(s)));
      await spawnStage("ingest", ["--from", "0"]);
      faulty?.setFaults("mixed", FAULT_RATE);
    }, 180_000); // five processes start (each ~10 s of module loading on a loaded 2-core machine)

    afterAll(async () => {
      for (const stage of [...running.keys()]) await killStage(stage).catch(() => {});
      await traffic?.stop();
      await faulty?.close();
      await stopChainTest({ watcher, app, closeRules, pipeline, anvil, h });
    }, 60_000);

    it(
      "serves exactly the canonical chain and alerts exactly once per canonical Transfer after kills and reorgs",
      async () => {
        let deadline: NodeJS.Timeout | undefined;
        const overdue = new Promise<never>((_, reject) => {
          deadline = setTimeout(() => {
            const tailText = [...tails].map(([stage, t]) => `${stage}:\n${t.slice(-10).join("\n")}`).join("\n");
            reject(
              new Error(
                `chaos test past its deadline (${DEADLINE_MS} ms) in phase "${phase}" (seed ${seed}); running ${[...running.keys()].join(",")}; ` +
                  `restarts ${restarts} (ready ${restartsReady}); timeline:\n${timeline.join("\n")}\noutput tails:\n${tailText}`,
              ),
            );
          }, DEADLINE_MS);
        });
        try {
          await Promise.race([run(), overdue]);
        } finally {
          clearTimeout(deadline);
        }
      },
      TEST_TIMEOUT_MS,
    );

    /**
     * The failure message when the index did not converge: the differing heights as ranges, the first
     * differences, ingest's position and the node's head (`GET /chains/`), each consumer group's lag
     * (`GET /chains/health/`), the seed, the timeline's end and each stage's output tail.
     */
    const convergeDiagnostics = async (end: number, last: ChainComparison | undefined): Promise<string> => {
      const heights = [
        ...new Set((last?.problems ?? []).map((p) => Number(/^height (\d+)/.exec(p)?.[1])).filter(Number.isSafeInteger)),
      ].sort((a, b) => a - b);
      const ranges: string[] = [];
      for (const n of heights) {
        const prev = ranges.at(-1);
        const m = prev === undefined ? undefined : /^(\d+)(?:-(\d+))?$/.exec(prev);
        const prevEnd = m ? Number(m[2] ?? m[1]) : Number.NaN;
        if (m && prevEnd === n - 1) ranges[ranges.length - 1] = `${m[1]}-${n}`;
        else ranges.push(String(n));
      }
      const get = async (url: string) => {
        const res = await app
          .inject({ method: "GET", url, headers: { authorization: `Bearer ${h.config.api.tokens[0]}` } })
          .catch((err: unknown) => ({ statusCode: 0, body: String(err) }));
        return `GET ${url} ${res.statusCode}: ${res.body.slice(0, 1500)}`;
      };
      const tailText = [...tails].map(
        ([stage, t]) => `${stage} (${running.get(stage)?.child.pid ?? "not running"}):\n${t.slice(-12).join("\n")}`,
      );
      return [
        `index did not converge within ${CONVERGE_TIMEOUT_MS} ms (seed ${seed}, reproduce with CHAOS_SEED=${seed}); head ${end}; ` +
          `${last?.problems.length ?? "?"} differences (at most 50 listed) at heights ${ranges.join(",")}; first:`,
        ...(last?.problems ?? []).slice(0, 3).map((p) => `  ${p.slice(0, 240)}`),
        await get("/chains/"),
        await get("/chains/health/"),
        `timeline (end):\n${timeline.slice(-25).join("\n")}`,
        `output tails:\n${tailText.join("\n")}`,
      ].join("\n");
    };

    const run = async () => {
      enter("chaos");
      const started = Date.now();
      const startHead = await headNumber();
      const orphaned = new Set<string>();
      const reorgs: number[] = [];
      const pendingRestarts = new Set<Promise<void>>();
      const restartLater = (stage: Stage) => {
        const delay = between(100, 2000);
        const p = (async () => {
          await sleep(delay);
          restarts++;
          await spawnStage(stage);
          restartsReady++;
        })();
        pendingRestarts.add(p);
        // A restart that never printed its ready line goes into the timeline (the failure message shows it).
        void p
          .catch((err: unknown) => note(`${stage} restart failed: ${String(err).split("\n")[0]}`))
          .finally(() => pendingRestarts.delete(p));
      };
      onCrash = restartLater;
      crashArmed = crashPoints;
      // The running ingest was started unarmed (the initial run from block 0): restart it armed, once it
      // has a durable tip (a restart without one would start at the node's head: `--from 0` is not repeated).
      if (crashArmed) {
        await waitFor(async () => (await (await pipeline.chainState()).loadFollower()).tip, 60_000, 200);
        await killStage("ingest");
        await spawnStage("ingest");
      }

      // Chaos phase: until ≥ MIN_BLOCKS new blocks, ≥ MIN_KILLS kills and ≥ MIN_REORGS reorgs (bounded).
      const totalKills = () => Object.values(kills).reduce((a, b) => a + b, 0);
      while (Date.now() - started < CHAOS_BUDGET_MS) {
        const head = await headNumber();
        // A crash-point variant also runs until an armed ingest crashed itself at least once (bounded by the
        // budget): its last reorg may come too late for the armed ingest to see it before the chaos ends (a run
        // ended with no crash-point exit although the hook was armed at announce-unwind, seed 183034384).
        const crashed = Object.values(crashes).reduce((a, b) => a + b, 0) > 0;
        if (head - startHead >= MIN_BLOCKS && totalKills() >= MIN_KILLS && reorgs.length >= MIN_REORGS && (!crashPoints || crashed)) break;
        await sleep(between(1500, 5000));
        // Kills are due a bit more often than reorgs; a stage that is down is not killed again.
        if (random() < 0.65) {
          const stage = STAGES[between(0, STAGES.length - 1)]!;
          if (!running.has(stage)) continue;
          await killStage(stage);
          kills[stage]++;
          console.log(`[chaos] t=${((Date.now() - started) / 1000).toFixed(1)}s SIGKILL ${stage}`);
          note(`SIGKILL ${stage}`);
          restartLater(stage);
        } else {
          const depth = between(1, MAX_REORG_DEPTH);
          const top = await headNumber();
          const before = new Map<number, string | undefined>();
          for (let n = top - depth + 1; n <= top; n++) before.set(n, await hashAt(n));
          await rpc("anvil_reorg", [depth, []]);
          // Only hashes that really left the chain (a block mined in between shifts the window).
          for (const [n, hash] of before) if (hash && (await hashAt(n)) !== hash) orphaned.add(hash);
          reorgs.push(depth);
          console.log(`[chaos] t=${((Date.now() - started) / 1000).toFixed(1)}s reorg depth ${depth} at ${top}`);
          note(`reorg depth ${depth} at ${top}`);
        }
      }
      const chaosMs = Date.now() - started;
      enter("restarts still due");
      crashArmed = false;
      // From here on a stage that crashes itself is not restarted by onCrash: the steps below start
      // whatever is missing, once (with onCrash, a crash between the kill and the spawn of the
      // unarmed ingest below made two ingest processes, one of them never stopped).
      onCrash = undefined;
      while (pendingRestarts.size > 0) await Promise.allSettled([...pendingRestarts]);
      // An armed ingest could still crash while the index converges: replace it by an unarmed one.
      if (crashPoints) {
        await killStage("ingest");
        await spawnStage("ingest");
        while (pendingRestarts.size > 0) await Promise.allSettled([...pendingRestarts]);
      }
      for (const s of STAGES) if (!running.has(s)) await spawnStage(s); // a stage that exited by itself

      // Settle: no more traffic, a few more blocks so every Transfer passes its threshold.
      enter("settle");
      await traffic.stop();
      await rpc("anvil_mine", [toQuantity(CONFIRMATIONS + 3)]);
      const end = await headNumber();
      const blocks = end - startHead;

      let last: ChainComparison | undefined;
      let comparisons = 0;
      const compareStarted = Date.now();
      enter("converge");
      /** Set when the index did not converge: the pipeline's state at that moment (thrown below, after the summary). */
      let notConverged: string | undefined;
      await waitFor(
        async () => {
          last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, to: end, orphaned });
          comparisons += last.comparisons;
          return last.ok;
        },
        CONVERGE_TIMEOUT_MS,
        1000,
      ).catch(async (err) => {
        console.error(`[chaos] index did not converge: ${String(err)}`);
        notConverged = await convergeDiagnostics(end, last);
      });
      const compareMs = Date.now() - compareStarted;

      // Alerts. Every canonical Transfer of the token up to the height whose threshold the head passed.
      const check = async () =>
        alertProblems({
          rpcUrl: anvil.rpcUrl,
          ruleId,
          token: traffic.token,
          confirmedUpTo: end - CONFIRMATIONS + 1,
          published,
          orphaned,
        });
      let transfersChecked = 0;
      let problems: string[] = [];
      enter("alerts");
      await waitFor(
        async () => {
          ({ problems, transfers: transfersChecked } = await check());
          return problems.length === 0;
        },
        ALERTS_TIMEOUT_MS,
        1000,
      ).catch(() => {});
      if (problems.length > 0) {
        // Diagnostics: every alert of the entities concerned, and the timeline of kills and reorgs.
        const entities = new Set(problems.map((p) => /(0x[0-9a-f]{64}_e_\d+)/.exec(p)?.[1]).filter(Boolean));
        for (const a of published)
          if (entities.has(a.entityId))
            console.error(
              `[chaos] alert ${a.status} seq ${a.sequence} conf ${a.confirmations} ${a.entityId} block ${a.blockNumber} ${a.blockHash} emitted ${a.emittedAt}`,
            );
        console.error(`[chaos] timeline:\n${timeline.join("\n")}`);
        for (const [stage, t] of tails) console.error(`[chaos] ${stage} output tail:\n${t.join("\n")}`);
      }
      const distinct = (status: string) =>
        new Set(published.filter((a) => a.ruleId === ruleId && a.status === status).map((a) => a.id)).size;

      console.log(
        `[chaos] summary: seed=${seed}${faulty ? ` faults injected ${faulty.total()} ${JSON.stringify(faulty.injected)}` : ""}${crashPoints ? ` crash-point exits ${JSON.stringify(crashes)}` : ""} kills=${totalKills()} ${JSON.stringify(kills)} restarts=${restarts} (ready ${restartsReady}, killed while starting ${killedStarting}) ` +
          `reorgs=${reorgs.length} depths=[${reorgs.join(",")}] orphanedHashes=${orphaned.size} blocks=${blocks} (head ${end}) ` +
          `comparisons=${comparisons} (last ${last?.comparisons}, ${last?.documents} docs, ${last?.heights} heights) ` +
          `alertsPublished=${published.length} distinct pending/confirmed/removed=${distinct("pending")}/${distinct("confirmed")}/${distinct("removed")} ` +
          `transfersChecked=${transfersChecked} unexpectedExits=${unexpectedExits.length} ` +
          `chaos=${(chaosMs / 1000).toFixed(1)}s converge=${(compareMs / 1000).toFixed(1)}s total=${((Date.now() - started) / 1000).toFixed(1)}s`,
      );

      expect(unexpectedExits).toEqual([]);
      if (faulty) expect(faulty.total()).toBeGreaterThan(0);
      expect(totalKills()).toBeGreaterThanOrEqual(MIN_KILLS);
      expect(reorgs.length).toBeGreaterThanOrEqual(MIN_REORGS);
      expect(blocks).toBeGreaterThanOrEqual(MIN_BLOCKS);
      // One message that ends with what to go on (a CI log may keep only the failure's last lines).
      if (notConverged !== undefined) throw new Error(notConverged);
      expect(last?.problems).toEqual([]);
      expect(last?.heights).toBe(end + 1);
      expect(problems).toEqual([]);
      if (crashPoints) expect(Object.values(crashes).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(transfersChecked).toBeGreaterThan(0);
    };
  });
