/** JSON text in pieces (domain/journal/JsonPieces.ts): joined, exactly what JSON.stringify writes. */
import * as fc from "fast-check"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { describe, expect, it } from "vitest"
import { jsonPieces } from "../../../src/domain/journal/JsonPieces.js"

const joined = (value: unknown, slice: number) => [...jsonPieces(value, slice)].join("")

/** JSON values, and what JSON.stringify treats specially: undefined fields and elements, functions, dates, Effect data with toJSON. */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(undefined, () => 1, new Date(0), Option.some(1), Option.none(), HashMap.make(["a", 1]), { toJSON: () => undefined }),
    fc.array(tie("any"), { maxLength: 12 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie("any"), { maxKeys: 5 })
  )
})).any

describe("jsonPieces", () => {
  it("joined, the pieces are JSON.stringify's text, whatever the slice", () => {
    fc.assert(
      fc.property(value, fc.integer({ min: 1, max: 5 }), (v, slice) => {
        expect(joined(v, slice)).toBe(JSON.stringify(v) ?? "")
      }),
      { numRuns: 2_000 }
    )
  })

  it("cuts a long array between its elements, at most `slice` of them a piece", () => {
    const runs = Array.from({ length: 10 }, (_, i) => [`r${i}`, { n: i }])
    const pieces = [...jsonPieces({ sequence: 7, runs: { kept: runs } }, 4)]
    expect(pieces).toEqual([
      "{",
      '"sequence":7',
      ',"runs":',
      "{",
      '"kept":',
      "[",
      '["r0",{"n":0}],["r1",{"n":1}],["r2",{"n":2}],["r3",{"n":3}]',
      ',["r4",{"n":4}],["r5",{"n":5}],["r6",{"n":6}],["r7",{"n":7}]',
      ',["r8",{"n":8}],["r9",{"n":9}]',
      "]",
      "}",
      "}"
    ])
  })

  it("refuses a slice that is not a positive integer", () => {
    expect(() => joined([1], 0)).toThrow(/slice must be a positive integer, not 0/)
  })
})
