import { defineConfig } from "vitest/config";

/**
 * Vitest configuration, two projects run one after the other (`sequence.groupOrder`):
 * - `unit` (test/unit/): pure logic, no services; files run two at a time (the machine's 2 cores).
 * - `services` (test/integration/, test/e2e/): talk to the real stack; one file at a time, since
 *   several of them measure timing-sensitive behaviour (reorgs, chaos, latency) and share one
 *   Kafka, Elasticsearch and Redis.
 * The stack must be up for the second project.
 */
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: "services",
          include: ["test/integration/**/*.test.ts", "test/e2e/**/*.test.ts"],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
