/**
 * A checkpoint's snapshot (app/journal/Replay.ts, `snapshotOf`): the canonical JSON of the
 * projections and its digest, made in pieces that give the event loop turns in between.
 */
import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { CURRENT_VERSION, type Envelope, type RunJob } from "../../../src/domain/journal/Events.js"
import { canonicalState, fold, initialState, type OwnerState } from "../../../src/domain/journal/OwnerState.js"
import { decideClaim, decideReport, decideSubmitAndPlace, type RunDecision, type RunRejection } from "../../../src/domain/runs/Decide.js"
import type { Candidate } from "../../../src/domain/placement/Placement.js"
import { digestOfText, snapshotOf } from "../../../src/app/journal/Replay.js"
import * as NodeHashing from "../../../src/infra/journal/NodeHashing.js"

const job: RunJob = {
  address: "lab:noop@1.0.0",
  bag: "lab",
  job: "noop",
  digest: `sha256:${"b".repeat(64)}`,
  executor: "node",
  remoteEligible: true,
  ownerOnly: [],
  requiredLabels: ["pool=lab"],
  requiredBins: [],
  bounds: [],
  timeoutMs: null
}
const host = (i: number): Candidate => ({
  id: `w${i}`,
  name: `box-${i}`,
  isOwner: false,
  revoked: false,
  advertisementAlive: true,
  scope: [],
  labels: ["os=linux", "pool=lab"],
  capabilities: ["node"],
  bins: [],
  artifacts: [{ address: job.address, digest: job.digest }],
  slots: { capacity: 4, used: 0 }
})

/** The projections after `jobs` runs submitted, placed, claimed and reported, as the owner folds them. */
const stateWithRuns = (jobs: number): OwnerState => {
  const fleet = Array.from({ length: 10 }, (_, i) => host(i))
  let state = initialState
  let sequence = 0
  const apply = (d: RunDecision | RunRejection, now: number) => {
    if (d._tag === "Rejected") throw new Error(d.message)
    const envelopes: Array<Envelope> = d.events.map((event, i) => ({ sequence: ++sequence, stream: d.stream, streamVersion: d.expectedVersion + i + 1, type: event._tag, schemaVersion: CURRENT_VERSION[event._tag], recordedAt: now, event }))
    state = fold(state, envelopes)
    return d.events
  }
  for (let n = 0; n < jobs; n++) {
    const now = 1_000_000 + n
    const runId = `r${n}`
    const events = apply(decideSubmitAndPlace({ runId, job, input: { n }, preferredLabels: [], actor: "test", now, candidates: fleet, quotas: { logical: null, endpoint: null }, notes: [] }, state.runs), now)
    const placed = events.find((e) => e._tag === "PlacementDecided")
    const on = placed?._tag === "PlacementDecided" ? placed.host : null
    if (on === null) throw new Error(`run ${runId} was not placed`)
    apply(decideClaim({ workerId: on, scope: [], fence: 1, runId, attempt: 1, now }, state.runs), now)
    apply(decideReport({ host: on, scope: [], runId, attempt: 1, ok: true, result: { n }, error: null, exitCode: 0, now }, state.runs), now)
  }
  return state
}

describe("a checkpoint's snapshot", () => {
  const state = stateWithRuns(1_500)

  it("is the canonical JSON of the state, with the digest replay computes from it", async () => {
    const { text, digest } = await Effect.runPromise(snapshotOf(state).pipe(Effect.provide(NodeHashing.layer)))
    const expected = JSON.stringify(canonicalState(state))
    expect(text).toBe(expected)
    expect(digest).toBe(digestOfText({ sha256Hex: (t) => createHash("sha256").update(t).digest("hex") }, expected))
  })

  it("gives the event loop turns while it is made, instead of holding the thread for the whole text", async () => {
    let turns = 0
    let done = false
    const tick = () => {
      turns++
      if (!done) setImmediate(tick)
    }
    setImmediate(tick)
    const { text } = await Effect.runPromise(snapshotOf(state).pipe(Effect.provide(NodeHashing.layer)))
    done = true
    // 256 KiB between turns: a text of about 1.5 MiB leaves room for several.
    expect(text.length).toBeGreaterThan(1_000_000)
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / (256 * 1024)) - 1)
  })
})
