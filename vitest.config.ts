import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The JSON report is what .ci/run counts; the default reporter is what people read.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results.json" },
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
