/**
 * `placementKey` hashes the text `outcome|host|candidate:code=text,code/capacity/requested;...`
 * without building it; it must give what hashing the built text gives.
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
  const text = `${o.outcome}|${o.host ?? ""}|${o.verdicts.map((v) => `${v.candidate}:${v.exclusions.map((x) => (x.capacity === undefined ? `${x.code}=${x.text}` : `${x.code}/${x.capacity}/${x.requested}`)).join(",")}`).join(";")}`
  return `${cyrb53(text, 1).toString(16).padStart(14, "0")}${cyrb53(text, 2).toString(16).padStart(14, "0")}`
}

const keyed: fc.Arbitrary<Keyed> = fc.record({
  outcome: fc.constantFrom("placed", "blocked", "waiting"),
  host: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  verdicts: fc.array(
    fc.record({ candidate: fc.string({ maxLength: 12 }), exclusions: fc.array(fc.oneof(
          fc.record({ code: fc.string({ maxLength: 16 }), text: fc.string({ maxLength: 24 }) }),
          fc.record({ code: fc.string({ maxLength: 16 }), text: fc.string({ maxLength: 24 }), capacity: fc.nat(64), requested: fc.nat(4), used: fc.nat(64) })
        ), { maxLength: 4 }) }),
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
    const a: Keyed = { outcome: "waiting", host: null, verdicts: [{ candidate: "w1", exclusions: [{ code: "slots-full", text: "slots: 1 of 1 in use" }] }, { candidate: "w2", exclusions: [] }] }
    const b: Keyed = { ...a, verdicts: [a.verdicts[0]!, { candidate: "w2", exclusions: [{ code: "missing-label", text: "lacks label gpu=true" }] }] }
    expect(placementKey(a)).toMatch(/^[0-9a-f]{28}$/)
    expect(placementKey(a)).not.toBe(placementKey(b))
    expect(placementKey(a)).toBe(placementKey({ ...a, verdicts: [...a.verdicts] }))
  })

  it("tells apart decisions whose exclusions differ in their text alone (a worker's labels swapped: it lacks another label; it kept saying it lacked the one it now had)", () => {
    const lacks = (label: string): Keyed => ({ outcome: "blocked", host: null, verdicts: [{ candidate: "w1", exclusions: [{ code: "missing-label", text: `lacks label ${label}` }] }] })
    expect(placementKey(lacks("zone=lab"))).not.toBe(placementKey(lacks("gpu=true")))
    expect(placementKey(lacks("gpu=true"))).toBe(placementKey(lacks("gpu=true")))
    // A full host: its capacity changed is another decision; how many are in use, moving with other work, is not.
    const full = (used: number, capacity: number): Keyed => ({
      outcome: "waiting",
      host: null,
      verdicts: [{ candidate: "w1", exclusions: [{ code: "no-physical-slot", text: `slots: ${used} of ${capacity} in use`, requested: 1, used, capacity }] }]
    })
    expect(placementKey(full(2, 2))).toBe(placementKey(full(3, 2)))
    expect(placementKey(full(2, 2))).not.toBe(placementKey(full(1, 1)))
  })
})
