/**
 * The journal's mark (src/domain/journal/JournalMark.ts): what it keeps of a registry, when a
 * journal went back from it (shorter, or another at the mark's sequence), and what is closed
 * again then: workers revoked or given a new credential since, invites spent since; nothing else.
 */
import * as HashMap from "effect/HashMap"
import { describe, expect, it } from "vitest"
import { markOf, sameGuard, toReclose, wentBack } from "../../../src/domain/journal/JournalMark.js"
import type { InviteRecord, Registry, WorkerRecord } from "../../../src/domain/workers/Registry.js"

const worker = (id: string, hash: string, revoked = false) => ({ id, name: id, credentials: [{ hash }], revokedAt: revoked ? 1 : null }) as unknown as WorkerRecord
const invite = (id: string, state: "open" | "redeemed" | "revoked") =>
  ({ id, redeemedBy: state === "redeemed" ? "w" : null, ...(state === "revoked" ? { revokedAt: 1 } : {}) }) as unknown as InviteRecord
const registry = (workers: ReadonlyArray<WorkerRecord>, invites: ReadonlyArray<InviteRecord>): Registry => ({
  workers: HashMap.fromIterable(workers.map((w) => [w.id, w] as const)),
  invites: HashMap.fromIterable(invites.map((i) => [i.id, i] as const))
})
const anchor = { stream: "worker-wB", streamVersion: 3, type: "WorkerRevoked" }

describe("the journal's mark", () => {
  it("keeps the revoked workers, each other one's current credential (16 hex digits of its hash), and the invites spent", () => {
    const r = registry([worker("wB", "b".repeat(64), true), worker("wA", "a".repeat(64))], [invite("i1", "open"), invite("i2", "redeemed"), invite("i3", "revoked")])
    expect(markOf(9, anchor, r)).toEqual({ sequence: 9, anchor, revoked: ["wB"], credentials: { wA: "a".repeat(16) }, spent: ["i2", "i3"] })
    expect(sameGuard(markOf(9, anchor, r), markOf(12, null, r))).toBe(true)
    expect(sameGuard(markOf(9, anchor, r), markOf(9, anchor, registry([worker("wB", "b".repeat(64), true), worker("wA", "c".repeat(64))], [])))).toBe(false)
  })

  it("says a journal went back when it is shorter, or holds another event at the mark's sequence; not when it went on", () => {
    const mark = markOf(9, anchor, registry([], []))
    expect(wentBack(mark, 7, null)).toEqual({ kind: "shorter", missing: 2 })
    expect(wentBack(mark, 9, anchor)).toBeUndefined()
    expect(wentBack(mark, 40, anchor)).toBeUndefined()
    const other = { stream: "run-r1", streamVersion: 1, type: "RunSubmitted" }
    expect(wentBack(mark, 12, other)).toEqual({ kind: "another", at: other })
    // A mark of an empty journal (a worker only) has no event to compare.
    expect(wentBack(markOf(0, null, registry([], [])), 5, other)).toBeUndefined()
  })

  it("closes again what was closed after the older journal: revoked, credential replaced, invite spent; not what it has closed, nor what the mark does not know", () => {
    const mark = markOf(20, anchor, registry([worker("wA", "a".repeat(64), true), worker("wB", "new".padEnd(64, "0")), worker("wC", "c".repeat(64)), worker("wD", "d".repeat(64), true)], [invite("i1", "redeemed"), invite("i2", "revoked"), invite("i3", "open")]))
    const older = registry(
      // wA revoked since; wB rotated since; wC as it was; wD revoked already then; wE unknown to the mark (joined after it? no: an older journal cannot; left alone).
      [worker("wA", "a".repeat(64)), worker("wB", "old".padEnd(64, "0")), worker("wC", "c".repeat(64)), worker("wD", "d".repeat(64), true), worker("wE", "e".repeat(64))],
      [invite("i1", "open"), invite("i2", "revoked"), invite("i3", "open")]
    )
    expect(toReclose(mark, older)).toEqual({
      workers: [
        { id: "wA", why: "revoked" },
        { id: "wB", why: "credential replaced" }
      ],
      invites: ["i1"]
    })
    expect(toReclose(mark, registry([], []))).toEqual({ workers: [], invites: [] })
  })
})
