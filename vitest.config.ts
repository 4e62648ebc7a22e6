import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Every temporary directory of the run under one, removed at its end (test/support/temp-root.ts).
    globalSetup: ["test/support/temp-root.ts"],
    // A failing test says what its svc processes were doing (test/support/on-failure.ts).
    setupFiles: ["test/support/on-failure.ts"],
    // The JSON report is what .ci/run counts; the default reporter is what people read.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
