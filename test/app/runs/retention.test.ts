/** SVC_WORKFLOW_RETAINED_RUNS: how many settled runs a generation keeps in memory (docs/runs.md). */
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { parseRetainedRuns } from "../../../src/app/runs/Retention.js"
import { RETAINED_SETTLED_RUNS } from "../../../src/domain/runs/Runs.js"

describe("SVC_WORKFLOW_RETAINED_RUNS", () => {
  it("defaults to 5,000 when unset or empty", () => {
    expect(RETAINED_SETTLED_RUNS).toBe(5_000)
    expect(parseRetainedRuns(undefined)).toEqual(Either.right(5_000))
    expect(parseRetainedRuns("  ")).toEqual(Either.right(5_000))
  })

  it("takes a whole number from 1 to 50,000", () => {
    expect(parseRetainedRuns("1")).toEqual(Either.right(1))
    expect(parseRetainedRuns(" 250 ")).toEqual(Either.right(250))
    expect(parseRetainedRuns("50000")).toEqual(Either.right(50_000))
  })

  it.each(["0", "-3", "2.5", "1e3", "many", "50001", "1000000"])("refuses %j, saying what it takes", (raw) => {
    expect(parseRetainedRuns(raw)).toEqual(Either.left(`SVC_WORKFLOW_RETAINED_RUNS must be a whole number from 1 to 50,000, not ${JSON.stringify(raw)}`))
  })
})
