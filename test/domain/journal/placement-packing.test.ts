/**
 * PlacementDecided's packed layout (v2): whatever `place` decides over whatever fleet, the
 * stored payload reads back as the same fields; it is much smaller for a fleet whose workers
 * advertise alike; a malformed one is refused, naming what is wrong.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { packPlacement, unpackPlacement } from "../../../src/domain/journal/PlacementPacking.js"
import { storedPayload, upcast } from "../../../src/domain/journal/Upcasting.js"
import { place, type Activity, type Candidate, type Quotas } from "../../../src/domain/placement/Placement.js"

const JOB = "bench:noop@1.0.0"
const DIGEST = `sha256:${"ab".repeat(32)}`
const activity: Activity = {
  id: "r1",
  address: JOB,
  digest: DIGEST,
  executor: "node",
  remoteEligible: true,
  requiredLabels: ["pool=bench"],
  requiredBins: [],
  preferredLabels: [],
  bounds: [],
  declinedBy: []
}
const quotas: Quotas = { logical: null, endpoint: null }

/** The payload as the journal stores it before packing: the event's fields, without the tag. */
const payloadOf = (candidates: ReadonlyArray<Candidate>, a: Activity = activity, q: Quotas = quotas) => {
  const o = place(a, candidates, q)
  return {
    runId: a.id,
    attempt: o.outcome === "placed" ? 1 : null,
    activity: a,
    candidates,
    quotas: q,
    notes: ["logical quota: none applies"],
    outcome: o.outcome,
    host: o.outcome === "placed" ? o.host : null,
    verdicts: o.verdicts,
    record: { executionHost: null, inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "x", limits: { timeoutMs: null, bounds: [] } },
    at: 1_700_000_000_000
  }
}
/** Through JSON both ways, as the journal writes and reads it. */
const roundTrip = (payload: Record<string, unknown>) => unpackPlacement(JSON.parse(JSON.stringify(packPlacement(payload))) as Record<string, unknown>)

const candidateArb: fc.Arbitrary<Candidate> = fc.record(
  {
    id: fc.stringMatching(/^w[0-9a-z]{3}$/),
    name: fc.constantFrom("lab-1", "lab-2", "box"),
    isOwner: fc.boolean(),
    revoked: fc.boolean(),
    advertisementAlive: fc.boolean(),
    // Present or absent: a decision recorded before the field has none.
    silence: fc.constantFrom("ended" as const, "unheard" as const, "never" as const, "hello" as const),
    scope: fc.subarray([JOB, "other:job@1"]),
    labels: fc.subarray(["pool=bench", "os=linux", "gpu=true"]),
    capabilities: fc.subarray(["node", "process"]),
    bins: fc.subarray(["git"]),
    artifacts: fc.subarray([{ address: JOB, digest: DIGEST }, { address: JOB, digest: "sha256:other" }], { maxLength: 1 }),
    slots: fc.record({ capacity: fc.integer({ min: 0, max: 4 }), used: fc.integer({ min: 0, max: 4 }) })
  },
  { requiredKeys: ["id", "name", "isOwner", "revoked", "advertisementAlive", "scope", "labels", "capabilities", "bins", "artifacts", "slots"] }
)

