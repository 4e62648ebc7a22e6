/**
 * `placementKey` hashes the text `outcome|host|candidate:code,code;...` without building it; it
 * must give what hashing the built text gives (the keys of runs folded before stay equal, and so
 * do the projections' digests).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { placementKey } from "../../../src/domain/runs/Runs.js"

/** The key as it was first written: the whole text, then cyrb53 with seeds 1 and 2. */
const cyrb53 = (text: string, seed: number): number => {
  let h1 = 0xdeadbeef ^ seed
  let h2 = 0x41c6ce57 ^ seed
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ ch, 2654435761)
    h2 = Math.imul(h2 ^ ch, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}
type Keyed = Parameters<typeof placementKey>[0]
const reference = (o: Keyed) => {
  const text = `${o.outcome}|${o.host ?? ""}|${o.verdicts.map((v) => `${v.candidate}:${v.exclusions.map((x) => x.code).join(",")}`).join(";")}`
  return `${cyrb53(text, 1).toString(16).padStart(14, "0")}${cyrb53(text, 2).toString(16).padStart(14, "0")}`
}

const keyed: fc.Arbitrary<Keyed> = fc.record({
  outcome: fc.constantFrom("placed", "blocked", "waiting"),
  host: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  verdicts: fc.array(
    fc.record({ candidate: fc.string({ maxLength: 12 }), exclusions: fc.array(fc.record({ code: fc.string({ maxLength: 16 }) }), { maxLength: 4 }) }),
    { maxLength: 40 }
  )
})

describe("placementKey", () => {
  it("is the hash of the decision's text, built or not", () => {
    fc.assert(
      fc.property(keyed, (o) => {
        expect(placementKey(o)).toBe(reference(o))
      }),
      { numRuns: 500 }
    )
  })

  it("is 28 hex digits, and tells apart decisions that differ in one exclusion", () => {
    const a: Keyed = { outcome: "waiting", host: null, verdicts: [{ candidate: "w1", exclusions: [{ code: "slots-full" }] }, { candidate: "w2", exclusions: [] }] }
    const b: Keyed = { ...a, verdicts: [a.verdicts[0]!, { candidate: "w2", exclusions: [{ code: "missing-label" }] }] }
    expect(placementKey(a)).toMatch(/^[0-9a-f]{28}$/)
    expect(placementKey(a)).not.toBe(placementKey(b))
    expect(placementKey(a)).toBe(placementKey({ ...a, verdicts: [...a.verdicts] }))
  })
})
