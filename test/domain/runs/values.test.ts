import { describe, expect, it } from "vitest"
import { canonicalJson, depthOf, depthProblem, idempotencyKeyProblem, MAX_KEY_LENGTH, MAX_VALUE_DEPTH, preferenceProblem } from "../../../src/domain/runs/Values.js"
import { LABEL_RULE } from "../../../src/domain/manifest/Formats.js"

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
    expect(preferenceProblem(["nokv"])).toBe(`--prefer takes KEY=VALUE labels; "nokv" is not ${LABEL_RULE}`)
    // Journaled with the run and shown: no control character, no 100 KB label (quoted cut short).
    expect(preferenceProblem(["a=b\u0001c"])).toBe(`--prefer takes KEY=VALUE labels; "a=b\\u0001c" is not ${LABEL_RULE}`)
    expect(preferenceProblem([`a=${"x".repeat(100_000)}`])).toBe(`--prefer takes KEY=VALUE labels; "a=${"x".repeat(58)}…" is 100002 characters long: a label is at most 200`)
    expect(preferenceProblem([`a=${"x".repeat(198)}`])).toBeUndefined()
    const said = preferenceProblem([`pool=svc_wk_${"A".repeat(36)}`])
    expect(said).toMatch(/^--prefer holds what is shaped as an svc secret/)
    expect(said).not.toContain("A".repeat(36))
  })
})

describe("an idempotency key", () => {
  it("is 1 to 200 printable ASCII characters without spaces, not shaped as a secret", () => {
    for (const key of ["a", "build-4211/step-3", "0f8fad5b-d9cb-469f-a165-70867728950e", "x".repeat(MAX_KEY_LENGTH), "ci:run#7@main"]) expect(idempotencyKeyProblem(key), key).toBeUndefined()
    for (const key of ["", "two words", "x".repeat(MAX_KEY_LENGTH + 1), "tab\there", "ünï"]) expect(idempotencyKeyProblem(key), key).toMatch(/^--idempotency-key takes 1 to 200 printable ASCII characters without spaces/)
    expect(idempotencyKeyProblem(`svc_wk_${"A".repeat(30)}123456`)).toMatch(/shaped as an svc secret/)
    // A long one is not repeated whole.
    expect(idempotencyKeyProblem(`${"y".repeat(300)} `)).toContain(`"${"y".repeat(60)}..."`)
  })

  it("compares inputs as JSON whatever their keys' order", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe(canonicalJson({ a: [{ c: 3, d: 2 }], b: 1 }))
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: "1" }))
  })
})
