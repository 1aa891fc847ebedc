import { defineConfig } from "vitest/config";

/** Vitest configuration: unit, integration and e2e suites share one config; the stack must be up for the last two. */
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    fileParallelism: false,
    reporters: ["default"],
  },
});
