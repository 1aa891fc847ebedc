/**
 * The alerting-rules backends of the API as a plugin: opens the rule store and the delivery log
 * (api/routes/rules/index.ts `RulesBackends`, e.g. from `connectRulesBackends`) when registered,
 * decorates the app with `rulesBackends` for the rules routes, and closes them in an `onClose` hook,
 * so `app.close()` releases their Redis connections like every other plugin's.
 *
 * ```ts
 * await app.register(rulesBackendsPlugin, { open: () => connectRulesBackends(config, { logger }) });
 * await app.register(rulesRoutes({ ...app.rulesBackends, chains }));
 * ```
 * @module
 */
import type { FastifyPluginAsync } from "fastify";
import type { RulesBackends } from "../routes/rules/index.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The rule store, delivery log and delivery status of the rules routes; see api/plugins/rules.ts. */
    rulesBackends: RulesBackends;
  }
}

/** Options of {@link rulesBackendsPlugin}. */
export interface RulesBackendsPluginOptions {
  /**
   * Opens the backends, called once at registration; a rejection (Redis unreachable) fails the
   * registration. What it returns is closed when the app closes.
   */
  open: () => Promise<RulesBackends>;
}

/** Registers `app.rulesBackends` (non-encapsulated) and closes it on `onClose`. */
export const rulesBackendsPlugin: FastifyPluginAsync<RulesBackendsPluginOptions> = globalPlugin(async (app, opts) => {
  const backends = await opts.open();
  app.decorate("rulesBackends", backends);
  app.addHook("onClose", async () => {
    await backends.close();
  });
}, "chainsift-rules-backends");
