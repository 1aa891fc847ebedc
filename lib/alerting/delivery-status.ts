/**
 * The live delivery status of a rule's actions that the API's deliveries endpoint answers: each
 * action's destination (its channel's key, lib/alerting/channels.ts) with that destination's health,
 * and its lane's queue length. The shapes and Redis keys are lib/alerting/destinations.ts's.
 * @module
 */
import type { AlertDefinition } from "../rules/model.js";
import { destinationKey } from "./channels.js";
import { type ActionDeliveryStatus, HEALTHY, laneOf, parseHealth, queueKeys } from "./destinations.js";

const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : null);

/** The Redis commands {@link actionDeliveryStatus} reads with (a node-redis v5 client fits). */
export interface DeliveryStatusRedis {
  hGetAll(key: string): Promise<Record<string, string>>;
  lLen(key: string): Promise<number>;
}

/**
 * The delivery status of each action of a rule (see {@link ActionDeliveryStatus}), read live.
 * @param keyPrefix Config `redisKeyPrefix`.
 * @throws the client's error when Redis fails.
 */
export async function actionDeliveryStatus(
  redis: DeliveryStatusRedis,
  keyPrefix: string,
  ruleId: string,
  actions: readonly AlertDefinition[],
): Promise<ActionDeliveryStatus[]> {
  const k = queueKeys(keyPrefix);
  return Promise.all(
    actions.map(async (action, actionIndex) => {
      const destination = destinationKey(action);
      const [raw, pending] = await Promise.all([redis.hGetAll(k.dest(destination)), redis.lLen(k.lane(laneOf(ruleId, actionIndex)))]);
      const h = Object.keys(raw).length === 0 ? HEALTHY : parseHealth(raw);
      return {
        actionIndex,
        destination,
        unhealthy: h.unhealthy,
        consecutiveFailures: h.consecutiveFailures,
        unhealthySince: iso(h.unhealthySinceMs),
        nextProbeAt: iso(h.nextProbeAtMs),
        lastCode: h.lastCode || null,
        lastError: h.lastError || null,
        lastFailureAt: iso(h.lastFailureAtMs),
        lastSuccessAt: iso(h.lastSuccessAtMs),
        pending,
      };
    }),
  );
}
