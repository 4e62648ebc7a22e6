/**
 * A stored PlacementDecided read without making its candidates or verdicts (PackedPlacement.ts):
 * the event read is the event written, candidates and verdicts and all once asked for; read in
 * place, its verdicts explain and key the decision as the verdicts themselves do; and the packed
 * check never accepts a payload the full read (unpack, then the schema) refuses.
 */
import * as Schema from "effect/Schema"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CURRENT_VERSION, Event, PlacementDecided } from "../../../src/domain/journal/Events.js"
import { upcast } from "../../../src/domain/journal/Upcasting.js"
import { verdictTableOf } from "../../../src/domain/journal/PlacementPacking.js"
import { explain, explainTable } from "../../../src/domain/placement/Placement.js"
import { placementKey, placementKeyOf } from "../../../src/domain/runs/Runs.js"
import { readPackedPlacement } from "../../../src/infra/journal/PackedPlacement.js"
import { envelopeOfRow } from "../../../src/infra/journal/EventRows.js"
import { payloadOf } from "../../../src/infra/journal/SqliteJournal.js"

const VERSION = CURRENT_VERSION.PlacementDecided
const word = fc.constantFrom("a", "b", "lab", "os=linux", "gpu=true", "zone=z1", "")
const words = fc.array(word, { maxLength: 3 })
const candidate = fc.record({
  id: fc.constantFrom("owner", "w1", "w2", "w3"),
  name: word,
  isOwner: fc.boolean(),
  revoked: fc.boolean(),
  advertisementAlive: fc.boolean(),
  scope: words,
  labels: words,
  capabilities: words,
  bins: words,
  artifacts: fc.array(fc.record({ address: word, digest: word }), { maxLength: 2 }),
  slots: fc.record({ capacity: fc.nat(8), used: fc.nat(8) })
})
const exclusion = fc.oneof(
  fc.record({ layer: fc.constant("eligibility" as const), code: word, text: word }),
  fc.record({ layer: fc.constant("capacity" as const), code: word, text: word, requested: fc.nat(4), used: fc.nat(4), capacity: fc.nat(4) })
)
const decision = fc
  .tuple(
    fc.array(candidate, { maxLength: 6 }),
    fc.array(fc.array(exclusion, { maxLength: 2 }), { maxLength: 7 }),
    fc.boolean(),
    fc.constantFrom("placed" as const, "blocked" as const, "waiting" as const)
  )
  .map(([candidates, exclusions, renamed, outcome]) => {
    // A verdict per candidate, in its place (renamed: one verdict names another candidate).
    const verdicts = exclusions.map((xs, i) => ({
      candidate: renamed && i === 0 ? "elsewhere" : (candidates[i]?.id ?? `extra-${i}`),
      name: candidates[i]?.name ?? `extra ${i}`,
      exclusions: xs,
      score: xs.length === 0 ? { locality: i % 2, preference: i } : null
    }))
    return new PlacementDecided({
      runId: "rRun1",
      attempt: outcome === "placed" ? 1 : null,
      activity: { id: "rRun1", address: "a:b@1", digest: "sha256:x", executor: "node", remoteEligible: true, requiredLabels: ["gpu=true"], requiredBins: [], preferredLabels: [], bounds: [], declinedBy: [] },
      candidates,
      quotas: { logical: null, endpoint: { capacity: 2, used: 1 } },
      notes: ["a note"],
      outcome,
      host: outcome === "placed" ? "w1" : null,
      verdicts,
      record: { executionHost: null, inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "tie-break", limits: { timeoutMs: null, bounds: [] } },
      at: 5
    })
  })

const stored = (e: PlacementDecided) => JSON.parse(payloadOf(e)) as Record<string, unknown>
/** The full read: unpack every field, then the schema. */
const fullRead = (payload: Record<string, unknown>) => Schema.decodeUnknownSync(Event)({ ...upcast("PlacementDecided", VERSION, payload), _tag: "PlacementDecided" })