describe("PlacementDecided, packed", () => {
  it("reads back as the same fields, for any fleet and decision (lists and records shared or not)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(candidateArb, { selector: (c) => c.id, maxLength: 12 }),
        fc.subarray(["w000", "w001"]),
        fc.boolean(),
        (cs, declinedBy, full) => {
          const payload = payloadOf(cs, { ...activity, declinedBy }, { logical: full ? { capacity: 1, used: 1 } : null, endpoint: null })
          expect(roundTrip(payload)).toEqual(payload)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("keeps a verdict that is not about the candidate in its place (not what place makes, but not lost either)", () => {
    const cs: Array<Candidate> = [
      { id: "w1", name: "a", isOwner: false, revoked: false, advertisementAlive: true, scope: [], labels: [], capabilities: ["node"], bins: [], artifacts: [], slots: { capacity: 1, used: 0 } },
      { id: "w2", name: "b", isOwner: false, revoked: true, advertisementAlive: true, scope: [], labels: [], capabilities: ["node"], bins: [], artifacts: [], slots: { capacity: 1, used: 0 } }
    ]
    const payload = payloadOf(cs)
    const swapped = { ...payload, verdicts: [...payload.verdicts].reverse() }
    expect(roundTrip(swapped)).toEqual(swapped)
  })

  it("stores a fleet that advertises alike in well under half the bytes", () => {
    const cs: Array<Candidate> = Array.from({ length: 100 }, (_, i) => ({
      id: `w${String(i).padStart(10, "0")}`,
      name: `bench-worker-${i}`,
      isOwner: false,
      revoked: false,
      advertisementAlive: true,
      scope: [],
      // New lists per worker, as each worker's advertisement brings its own: shared by content.
      labels: ["os=linux", "arch=x64", "pool=bench"],
      capabilities: ["node"],
      bins: [],
      artifacts: [{ address: JOB, digest: DIGEST }],
      slots: { capacity: 4, used: i % 4 }
    }))
    const payload = payloadOf(cs)
    const full = JSON.stringify(payload).length
    const packed = JSON.stringify(storedPayload("PlacementDecided", payload)).length
    expect(packed / full).toBeLessThan(0.4)
  })

  it("reads a stored version 1 (the fields as they are) and a version 2 (packed) alike", () => {
    const payload = payloadOf([
      { id: "w1", name: "a", isOwner: false, revoked: false, advertisementAlive: true, scope: [], labels: ["pool=bench"], capabilities: ["node"], bins: [], artifacts: [{ address: JOB, digest: DIGEST }], slots: { capacity: 1, used: 0 } }
    ])
    const v1 = JSON.parse(JSON.stringify(payload)) as Record<string, unknown>
    const v2 = JSON.parse(JSON.stringify(storedPayload("PlacementDecided", payload))) as Record<string, unknown>
    expect(v2).toHaveProperty("lists")
    expect(upcast("PlacementDecided", 1, v1)).toEqual(payload)
    expect(upcast("PlacementDecided", 2, v2)).toEqual(payload)
  })

  it("packs each list once per decision, the same way whatever was packed before, across the memo's fresh starts", () => {
    // 80 decisions over 1,000 workers with lists of their own: 80,000 distinct contents, past the
    // memo's 65,536, so it starts again on the way. Each decision is packed as alone.
    const fleet = (d: number): Array<Candidate> =>
      Array.from({ length: 1_000 }, (_, i) => ({
        id: `w${i}`,
        name: `box-${i}`,
        isOwner: false,
        revoked: false,
        advertisementAlive: true,
        scope: [],
        labels: ["pool=bench", `host=${d}-${i}`],
        capabilities: ["node"],
        bins: [],
        artifacts: [{ address: JOB, digest: DIGEST }],
        slots: { capacity: 4, used: i % 5 === 0 ? 4 : 0 }
      }))
    for (let d = 0; d < 80; d++) {
      const payload = payloadOf(fleet(d))
      const packed = packPlacement(payload) as { lists: ReadonlyArray<ReadonlyArray<string>> }
      // [] (scope and bins), ["node"], and one label list per worker.
      expect(packed.lists.length).toBe(1_002)
      expect(roundTrip(payload)).toEqual(payload)
    }
    const again = payloadOf(fleet(0))
    expect(JSON.stringify(packPlacement(again))).toBe(JSON.stringify(packPlacement(payloadOf(fleet(0)))))
  })

  it("refuses a malformed packed payload, naming what is wrong", () => {
    const packed = packPlacement(payloadOf([])) as Record<string, unknown>
    expect(() => unpackPlacement({ ...packed, lists: "no" })).toThrow(/lists, artifacts, exclusions, candidates and verdicts must be arrays/)
    expect(() => unpackPlacement({ ...packed, candidates: [["w1", "a", 0, 7, 0, 0, 0, 0, 1, 0]] })).toThrow(/scope index 7 is out of range/)
    expect(() => unpackPlacement({ ...packed, candidates: [["w1"]] })).toThrow(/candidate 0 is not a row of 10/)
  })
})
