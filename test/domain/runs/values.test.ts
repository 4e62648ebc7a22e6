import { describe, expect, it } from "vitest"
import { depthOf, depthProblem, MAX_VALUE_DEPTH, preferenceProblem } from "../../../src/domain/runs/Values.js"

const nested = (levels: number): unknown => JSON.parse("[".repeat(levels) + "]".repeat(levels))

describe("how deep a run's input or result nests", () => {
  it("counts arrays and objects within each other, without recursion, stopping past the limit", () => {
    expect(depthOf(null, 10)).toBe(0)
    expect(depthOf("x", 10)).toBe(0)
    expect(depthOf([], 10)).toBe(1)
    expect(depthOf({ a: [1, { b: {} }], c: 2 }, 10)).toBe(4)
    expect(depthOf(nested(200_000), 10)).toBe(11)
  })

  it("takes up to the limit and names what is too deep past it", () => {
    expect(depthProblem(nested(MAX_VALUE_DEPTH), "the input")).toBeUndefined()
    expect(depthProblem(nested(MAX_VALUE_DEPTH + 1), "the input")).toBe(
      "the input nests more than 512 levels deep (arrays and objects within each other); at most 512 are taken"
    )
  })
})

describe("a run's stated preference", () => {
  it("takes KEY=VALUE labels, and refuses one shaped as a secret (it would be journaled with the run)", () => {
    expect(preferenceProblem(["zone=lab"])).toBeUndefined()
    expect(preferenceProblem(["nokv"])).toBe('--prefer takes KEY=VALUE labels; "nokv" is not one')
    const said = preferenceProblem([`pool=svc_wk_${"A".repeat(36)}`])
    expect(said).toMatch(/^--prefer holds what is shaped as an svc secret/)
    expect(said).not.toContain("A".repeat(36))
  })
})