describe("reading a packed PlacementDecided", () => {
  it("gives the event written: its class, its fields in order, its candidates and verdicts when asked for, its stored text", () => {
    fc.assert(
      fc.property(decision, (e) => {
        const read = readPackedPlacement(stored(e))
        expect(read).toBeInstanceOf(PlacementDecided)
        for (const made of ["candidates", "verdicts"]) expect(Object.getOwnPropertyDescriptor(read, made)?.get).toBeDefined()
        // The verdicts are made before the candidates, then each is a plain field.
        expect(read!.verdicts).toEqual(e.verdicts)
        expect(Object.getOwnPropertyDescriptor(read, "verdicts")?.value).toBe(read!.verdicts)
        expect(Object.getOwnPropertyDescriptor(read, "candidates")?.get).toBeDefined()
        expect(Object.keys(read!)).toEqual(Object.keys(e))
        expect(read!.candidates).toEqual(e.candidates)
        expect(read!.candidates).toBe(read!.candidates)
        expect(read).toStrictEqual(e)
        expect(payloadOf(read!)).toBe(payloadOf(e))
      }),
      { numRuns: 300 }
    )
  })

  it("explains and keys a decision from its stored rows as from its verdicts, without making them", () => {
    fc.assert(
      fc.property(decision, fc.nat(8), (e, limit) => {
        const read = readPackedPlacement(stored(e))!
        const table = verdictTableOf(read)
        expect(explainTable(read.outcome, read.host, table, limit)).toBe(explain(e, limit))
        expect(explainTable(read.outcome, read.host, table)).toBe(explain(e))
        expect(placementKeyOf(read.outcome, read.host, table)).toBe(placementKey(e))
        // Read in place: neither the verdicts nor the candidates were made.
        for (const made of ["candidates", "verdicts"]) expect(Object.getOwnPropertyDescriptor(read, made)?.get).toBeDefined()
        // An event in memory is read from its verdicts.
        expect(placementKeyOf(e.outcome, e.host, verdictTableOf(e))).toBe(placementKey(e))
      }),
      { numRuns: 300 }
    )
  })

  it("is what the journal's read path uses for a stored decision", () => {
    fc.assert(
      fc.property(decision, (e) => {
        const read = envelopeOfRow({ sequence: 1, stream: "run-rRun1", stream_version: 2, type: "PlacementDecided", schema_version: VERSION, payload: payloadOf(e), recorded_at: 0 }).event
        expect(Object.getOwnPropertyDescriptor(read, "candidates")?.get).toBeDefined()
        expect(read).toStrictEqual(e)
      }),
      { numRuns: 50 }
    )
  })

  /** Every leaf of a JSON value, by path. */
  const leaves = (value: unknown, path: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> =>
    Array.isArray(value)
      ? value.flatMap((v, i) => leaves(v, [...path, i]))
      : typeof value === "object" && value !== null
        ? Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
        : [path]
  const replaced = (value: unknown, path: ReadonlyArray<string | number>, next: unknown): unknown => {
    if (path.length === 0) return next
    const [head, ...rest] = path
    if (Array.isArray(value)) return value.map((v, i) => (i === head ? replaced(v, rest, next) : v))
    return { ...(value as Record<string, unknown>), [head!]: replaced((value as Record<string, unknown>)[head!], rest, next) }
  }

  it("never accepts what the full read refuses: any leaf of the stored payload changed to another value", () => {
    let refused = 0
    fc.assert(
      fc.property(decision, fc.nat(), fc.oneof(fc.constant(null), fc.constant(-1), fc.constant(99), fc.constant("x"), fc.constant(true), fc.constant([]), fc.constant({}), fc.constant(1.5)), (e, at, next) => {
        const payload = stored(e)
        const paths = leaves(payload)
        const changed = replaced(payload, paths[at % paths.length]!, next) as Record<string, unknown>
        let full: unknown
        try {
          full = fullRead(changed)
        } catch {
          full = undefined
        }
        const read = readPackedPlacement(changed)
        if (full === undefined) {
          refused++
          expect(read).toBeUndefined()
        } else if (read !== undefined) expect(read).toStrictEqual(full)
      }),
      { numRuns: 1000 }
    )
    // Most such changes break the event: the property is about refusals, not only acceptances.
    expect(refused).toBeGreaterThan(300)
  })

  it("refuses broken tables, and the journal's full read then names the problem", () => {
    const e = fc.sample(decision.filter((d) => d.candidates.length > 0 && d.verdicts.length > 0), { numRuns: 1, seed: 7 })[0]!
    const payload = stored(e)
    const broken = [
      { ...payload, lists: [[1]] },
      { ...payload, candidates: (payload["candidates"] as Array<Array<unknown>>).map((row) => row.slice(0, 9)) },
      { ...payload, candidates: (payload["candidates"] as Array<Array<unknown>>).map((row) => [...row.slice(0, 3), 99, ...row.slice(4)]) },
      { ...payload, verdicts: [[[42], null]] },
      { ...payload, runId: 7 }
    ]
    for (const p of broken) {
      expect(readPackedPlacement(p)).toBeUndefined()
      expect(() =>
        envelopeOfRow({ sequence: 1, stream: "run-rRun1", stream_version: 2, type: "PlacementDecided", schema_version: VERSION, payload: JSON.stringify(p), recorded_at: 0 })
      ).toThrow()
    }
  })
})
