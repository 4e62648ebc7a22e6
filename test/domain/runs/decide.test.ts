/**
 * Run deciders, given / when / then: given past decisions (appended against their stream's
 * version, as the journal would), when a command, then these events, this rejection, or
 * nothing. Then the fold: random command sequences through the deciders keep every host's
 * reserved slots equal to its attempts holding one, and `fold` equal to `evolve` step by step.
 * Then the audit: every recorded placement is reproduced, a tampered one is named; and a run's
 * history as svc journal history tells it.
 */
import fc from "fast-check"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { CURRENT_VERSION, Event, type Envelope, type PlacementDecided, type RunJob } from "../../../src/domain/journal/Events.js"
import { canonicalState, evolve, fold, initialState, initialStateRetaining, type OwnerState } from "../../../src/domain/journal/OwnerState.js"
import { stateFromCanonical, type CanonicalState } from "../../../src/domain/journal/Snapshot.js"
import { PLACEMENT_RULES, type Candidate } from "../../../src/domain/placement/Placement.js"
import { auditPlacement } from "../../../src/domain/runs/AuditPlacement.js"
import * as D from "../../../src/domain/runs/Decide.js"
import { historyOf } from "../../../src/domain/runs/History.js"
import { ACTIVE, attemptId, isSettled, lastAttempt, TERMINAL, type RunRecord } from "../../../src/domain/runs/Runs.js"

// ---- Given ---------------------------------------------------------------------------------

const job = (name: string, over: Partial<RunJob> = {}): RunJob => ({
  address: `demo:${name}@1.0.0`,
  bag: "demo",
  job: name,
  digest: "sha256:d1",
  executor: "node",
  remoteEligible: true,
  ownerOnly: [],
  requiredLabels: [],
  requiredBins: [],
  bounds: [],
  timeoutMs: null,
  ...over
})
/** Runs anywhere: the owner keeps it (locality). */
const ECHO = job("echo", { timeoutMs: 60_000 })
/** Needs a label only workers have. */
const GPU = job("gpu", { requiredLabels: ["gpu=true"] })
/** Not remote-eligible: it stays on the owner. */
const LOCAL = job("local", { remoteEligible: false, ownerOnly: ["it reads files"] })

const ownerHost = (over: Partial<Candidate> = {}): Candidate => ({
  id: "owner",
  name: "owner",
  isOwner: true,
  revoked: false,
  advertisementAlive: true,
  scope: [],
  labels: ["os=linux"],
  capabilities: ["node", "process"],
  bins: [],
  artifacts: [],
  slots: { capacity: 2, used: 0 },
  ...over
})
const worker = (id: string, over: Partial<Candidate> = {}): Candidate => ({
  id,
  name: `box-${id}`,
  isOwner: false,
  revoked: false,
  advertisementAlive: true,
  scope: [],
  labels: ["gpu=true", "os=linux"],
  capabilities: ["node"],
  bins: [],
  artifacts: [ECHO, GPU, LOCAL].map((j) => ({ address: j.address, digest: j.digest })),
  slots: { capacity: 2, used: 0 },
  ...over
})

type Decision = D.RunDecision | D.RunRejection
type Step = (s: OwnerState) => Decision

/** Appends a decision as the journal would: against its stream's version, numbered in sequence. */
const append = (s: OwnerState, d: Decision): { readonly state: OwnerState; readonly envelopes: ReadonlyArray<Envelope> } => {
  if (d._tag === "Rejected") throw new Error(`rejected: ${d.code}: ${d.message}`)
  const runId = d.stream.slice("run-".length)
  const current = Option.match(HashMap.get(s.runs.runs, runId), { onNone: () => 0, onSome: (r) => r.streamVersion })
  if (d.expectedVersion !== current) throw new Error(`stream ${d.stream} is at ${current}, the decision expected ${d.expectedVersion}`)
  const envelopes = d.events.map(
    (event, i): Envelope => ({
      sequence: s.sequence + i + 1,
      stream: d.stream,
      streamVersion: current + i + 1,
      type: event._tag,
      schemaVersion: CURRENT_VERSION[event._tag],
      recordedAt: 0,
      event
    })
  )
  return { state: envelopes.reduce(evolve, s), envelopes }
}

const given = (...steps: ReadonlyArray<Step>): OwnerState => steps.reduce((s, step) => append(s, step(s)).state, initialState)
const after = (s: OwnerState, step: Step): OwnerState => append(s, step(s)).state

const NO_QUOTAS = { logical: null, endpoint: null }

const submit =
  (runId: string, j: RunJob = ECHO, prefer: ReadonlyArray<string> = [], now = 1_000): Step =>
  (s) =>
    D.decideSubmit({ runId, job: j, input: { text: "hi" }, preferredLabels: prefer, actor: "operator", now }, s.runs)
const place =
  (runId: string, candidates: ReadonlyArray<Candidate>, now = 2_000): Step =>
  (s) =>
    D.decidePlacement({ runId, candidates, quotas: NO_QUOTAS, notes: ["a note"], now }, s.runs)
const claim =
  (runId: string, n: number, workerId: string, fence = 7, scope: ReadonlyArray<string> = [], now = 3_000): Step =>
  (s) =>
    D.decideClaim({ workerId, scope, fence, runId, attempt: n, now }, s.runs)
const decline =
  (runId: string, n: number, workerId: string, scope: ReadonlyArray<string> = [], now = 3_500): Step =>
  (s) =>
    D.decideDecline({ workerId, scope, runId, attempt: n, reason: "does not hold sha256:d1", now }, s.runs)
const report =
  (runId: string, n: number, host: string, ok = true, scope: ReadonlyArray<string> = [], now = 4_000): Step =>
  (s) =>
    D.decideReport({ host, scope, runId, attempt: n, ok, result: ok ? { length: 2 } : { ignored: true }, error: ok ? null : "exit 3: the disk is full", exitCode: ok ? 0 : 3, now }, s.runs)
const supersede =
  (runId: string, n: number, now = 5_000): Step =>
  (s) =>
    D.decideSupersede({ runId, attempt: n, reason: "its worker's advertisement lapsed", now }, s.runs)
const cease =
  (runId: string, n: number, now = 6_000): Step =>
  (s) =>
    D.decideCease({ runId, attempt: n, reason: "its worker no longer runs it", now }, s.runs)
const stop =
  (runId: string, now = 7_000): Step =>
  (s) =>
    D.decideStop({ runId, actor: "operator", now }, s.runs)

const runOf = (s: OwnerState, id: string): RunRecord => Option.getOrThrow(HashMap.get(s.runs.runs, id))
const attemptOf = (s: OwnerState, id: string, n: number) => runOf(s, id).attempts.find((a) => a.n === n)!
const reserved = (s: OwnerState, host: string) => Option.match(HashMap.get(s.ledger.physical, host), { onNone: () => 0, onSome: (p) => p.reserved })
const heldBy = (s: OwnerState, host: string) => Option.getOrElse(HashMap.get(s.runs.held, host), () => [] as ReadonlyArray<string>)

const events = (d: Decision) => {
  if (d._tag === "Rejected") throw new Error(`rejected: ${d.code}: ${d.message}`)
  return d.events
}
const tags = (d: Decision) => events(d).map((e) => e._tag)
const rejection = (d: Decision) => (d._tag === "Rejected" ? d.code : `decided ${d.events.length} events`)
const message = (d: Decision) => (d._tag === "Rejected" ? d.message : "")

// Past decisions shared by the tables below.
const onOwner = [submit("r1"), place("r1", [ownerHost(), worker("w1")])] as const
const onWorker = [submit("r1", GPU), place("r1", [ownerHost(), worker("w1")])] as const
const claimed = [...onWorker, claim("r1", 1, "w1")] as const

// ---- Submit --------------------------------------------------------------------------------

describe("decideSubmit", () => {
  it("a new run is submitted on its own stream, from version 0, pending and open", () => {
    const d = submit("r1", GPU, ["zone=a"])(initialState)
    expect(d).toMatchObject({ _tag: "Decided", stream: "run-r1", expectedVersion: 0 })
    expect(events(d)).toEqual([expect.objectContaining({ _tag: "RunSubmitted", runId: "r1", job: GPU, input: { text: "hi" }, preferredLabels: ["zone=a"], actor: "operator", at: 1_000 })])
    const s = given(submit("r1", GPU))
    expect(runOf(s, "r1")).toMatchObject({ state: "pending", attempts: [], placement: null, submittedSequence: 1, streamVersion: 1 })
    expect(HashMap.has(s.runs.open, "r1")).toBe(true)
  })

  it("an id that exists is refused", () => {
    const d = submit("r1")(given(submit("r1")))
    expect(rejection(d)).toBe("run-exists")
    expect(message(d)).toBe("run r1 exists already")
  })
})

// ---- Placement -----------------------------------------------------------------------------

describe("decidePlacement", () => {
  it("an unknown run is refused", () => {
    expect(rejection(place("nope", [ownerHost()])(initialState))).toBe("unknown-run")
  })

  it.each([
    ["assigned", onWorker],
    ["running", onOwner],
    ["succeeded", [...onOwner, report("r1", 1, "owner")]],
    ["failed", [...onOwner, report("r1", 1, "owner", false)]],
    ["stopped", [submit("r1"), stop("r1")]]
  ] as const)("a run that is not pending (%s) is not placed: nothing is recorded", (state, steps) => {
    const s = given(...steps)
    expect(runOf(s, "r1").state).toBe(state)
    const d = place("r1", [ownerHost(), worker("w1"), worker("w2")])(s)
    expect(d).toEqual({ _tag: "Decided", stream: "run-r1", expectedVersion: runOf(s, "r1").streamVersion, events: [] })
  })

  it("placed on the owner: the decision with every input, and the attempt starts at once", () => {
    const s = given(submit("r1"))
    const candidates = [ownerHost(), worker("w1")]
    const d = place("r1", candidates, 2_000)(s)
    expect(d).toMatchObject({ stream: "run-r1", expectedVersion: 1 })
    expect(tags(d)).toEqual(["PlacementDecided", "AttemptStarted"])
    const [decided, started] = events(d)
    expect(decided).toMatchObject({
      runId: "r1",
      attempt: 1,
      outcome: "placed",
      host: "owner",
      candidates,
      quotas: NO_QUOTAS,
      notes: ["a note"],
      activity: { id: "r1", address: ECHO.address, digest: "sha256:d1", declinedBy: [] },
      record: {
        executionHost: "owner",
        inferenceEndpoint: null,
        requestedModel: null,
        resolvedModel: null,
        selectionProvenance: "locality: the owner keeps what it can run",
        limits: { timeoutMs: 60_000, bounds: [] }
      },
      at: 2_000
    })
    expect(started).toMatchObject({ _tag: "AttemptStarted", runId: "r1", attempt: 1, host: "owner", fence: null, at: 2_000 })
    const next = after(s, place("r1", candidates, 2_000))
    expect(runOf(next, "r1")).toMatchObject({ state: "running", placements: 1, placement: { outcome: "placed", host: "owner", explanation: "placed on owner" } })
    expect(attemptOf(next, "r1", 1)).toMatchObject({ host: "owner", state: "running", holdsSlot: true, assignedAt: 2_000, startedAt: 2_000, fence: null })
    expect([reserved(next, "owner"), heldBy(next, "owner")]).toEqual([1, ["r1.1"]])
  })

  it("a decision placing nothing is not made while a worker that may take the run said hello a moment ago, its advertisement on its way (a worker's restart journaled two decisions per waiting run that changed nothing); a run last placed is decided", () => {
    const hello = worker("w1", { advertisementAlive: false, silence: "hello" })
    const at = (s: OwnerState, recent: boolean) =>
      D.decidePlacement({ runId: "r1", candidates: [ownerHost(), hello], quotas: NO_QUOTAS, notes: [], now: 3_000, helloRecent: () => recent }, s.runs)
    // Blocked before (its worker stopped): not decided again for the moment of its hello.
    const blocked = given(submit("r1", GPU), place("r1", [ownerHost(), worker("w1", { advertisementAlive: false, silence: "ended" })]))
    expect(runOf(blocked, "r1").placement).toMatchObject({ outcome: "blocked" })
    expect(events(at(blocked, true))).toEqual([])
    // Its hello long past (no advertisement came): decided, saying so.
    expect(events(at(blocked, false))[0]).toMatchObject({
      outcome: "blocked",
      verdicts: [{ candidate: "owner" }, { candidate: "w1", exclusions: [{ code: "advertisement-expired", text: "it started a new session (said hello) and has not advertised in it yet: what it offers now is not known" }] }]
    })
    // Never decided yet (just submitted): not decided for that moment either.
    expect(events(at(given(submit("r1", GPU)), true))).toEqual([])
    // Last placed (pending again: its attempt ceased with the restart): decided, not left saying it was placed.
    const placedBefore = given(submit("r1", GPU), place("r1", [ownerHost(), worker("w1")]), supersede("r1", 1))
    expect(runOf(placedBefore, "r1")).toMatchObject({ state: "pending", placement: { outcome: "placed" } })
    expect(events(at(placedBefore, true))[0]).toMatchObject({ outcome: "blocked" })
    // Another worker has room: placed there at once.
    expect(events(D.decidePlacement({ runId: "r1", candidates: [ownerHost(), hello, worker("w2")], quotas: NO_QUOTAS, notes: [], now: 3_000, helloRecent: () => true }, blocked.runs))[0]).toMatchObject({ outcome: "placed", host: "w2" })
  })

  it("right after the owner's start, a decision placing nothing is not made while a worker not heard from since then may take the run (operator audit: runs shown blocked for the seconds their workers took to call back)", () => {
    const s = given(submit("r1", GPU))
    const unheard = worker("w1", { advertisementAlive: false, silence: "unheard" })
    const at = (now: number, candidates: ReadonlyArray<Candidate>, restartGraceUntil: number | null = 15_000) =>
      D.decidePlacement({ runId: "r1", candidates, quotas: NO_QUOTAS, notes: [], now, ...(restartGraceUntil === null ? {} : { restartGraceUntil }) }, s.runs)
    // Within the grace: nothing recorded, and the decision says it waits for workers.
    expect(at(5_000, [ownerHost(), unheard])).toEqual({ _tag: "Decided", stream: "run-r1", expectedVersion: 1, events: [], awaitingWorkers: true })
    // Eligible but full elsewhere (it would be "waiting"): the same.
    expect(at(5_000, [ownerHost(), unheard, worker("w2", { slots: { capacity: 2, used: 2 } })])).toMatchObject({ events: [], awaitingWorkers: true })
    // Called back with its hello, its advertisement on its way: the same.
    expect(at(5_000, [ownerHost(), worker("w1", { advertisementAlive: false, silence: "hello" })])).toMatchObject({ events: [], awaitingWorkers: true })
    // Once the grace is over, or without one (an audit re-running the decision): blocked, saying why.
    for (const d of [at(15_000, [ownerHost(), unheard]), at(5_000, [ownerHost(), unheard], null)]) {
      expect(d).not.toHaveProperty("awaitingWorkers")
      expect(events(d)[0]).toMatchObject({
        outcome: "blocked",
        verdicts: [{ candidate: "owner" }, { candidate: "w1", exclusions: [{ code: "advertisement-expired", text: "no advertisement from it since the owner started" }] }]
      })
    }
    // A place for it now: placed at once, the unheard worker excluded.
    expect(events(at(5_000, [ownerHost(), unheard, worker("w2")]))[0]).toMatchObject({ outcome: "placed", host: "w2" })
    // Not waited for: an unheard worker its last advertisement excludes anyway, a revoked one, one that lapsed or said bye.
    for (const other of [
      worker("w1", { advertisementAlive: false, silence: "unheard", labels: ["os=linux"] }),
      worker("w1", { advertisementAlive: false, silence: "unheard", revoked: true }),
      worker("w1", { advertisementAlive: false }),
      worker("w1", { advertisementAlive: false, silence: "ended" }),
      worker("w1", { advertisementAlive: false, silence: "never" })
    ]) {
      expect(events(at(5_000, [ownerHost(), other]))[0]).toMatchObject({ outcome: "blocked" })
    }
    // Submitted and placed in one commit: submitted alone, the placement left for the worker.
    const both = D.decideSubmitAndPlace(
      { runId: "r2", job: GPU, input: { text: "hi" }, preferredLabels: [], actor: "operator", now: 5_000, candidates: [ownerHost(), unheard], quotas: NO_QUOTAS, notes: [], restartGraceUntil: 15_000 },
      s.runs
    )
    expect(both).toMatchObject({ awaitingWorkers: true })
    expect(tags(both)).toEqual(["RunSubmitted"])
  })

  it("placed on a worker: the decision only, assigning the next attempt (n + 1)", () => {
    // Attempt 1 went to w1, which declined; attempt 2 goes to w2 (w1 is not offered it again).
    const s = given(...onWorker, decline("r1", 1, "w1"))
    expect(runOf(s, "r1")).toMatchObject({ state: "pending", declinedBy: ["w1"] })
    const d = place("r1", [ownerHost(), worker("w1"), worker("w2")], 9_000)(s)
    expect(tags(d)).toEqual(["PlacementDecided"])
    expect(events(d)[0]).toMatchObject({
      attempt: 2,
      host: "w2",
      outcome: "placed",
      activity: { declinedBy: ["w1"], requiredLabels: ["gpu=true"] },
      verdicts: [
        { candidate: "owner", exclusions: [{ layer: "eligibility", code: "missing-label", text: "lacks label gpu=true" }], score: null },
        { candidate: "w1", exclusions: [{ layer: "eligibility", code: "declined" }], score: null },
        { candidate: "w2", exclusions: [], score: { locality: 0, preference: 0 } }
      ],
      record: { executionHost: "w2", selectionProvenance: "the only eligible candidate with room" }
    })
    const next = after(s, place("r1", [ownerHost(), worker("w1"), worker("w2")], 9_000))
    expect(runOf(next, "r1").state).toBe("assigned")
    expect(attemptOf(next, "r1", 2)).toMatchObject({ host: "w2", state: "assigned", holdsSlot: true, assignedAt: 9_000, startedAt: null })
    expect([reserved(next, "w1"), reserved(next, "w2")]).toEqual([0, 1])
  })

  it("a decline stands until the worker is heard advertising after it, at most 3 declines: then it is offered the run again (runs audit: blocked for good after a bag was reinstalled)", () => {
    // w1 declined at 3,500 (its bag was being reinstalled); it is the only worker with the label.
    const s = given(...onWorker, decline("r1", 1, "w1"))
    const candidates = [ownerHost(), worker("w1")]
    const placeSeeing = (heardAt: (host: string) => number | undefined, now = 9_000) => (st: typeof s) =>
      D.decidePlacement({ runId: "r1", candidates, quotas: NO_QUOTAS, notes: [], now, heardAt }, st.runs)
    // Heard before the decline (or at its moment), or not known: the decline stands, and says until when.
    for (const seen of [() => 3_000, () => 3_500, () => undefined]) {
      expect(events(placeSeeing(seen)(s))[0]).toMatchObject({
        outcome: "blocked",
        activity: { declinedBy: ["w1"], rules: PLACEMENT_RULES },
        verdicts: [
          expect.anything(),
          { candidate: "w1", exclusions: [{ code: "declined", text: "it declined an earlier attempt of this activity, and has not advertised since (or declined it 3 times)" }] }
        ]
      })
    }
    // Heard advertising since (the bag back, a refresh of the same content alike): placed there again, the decline not listed.
    const again = events(placeSeeing((host) => (host === "w1" ? 4_000 : undefined))(s))[0]
    expect(again).toMatchObject({ outcome: "placed", host: "w1", attempt: 2, activity: { declinedBy: [] } })
    // The decline that counts is its latest: declined again after that advertisement, it stands again.
    const twice = given(...onWorker, decline("r1", 1, "w1"), placeSeeing(() => 4_000), claim("r1", 2, "w1", 7, [], 9_500), decline("r1", 2, "w1", [], 10_000))
    expect(runOf(twice, "r1").declinedBy).toEqual(["w1"])
    expect(D.standingDeclines(runOf(twice, "r1"), () => 4_000)).toEqual(["w1"])
    expect(D.standingDeclines(runOf(twice, "r1"), () => 10_001)).toEqual([])
    // Nothing lifted: the very same list (the feasibility cache compares by identity).
    expect(D.standingDeclines(runOf(twice, "r1"), () => 1)).toBe(runOf(twice, "r1").declinedBy)
    // A third decline of the same run: it stands for good, however often the worker advertises (no endless offer and decline).
    const thrice = given(...onWorker, decline("r1", 1, "w1"), placeSeeing(() => 4_000), claim("r1", 2, "w1", 7, [], 9_500), decline("r1", 2, "w1", [], 10_000), placeSeeing(() => 10_500, 11_000), claim("r1", 3, "w1", 7, [], 11_500), decline("r1", 3, "w1", [], 12_000))
    expect(runOf(thrice, "r1").attempts.filter((a) => a.state === "declined")).toHaveLength(D.MAX_DECLINES)
    expect(D.standingDeclines(runOf(thrice, "r1"), () => 99_000)).toEqual(["w1"])
  })

  it("runs of one job, preferences and standing declines are one kind for placement; another job, digest, preference or a decline that stands makes another", () => {
    const s = given(
      submit("r1", GPU),
      submit("r2", GPU),
      submit("r3", GPU, ["zone=b"]),
      submit("r4", ECHO),
      submit("r5", { ...GPU, digest: "sha256:other" }),
      submit("r6", GPU),
      place("r6", [ownerHost(), worker("w1")]),
      decline("r6", 1, "w1")
    )
    const kind = (id: string, heardAt?: (host: string) => number | undefined) => D.placementKind(runOf(s, id), heardAt)
    expect(kind("r1")).toBe(kind("r2"))
    for (const other of ["r3", "r4", "r5", "r6"]) expect(kind(other)).not.toBe(kind("r1"))
    // The decline lifted (w1 heard advertising since): r6 is r1's kind again.
    expect(kind("r6", () => 4_000)).toBe(kind("r1"))
    expect(kind("r6", () => 3_000)).toBe(kind("r6"))
  })

  it("a stated preference picks among workers, and says so in the record", () => {
    const s = given(submit("r1", GPU, ["zone=b"]))
    const d = place("r1", [ownerHost(), worker("w1", { labels: ["gpu=true", "zone=a"] }), worker("w2", { labels: ["gpu=true", "zone=b"] })])(s)
    expect(events(d)[0]).toMatchObject({ host: "w2", record: { selectionProvenance: "stated preference" } })
  })

  it("blocked is recorded once; an identical repeat records nothing; a changed decision records again", () => {
    const blocked = place("r1", [ownerHost(), worker("w1", { advertisementAlive: false })], 2_000)
    const first = blocked(given(submit("r1", GPU)))
    expect(tags(first)).toEqual(["PlacementDecided"])
    expect(events(first)[0]).toMatchObject({
      outcome: "blocked",
      host: null,
      attempt: null,
      record: { executionHost: null, selectionProvenance: "none: no candidate is eligible" }
    })
    const s = given(submit("r1", GPU), blocked)
    expect(runOf(s, "r1")).toMatchObject({ state: "pending", attempts: [], placements: 1, placement: { outcome: "blocked", at: 2_000 } })
    expect(runOf(s, "r1").placement!.explanation).toBe(
      "blocked; excluded: owner (eligibility: lacks label gpu=true), worker 'box-w1' (eligibility: its advertisement expired (no refresh for 15 s))"
    )
    // The same outcome and codes, later: nothing.
    expect(events(place("r1", [ownerHost(), worker("w1", { advertisementAlive: false })], 60_000)(s))).toEqual([])
    // Another reason for the same candidate is another decision.
    expect(tags(place("r1", [ownerHost(), worker("w1", { revoked: true })], 60_000)(s))).toEqual(["PlacementDecided"])
    // So is another candidate.
    expect(tags(place("r1", [ownerHost(), worker("w1", { advertisementAlive: false }), worker("w2", { scope: ["other:job@1"] })], 60_000)(s))).toEqual(["PlacementDecided"])
  })

  it("keeps with the run a placement summary whose size does not grow with the fleet", () => {
    const fleet = [ownerHost(), ...Array.from({ length: 500 }, (_, i) => worker(`w${i}`, { advertisementAlive: false }))]
    const s = given(submit("r1", GPU), place("r1", fleet, 2_000))
    const summary = runOf(s, "r1").placement!
    expect(summary.outcome).toBe("blocked")
    expect(summary.key).toMatch(/^[0-9a-f]{28}$/)
    expect(summary.explanation).toMatch(/^blocked; excluded: owner \(eligibility: lacks label gpu=true\), worker 'box-w0' /)
    expect(summary.explanation).toMatch(/, and 481 more hosts \(every verdict: svc journal export\)$/)
    expect(summary.explanation.length).toBeLessThan(3_000)
    // The same decision over the same 501 hosts is still recognized as unchanged.
    expect(events(place("r1", fleet, 60_000)(s))).toEqual([])
  })

  it("waiting is recorded once, with requested, used and capacity; room to place ends it", () => {
    const full = (used: number) => place("r1", [ownerHost(), worker("w1", { slots: { capacity: 2, used } })], 2_000)
    const s = given(submit("r1", GPU), full(2))
    expect(runOf(s, "r1").placement).toMatchObject({ outcome: "waiting", host: null })
    expect(runOf(s, "r1").placement!.record.selectionProvenance).toBe("none: no eligible candidate has room")
    const recorded = events(full(2)(given(submit("r1", GPU))))[0] as PlacementDecided
    expect(recorded.verdicts[1]).toEqual({
      candidate: "w1",
      name: "box-w1",
      exclusions: [{ layer: "capacity", code: "no-physical-slot", text: "slots: 2 of 2 in use", requested: 1, used: 2, capacity: 2 }],
      score: null
    })
    // Still full (how many are in use may differ, moving with other work): nothing.
    expect(events(full(3)(s))).toEqual([])
    // Full at another capacity (its settings changed): recorded, with the numbers of now.
    const fewer = events(place("r1", [ownerHost(), worker("w1", { slots: { capacity: 1, used: 1 } })], 2_000)(s))[0] as PlacementDecided
    expect(fewer.verdicts[1]!.exclusions[0]).toMatchObject({ code: "no-physical-slot", text: "slots: 1 of 1 in use" })
    // Blocked now (the worker lapsed): recorded.
    expect(events(place("r1", [ownerHost(), worker("w1", { advertisementAlive: false })])(s))[0]).toMatchObject({ outcome: "blocked" })
    // Room: placed, attempt 1.
    expect(events(full(1)(s))[0]).toMatchObject({ outcome: "placed", host: "w1", attempt: 1 })
  })

  it("a blocked decision whose reasons changed under the same codes is recorded again (a worker's labels swapped: it kept saying the worker lacked the label it now had)", () => {
    const BOTH = job("both", { requiredLabels: ["gpu=true", "zone=lab"] })
    const labelled = (labels: ReadonlyArray<string>) => place("r1", [ownerHost(), worker("w1", { labels, artifacts: [{ address: BOTH.address, digest: BOTH.digest }] })])
    const s = given(submit("r1", BOTH), labelled(["gpu=true"]))
    expect(runOf(s, "r1").placement!.explanation).toContain("lacks label zone=lab")
    const swapped = events(labelled(["zone=lab"])(s))[0] as PlacementDecided
    expect(swapped).toMatchObject({ outcome: "blocked" })
    expect(swapped.verdicts[1]!.exclusions.map((x) => x.text)).toEqual(["lacks label gpu=true"])
    expect(runOf(after(s, labelled(["zone=lab"])), "r1").placement!.explanation).toContain("lacks label gpu=true")
    // The same reasons again: nothing.
    expect(events(labelled(["gpu=true"])(s))).toEqual([])
  })

  it("a job that is not remote-eligible stays on the owner, waiting when the owner is full", () => {
    const s = given(submit("r1", LOCAL))
    const d = place("r1", [ownerHost({ slots: { capacity: 2, used: 2 } }), worker("w1")])(s)
    expect(events(d)[0]).toMatchObject({ outcome: "waiting", verdicts: [{ candidate: "owner", exclusions: [{ code: "no-physical-slot" }] }, { candidate: "w1", exclusions: [{ code: "not-remote-eligible" }] }] })
  })
})

// ---- The worker's calls --------------------------------------------------------------------

describe("decideClaim", () => {
  it("an assigned attempt is started under the worker's session fence", () => {
    const s = given(...onWorker)
    const d = claim("r1", 1, "w1", 7, [], 3_000)(s)
    expect(d).toMatchObject({ stream: "run-r1", expectedVersion: 2 })
    expect(events(d)).toEqual([expect.objectContaining({ _tag: "AttemptStarted", runId: "r1", attempt: 1, host: "w1", fence: 7, at: 3_000 })])
    const next = after(s, claim("r1", 1, "w1", 7, [], 3_000))
    expect(runOf(next, "r1").state).toBe("running")
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "running", fence: 7, startedAt: 3_000, holdsSlot: true })
  })

  it.each([
    ["another worker", "unknown-activity", claim("r1", 1, "w2")],
    ["the owner", "unknown-activity", claim("r1", 1, "owner")],
    ["an attempt never placed", "unknown-activity", claim("r1", 2, "w1")],
    ["an unknown run", "unknown-activity", claim("r9", 1, "w1")],
    ["a job outside its scope", "out-of-scope", claim("r1", 1, "w1", 7, ["demo:echo@1.0.0"])]
  ] as const)("a claim of %s is refused (%s)", (_what, code, step) => {
    expect(rejection(step(given(...onWorker)))).toBe(code)
  })

  it("a job inside its scope is claimed", () => {
    expect(tags(claim("r1", 1, "w1", 7, [GPU.address])(given(...onWorker)))).toEqual(["AttemptStarted"])
  })

  it("an attempt that is running already, or no longer counts, is superseded for this claim", () => {
    const running = claim("r1", 1, "w1", 8)(given(...claimed))
    expect(rejection(running)).toBe("superseded")
    expect(message(running)).toBe("attempt r1.1 is running, not waiting to be claimed")
    expect(rejection(claim("r1", 1, "w1")(given(...onWorker, supersede("r1", 1))))).toBe("superseded")
    expect(rejection(claim("r1", 1, "w1")(given(...onWorker, stop("r1"))))).toBe("superseded")
  })
})

describe("decideHandOff", () => {
  const waitingOn = (workerId: string, fence = 7, scope: ReadonlyArray<string> = []) => (host: string) => (host === workerId ? { workerId, scope, fence } : undefined)
  const handOff =
    (decide: Step, claimOn: (host: string) => D.WaitingClaim | undefined, now = 2_000): Step =>
    (s) => {
      const d = decide(s)
      return d._tag === "Rejected" ? d : D.decideHandOff(d, s.runs, claimOn, now)
    }
  const submitAndPlace = (runId: string, j: RunJob, candidates: ReadonlyArray<Candidate>): Step => (s) =>
    D.decideSubmitAndPlace({ runId, job: j, input: { text: "hi" }, preferredLabels: [], actor: "operator", now: 1_000, candidates, quotas: NO_QUOTAS, notes: [] }, s.runs)

  it("a placement on a worker whose claim waits starts the attempt in the same decision, under the claim's fence", () => {
    const d = handOff(submitAndPlace("r1", GPU, [ownerHost(), worker("w1")]), waitingOn("w1", 9))(initialState)
    expect(tags(d)).toEqual(["RunSubmitted", "PlacementDecided", "AttemptStarted"])
    expect(events(d)[2]).toMatchObject({ runId: "r1", attempt: 1, host: "w1", fence: 9, at: 2_000 })
    // The same state as placing, then claiming.
    const handed = after(initialState, handOff(submitAndPlace("r1", GPU, [ownerHost(), worker("w1")]), waitingOn("w1", 9)))
    const claimedLater = given(submitAndPlace("r1", GPU, [ownerHost(), worker("w1")]), claim("r1", 1, "w1", 9, [], 2_000))
    expect(canonicalState(handed)).toEqual(canonicalState(claimedLater))
  })

  it("in one command, decides what the same steps decide one commit after another (any fleet, any waiting claim)", () => {
    const host = fc.record({
      labels: fc.subarray(["gpu=true", "os=linux"]),
      used: fc.integer({ min: 0, max: 2 }),
      alive: fc.boolean()
    })
    fc.assert(
      fc.property(fc.array(host, { maxLength: 5 }), fc.integer({ min: 0, max: 5 }), fc.constantFrom([], [GPU.address], [ECHO.address]), fc.constantFrom(ECHO, GPU), (hosts, waiting, scope, j) => {
        const candidates = [ownerHost({ slots: { capacity: 1, used: 1 } }), ...hosts.map((h, i) => worker(`w${i}`, { labels: h.labels, advertisementAlive: h.alive, slots: { capacity: 2, used: h.used } }))]
        const claimOn = waitingOn(`w${waiting}`, 5, scope)
        const inOne = handOff(submitAndPlace("r1", j, candidates), claimOn)(initialState)
        // Step by step: submitted and committed, then placed (and handed over) on the folded state.
        const submitted = given(submit("r1", j, [], 1_000))
        const placed = D.decidePlacement({ runId: "r1", candidates, quotas: NO_QUOTAS, notes: [], now: 1_000 }, submitted.runs)
        const stepwise = placed._tag === "Rejected" ? placed : D.decideHandOff(placed, submitted.runs, claimOn, 2_000)
        {
          expect(events(inOne).slice(1)).toEqual(events(stepwise))
        }
      }),
      { numRuns: 300 }
    )
  })

  it("the scheduler's placement of a pending run hands over the same way", () => {
    const s = given(submit("r1", GPU))
    expect(tags(handOff(place("r1", [ownerHost(), worker("w1")]), waitingOn("w1"))(s))).toEqual(["PlacementDecided", "AttemptStarted"])
  })

  it.each([
    ["placed on the owner", submitAndPlace("r1", ECHO, [ownerHost(), worker("w1")]), waitingOn("w1"), ["RunSubmitted", "PlacementDecided", "AttemptStarted"], "owner"],
    ["no claim waits on the chosen worker", submitAndPlace("r1", GPU, [ownerHost(), worker("w1")]), waitingOn("w2"), ["RunSubmitted", "PlacementDecided"], "w1"],
    ["waiting for room", submitAndPlace("r1", GPU, [ownerHost(), worker("w1", { slots: { capacity: 1, used: 1 } })]), waitingOn("w1"), ["RunSubmitted", "PlacementDecided"], null],
    ["submitted alone", submit("r1", GPU), waitingOn("w1"), ["RunSubmitted"], null],
    ["a claim the attempt cannot start for (outside its scope)", submitAndPlace("r1", GPU, [ownerHost(), worker("w1")]), waitingOn("w1", 7, [ECHO.address]), ["RunSubmitted", "PlacementDecided"], "w1"]
  ] as const)("nothing is handed over when %s", (_what, decide, claimOn, expected, host) => {
    const d = handOff(decide, claimOn)(initialState)
    expect(tags(d)).toEqual(expected)
    const placed = events(d).find((e): e is PlacementDecided => e._tag === "PlacementDecided")
    expect(placed?.host ?? null).toBe(host)
  })
})

describe("decideDecline", () => {
  it.each([
    ["assigned", onWorker],
    ["running", claimed]
  ] as const)("a %s attempt is declined: the run is pending again, the worker is not offered it, the slot is free", (_state, steps) => {
    const s = given(...steps)
    expect(events(decline("r1", 1, "w1")(s))).toEqual([expect.objectContaining({ _tag: "AttemptDeclined", runId: "r1", attempt: 1, host: "w1", reason: "does not hold sha256:d1" })])
    const next = after(s, decline("r1", 1, "w1"))
    expect(runOf(next, "r1")).toMatchObject({ state: "pending", declinedBy: ["w1"] })
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "declined", holdsSlot: false, endedAt: 3_500, reason: "does not hold sha256:d1" })
    expect([reserved(next, "w1"), heldBy(next, "w1")]).toEqual([0, []])
  })

  it("a repeated decline records nothing", () => {
    expect(events(decline("r1", 1, "w1")(given(...onWorker, decline("r1", 1, "w1"))))).toEqual([])
  })

  it("a decline of a stopping attempt frees its slot; the run stays stopped", () => {
    const s = given(...claimed, stop("r1"), decline("r1", 1, "w1"))
    expect(runOf(s, "r1").state).toBe("stopped")
    expect(attemptOf(s, "r1", 1)).toMatchObject({ state: "declined", holdsSlot: false })
    expect(reserved(s, "w1")).toBe(0)
  })

  it.each([
    ["from another worker", "unknown-activity", onWorker, decline("r1", 1, "w2")],
    ["of a job outside its scope", "out-of-scope", onWorker, decline("r1", 1, "w1", ["demo:echo@1.0.0"])],
    ["of a superseded attempt", "superseded", [...claimed, supersede("r1", 1)], decline("r1", 1, "w1")],
    ["of a reported attempt", "superseded", [...claimed, report("r1", 1, "w1")], decline("r1", 1, "w1")]
  ] as const)("a decline %s is refused (%s)", (_what, code, steps, step) => {
    expect(rejection(step(given(...steps)))).toBe(code)
  })
})

describe("decideReport", () => {
  it("the running attempt reports: the run succeeds with its result, the slot is free", () => {
    const s = given(...claimed)
    const d = report("r1", 1, "w1")(s)
    expect(d).toMatchObject({ stream: "run-r1", expectedVersion: 3 })
    expect(events(d)).toEqual([expect.objectContaining({ _tag: "AttemptReported", attempt: 1, host: "w1", ok: true, result: { length: 2 }, error: null, exitCode: 0, at: 4_000 })])
    const next = after(s, report("r1", 1, "w1"))
    expect(runOf(next, "r1")).toMatchObject({ state: "succeeded", result: { length: 2 }, error: null, finishedAt: 4_000 })
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "reported", holdsSlot: false, endedAt: 4_000 })
    expect([reserved(next, "w1"), HashMap.has(next.runs.open, "r1")]).toEqual([0, false])
  })

  it("a failed report fails the run with its error, and keeps no result", () => {
    const d = report("r1", 1, "owner", false)(given(...onOwner))
    expect(events(d)[0]).toMatchObject({ ok: false, result: null, error: "exit 3: the disk is full", exitCode: 3 })
    expect(runOf(after(given(...onOwner), report("r1", 1, "owner", false)), "r1")).toMatchObject({ state: "failed", result: null, error: "exit 3: the disk is full" })
  })

  it("a retry of a recorded report is answered as the first and records nothing", () => {
    const s = given(...claimed, report("r1", 1, "w1"))
    expect(report("r1", 1, "w1")(s)).toEqual({ _tag: "Decided", stream: "run-r1", expectedVersion: 4, events: [] })
    // Even when the retry carries another outcome: the first one stands.
    expect(events(report("r1", 1, "w1", false)(s))).toEqual([])
  })

  it("a stopping attempt's report is accepted: its slot is free, the run stays stopped", () => {
    const s = given(...claimed, stop("r1"))
    expect(attemptOf(s, "r1", 1).state).toBe("stopping")
    expect(tags(report("r1", 1, "w1")(s))).toEqual(["AttemptReported"])
    const next = after(s, report("r1", 1, "w1"))
    expect(runOf(next, "r1")).toMatchObject({ state: "stopped", result: null, error: "stopped by the operator" })
    // The attempt alone keeps how its job ended: the run's is the stop.
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "reported", holdsSlot: false, ok: true })
    expect(reserved(next, "w1")).toBe(0)
    const failed = after(s, report("r1", 1, "w1", false))
    expect(runOf(failed, "r1")).toMatchObject({ state: "stopped", error: "stopped by the operator" })
    expect(attemptOf(failed, "r1", 1)).toMatchObject({ state: "reported", ok: false, reason: "exit 3: the disk is full" })
  })

  it.each([
    ["superseded", "superseded", [...claimed, supersede("r1", 1)], "attempt r1.1 was superseded (its worker's advertisement lapsed): its activity was placed again, and this late report is refused"],
    ["ceased", "superseded", [...claimed, supersede("r1", 1), cease("r1", 1)], undefined],
    ["declined", "superseded", [...claimed, decline("r1", 1, "w1")], "attempt r1.1 was declined"],
    ["never claimed", "unknown-activity", onWorker, "attempt r1.1 was never claimed, so it cannot report"]
  ] as const)("an attempt %s cannot report (%s)", (_what, code, steps, text) => {
    const d = report("r1", 1, "w1")(given(...steps))
    expect(rejection(d)).toBe(code)
    if (text !== undefined) expect(message(d)).toBe(text)
  })

  it.each([
    ["from another worker", "unknown-activity", report("r1", 1, "w2")],
    ["of an attempt it does not hold", "unknown-activity", report("r1", 2, "w1")],
    ["of an unknown run", "unknown-activity", report("r9", 1, "w1")],
    ["of a job outside its scope", "out-of-scope", report("r1", 1, "w1", true, ["demo:echo@1.0.0"])]
  ] as const)("a report %s is refused (%s)", (_what, code, step) => {
    expect(rejection(step(given(...claimed)))).toBe(code)
  })
})

// ---- The owner's observations --------------------------------------------------------------

describe("decideSupersede", () => {
  it("an assigned attempt never ran: superseded and ceased at once, the slot is free", () => {
    const s = given(...onWorker)
    expect(tags(supersede("r1", 1)(s))).toEqual(["AttemptSuperseded", "AttemptCeased"])
    expect(events(supersede("r1", 1)(s))[1]).toMatchObject({ host: "w1", reason: "never claimed" })
    const next = after(s, supersede("r1", 1))
    expect(runOf(next, "r1").state).toBe("pending")
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "ceased", holdsSlot: false, reason: "its worker's advertisement lapsed" })
    expect([reserved(next, "w1"), heldBy(next, "w1")]).toEqual([0, []])
  })

  it("a running attempt is superseded, but its slot stays held until cessation is observed", () => {
    const s = given(...claimed)
    expect(tags(supersede("r1", 1)(s))).toEqual(["AttemptSuperseded"])
    const next = after(s, supersede("r1", 1))
    expect(runOf(next, "r1").state).toBe("pending")
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "superseded", holdsSlot: true, endedAt: 5_000 })
    expect([reserved(next, "w1"), heldBy(next, "w1")]).toEqual([1, ["r1.1"]])
    // Placed again, as attempt 2, while attempt 1 still holds w1's slot.
    const again = after(next, place("r1", [ownerHost(), worker("w1", { slots: { capacity: 2, used: 1 } })]))
    expect(attemptOf(again, "r1", 2)).toMatchObject({ host: "w1", state: "assigned" })
    expect(reserved(again, "w1")).toBe(2)
  })

  it.each([
    ["reported", [...claimed, report("r1", 1, "w1")], 1],
    ["superseded already", [...claimed, supersede("r1", 1)], 1],
    ["never placed", claimed, 2]
  ] as const)("an attempt %s: nothing", (_what, steps, n) => {
    expect(events(supersede("r1", n)(given(...steps)))).toEqual([])
  })

  it("an unknown run is refused", () => {
    expect(rejection(supersede("r9", 1)(initialState))).toBe("unknown-run")
  })
})

describe("decideCease", () => {
  it.each([
    ["superseded", [...claimed, supersede("r1", 1)], "pending"],
    ["stopping", [...claimed, stop("r1")], "stopped"]
  ] as const)("a %s attempt observed stopped frees its slot", (_what, steps, runState) => {
    const s = given(...steps)
    expect(events(cease("r1", 1)(s))).toEqual([expect.objectContaining({ _tag: "AttemptCeased", attempt: 1, host: "w1", reason: "its worker no longer runs it" })])
    const next = after(s, cease("r1", 1))
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "ceased", holdsSlot: false })
    expect(runOf(next, "r1").state).toBe(runState)
    expect(reserved(next, "w1")).toBe(0)
  })

  it.each([
    ["assigned (it still counts)", onWorker],
    ["running (it still counts)", claimed],
    ["reported", [...claimed, report("r1", 1, "w1")]],
    ["ceased already", [...claimed, supersede("r1", 1), cease("r1", 1)]]
  ] as const)("an attempt %s: nothing", (_what, steps) => {
    expect(events(cease("r1", 1)(given(...steps)))).toEqual([])
  })
})

describe("decideStop", () => {
  it("a pending run is stopped: no more placement", () => {
    const s = given(submit("r1", GPU), place("r1", [ownerHost()]))
    expect(tags(stop("r1")(s))).toEqual(["RunStopRequested"])
    const next = after(s, stop("r1"))
    expect(runOf(next, "r1")).toMatchObject({ state: "stopped", stoppedBy: "operator", finishedAt: 7_000, error: "stopped by the operator" })
    expect(HashMap.has(next.runs.open, "r1")).toBe(false)
    expect(events(place("r1", [ownerHost(), worker("w1")])(next))).toEqual([])
  })

  it("an attempt assigned to a worker and never claimed is freed at once", () => {
    const s = given(...onWorker)
    const d = stop("r1")(s)
    expect(tags(d)).toEqual(["RunStopRequested", "AttemptCeased"])
    expect(events(d)[1]).toMatchObject({ attempt: 1, host: "w1", reason: "stopped before it was claimed" })
    const next = after(s, stop("r1"))
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "ceased", holdsSlot: false })
    expect(reserved(next, "w1")).toBe(0)
  })

  it.each([
    ["on a worker", claimed, "w1"],
    ["on the owner", onOwner, "owner"]
  ] as const)("a running attempt %s is stopping, and keeps its slot until it has stopped", (_where, steps, host) => {
    const s = given(...steps)
    expect(tags(stop("r1")(s))).toEqual(["RunStopRequested"])
    const next = after(s, stop("r1"))
    expect(attemptOf(next, "r1", 1)).toMatchObject({ state: "stopping", holdsSlot: true })
    expect(reserved(next, host)).toBe(1)
  })

  it.each([
    ["succeeded", [...onOwner, report("r1", 1, "owner")], "run r1 has already succeeded"],
    ["failed", [...onOwner, report("r1", 1, "owner", false)], "run r1 has already failed"],
    ["stopped", [submit("r1"), stop("r1")], "run r1 has already been stopped"]
  ] as const)("a %s run is refused (run-finished)", (_state, steps, text) => {
    const d = stop("r1")(given(...steps))
    expect([rejection(d), message(d)]).toEqual(["run-finished", text])
  })

  it("an unknown run is refused", () => {
    expect(rejection(stop("r9")(initialState))).toBe("unknown-run")
  })
})

// ---- Fold and ledger, over random command sequences ----------------------------------------

const HOSTS = ["owner", "w1", "w2", "w3"] as const
const JOBS = [ECHO, GPU, LOCAL] as const

interface WorkerView {
  readonly alive: boolean
  readonly revoked: boolean
  readonly gpu: boolean
  readonly scoped: boolean
  readonly capacity: number
}
type Command =
  | { readonly t: "submit"; readonly job: number; readonly prefer: boolean }
  | { readonly t: "place"; readonly run: number; readonly ownerCapacity: number; readonly workers: ReadonlyArray<WorkerView> }
  | { readonly t: "claim" | "decline" | "report"; readonly run: number; readonly n: number; readonly host: number; readonly inScope: boolean; readonly ok: boolean }
  | { readonly t: "supersede" | "cease" | "stop"; readonly run: number; readonly n: number }

const workerView: fc.Arbitrary<WorkerView> = fc.record({
  alive: fc.nat(3).map((n) => n > 0),
  revoked: fc.nat(9).map((n) => n === 0),
  gpu: fc.boolean(),
  scoped: fc.boolean(),
  capacity: fc.integer({ min: 1, max: 3 })
})
const submitCommand: fc.Arbitrary<Command> = fc.record({ t: fc.constant("submit" as const), job: fc.nat(2), prefer: fc.boolean() })
// Most calls name a run's last attempt (n 0), from its own host (host < 0), in scope: the effective ones.
const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: submitCommand, weight: 2 },
  { arbitrary: fc.record({ t: fc.constant("place" as const), run: fc.nat(5), ownerCapacity: fc.nat(2), workers: fc.tuple(workerView, workerView, workerView) }), weight: 5 },
  {
    arbitrary: fc.record({
      t: fc.constantFrom("claim" as const, "claim" as const, "decline" as const, "report" as const, "report" as const),
      run: fc.nat(5),
      n: fc.integer({ min: -3, max: 3 }).map((n) => Math.max(0, n)),
      host: fc.integer({ min: -6, max: 3 }),
      inScope: fc.nat(4).map((n) => n > 0),
      ok: fc.boolean()
    }),
    weight: 10
  },
  { arbitrary: fc.record({ t: fc.constantFrom("supersede" as const, "cease" as const, "cease" as const), run: fc.nat(5), n: fc.integer({ min: -3, max: 3 }).map((n) => Math.max(0, n)) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("stop" as const), run: fc.nat(5), n: fc.constant(0) }), weight: 1 }
)

/** What the owner runtime would decide for this command, in this state (undefined: no run to name). */
const decisionFor = (c: Command, s: OwnerState, runIds: ReadonlyArray<string>, now: number): Decision | undefined => {
  if (c.t === "submit") return D.decideSubmit({ runId: `r${runIds.length + 1}`, job: JOBS[c.job]!, input: { i: runIds.length }, preferredLabels: c.prefer ? ["zone=w2"] : [], actor: "op", now }, s.runs)
  // A command names a run in play: a pending one to place, one with attempts for the rest
  // (any run kept, when there is none such: those commands are refused or change nothing).
  const kept = runIds.filter((id) => HashMap.has(s.runs.runs, id))
  const inPlay = kept.filter((id) => (c.t === "place" ? runOf(s, id).state === "pending" : runOf(s, id).attempts.length > 0))
  const among = inPlay.length > 0 ? inPlay : kept
  if (among.length === 0) return undefined
  const runId = among[among.length - 1 - (c.run % among.length)]!
  const run = runOf(s, runId)
  if (c.t === "place") {
    const candidates = [
      ownerHost({ slots: { capacity: c.ownerCapacity, used: reserved(s, "owner") } }),
      ...c.workers.map((w, i) =>
        worker(`w${i + 1}`, {
          advertisementAlive: w.alive,
          revoked: w.revoked,
          labels: w.gpu ? ["gpu=true", `zone=w${i + 1}`] : [`zone=w${i + 1}`],
          scope: w.scoped ? [GPU.address] : [],
          slots: { capacity: w.capacity, used: reserved(s, `w${i + 1}`) }
        })
      )
    ]
    return D.decidePlacement({ runId, candidates, quotas: NO_QUOTAS, notes: [], now }, s.runs)
  }
  const n = c.n === 0 ? (lastAttempt(run)?.n ?? 1) : c.n
  if (!("host" in c)) {
    if (c.t === "stop") return D.decideStop({ runId, actor: "op", now }, s.runs)
    if (c.t === "supersede") return D.decideSupersede({ runId, attempt: n, reason: "lapsed", now }, s.runs)
    return D.decideCease({ runId, attempt: n, reason: "gone", now }, s.runs)
  }
  const host = c.host < 0 ? (run.attempts.find((a) => a.n === n)?.host ?? "w1") : HOSTS[c.host]!
  const scope = c.inScope ? [] : ["other:job@1"]
  if (c.t === "claim") return D.decideClaim({ workerId: host, scope, fence: now, runId, attempt: n, now }, s.runs)
  if (c.t === "decline") return D.decideDecline({ workerId: host, scope, runId, attempt: n, reason: "no", now }, s.runs)
  return D.decideReport({ host, scope, runId, attempt: n, ok: c.ok, result: { n }, error: c.ok ? null : "failed", exitCode: c.ok ? 0 : 1, now }, s.runs)
}

const text = (s: OwnerState) => JSON.stringify(canonicalState(s))
/** Each host's held attempts as a set (a snapshot makes them again in submission order, the fold in placement order). */
const heldSets = (s: OwnerState) => [...HashMap.entries(s.runs.held)].map(([host, ids]) => [host, [...ids].sort()] as const).sort(([a], [b]) => (a < b ? -1 : 1))
const entries = <V>(m: HashMap.HashMap<string, V>) => JSON.stringify([...HashMap.entries(m)].sort(([a], [b]) => (a < b ? -1 : 1)))

/** The physical ledger and the held index against the attempts themselves; one counting attempt per run. */
const checkInvariants = (s: OwnerState) => {
  const runs = [...HashMap.values(s.runs.runs)]
  for (const host of HOSTS) {
    const holding = runs.flatMap((r) => r.attempts.filter((a) => a.host === host && a.holdsSlot).map((a) => attemptId(r.id, a.n))).sort()
    expect(reserved(s, host), `reserved slots of ${host}`).toBe(holding.length)
    expect([...heldBy(s, host)].sort(), `held index of ${host}`).toEqual(holding)
  }
  for (const r of runs) {
    r.attempts.forEach((a, i) => expect(a.n).toBe(i + 1))
    const counting = r.attempts.filter((a) => ACTIVE.has(a.state))
    expect(counting.length, `attempts of ${r.id} that count`).toBeLessThanOrEqual(1)
    if (r.state === "pending" || TERMINAL.has(r.state)) expect(counting, `${r.id} is ${r.state}`).toEqual([])
    else expect(lastAttempt(r)!.state, `${r.id} is ${r.state}`).toBe(r.state)
    expect(HashMap.has(s.runs.open, r.id)).toBe(!TERMINAL.has(r.state))
    // The scheduler's work list: exactly the pending runs, by submission sequence.
    expect(Option.getOrUndefined(HashMap.get(s.runs.pending, r.id))).toBe(r.state === "pending" ? r.submittedSequence : undefined)
  }
  expect(HashMap.size(s.runs.pending)).toBe([...HashMap.values(s.runs.runs)].filter((r) => r.state === "pending").length)
}

/**
 * Retention (Runs.ts): every run not settled is kept; a run is forgotten only once settled; at
 * most 2 x retain - 1 settled runs are kept; kept and forgotten add up to every run submitted.
 */
const checkRetention = (s: OwnerState, runIds: ReadonlyArray<string>, lastSeen: Map<string, RunRecord>) => {
  let settledKept = 0
  for (const id of runIds) {
    const run = Option.getOrUndefined(HashMap.get(s.runs.runs, id))
    if (run === undefined) {
      expect(isSettled(lastSeen.get(id)!), `${id} was forgotten before it settled`).toBe(true)
      continue
    }
    lastSeen.set(id, run)
    if (isSettled(run)) settledKept++
  }
  expect(settledKept).toBeLessThanOrEqual(2 * s.runs.retain - 1)
  expect(HashMap.size(s.runs.runs) + s.runs.forgotten).toBe(runIds.length)
}

describe.each([
  ["keeping every run (the default generation of settled runs is larger than these sequences)", initialState],
  ["forgetting settled runs (generations of 2)", initialStateRetaining(2)]
] as const)("the fold of run events, %s", (_what, start) => {
  it("keeps each host's reserved slots equal to its attempts holding one, and fold equals evolve step by step", () => {
    const seen = new Map<string, number>()
    let forgotten = 0
    fc.assert(
      fc.property(fc.array(submitCommand, { minLength: 1, maxLength: 3 }), fc.array(command, { maxLength: 60, size: "max" }), fc.nat(200), (submits, rest, cutAt) => {
        const commands = [...submits, ...rest]
        let s = start
        const runIds: Array<string> = []
        const lastSeen = new Map<string, RunRecord>()
        const all: Array<Envelope> = []
        commands.forEach((c, i) => {
          const d = decisionFor(c, s, runIds, 10_000 + i * 1_000)
          if (d === undefined || d._tag === "Rejected") return
          const { state, envelopes } = append(s, d)
          for (const { event } of envelopes) {
            if (event._tag === "RunSubmitted") runIds.push(event.runId)
            seen.set(event._tag, (seen.get(event._tag) ?? 0) + 1)
            if (event._tag === "PlacementDecided") {
              expect(auditPlacement(event)).toEqual({ reproduced: true })
            }
          }
          all.push(...envelopes)
          s = state
          checkInvariants(s)
          checkRetention(s, runIds, lastSeen)
        })
        forgotten += s.runs.forgotten
        const folded = fold(start, all)
        expect(text(folded)).toBe(text(s))
        expect([entries(folded.runs.open), entries(folded.runs.held), entries(folded.runs.pending)]).toEqual([entries(s.runs.open), entries(s.runs.held), entries(s.runs.pending)])
        const cut = cutAt % (all.length + 1)
        const first = fold(start, all.slice(0, cut))
        const before = text(first)
        const whole = fold(first, all.slice(cut))
        expect(text(whole)).toBe(text(s))
        expect(entries(whole.runs.held)).toBe(entries(s.runs.held))
        expect(text(first)).toBe(before)
        // Restored from its snapshot (canonical JSON, through text), the state at the cut is the
        // same, indexes included, and folding the rest from it ends where the whole fold does.
        const restored = stateFromCanonical(JSON.parse(before) as CanonicalState)
        expect(text(restored)).toBe(before)
        expect([entries(restored.runs.open), entries(restored.runs.pending), heldSets(restored)]).toEqual([entries(first.runs.open), entries(first.runs.pending), heldSets(first)])
        const resumed = fold(restored, all.slice(cut))
        expect(text(resumed)).toBe(text(s))
        expect([entries(resumed.runs.open), entries(resumed.runs.pending), heldSets(resumed)]).toEqual([entries(s.runs.open), entries(s.runs.pending), heldSets(s)])
      }),
      { numRuns: 200 }
    )
    // The sequences reach every run event, many times (the property is not vacuous).
    for (const tag of ["RunSubmitted", "PlacementDecided", "AttemptStarted", "AttemptDeclined", "AttemptReported", "AttemptSuperseded", "AttemptCeased", "RunStopRequested"]) {
      expect(seen.get(tag) ?? 0, tag).toBeGreaterThan(30)
    }
    // And, with small generations, they forget runs (the retention checks are not vacuous either).
    expect(forgotten > 0).toBe(start.runs.retain < 100)
  })
})

// ---- Audit ---------------------------------------------------------------------------------

describe("auditPlacement", () => {
  const decided = (steps: ReadonlyArray<Step>, last: Step): PlacementDecided => events(last(given(...steps)))[0] as PlacementDecided
  const candidates = [ownerHost(), worker("w1", { labels: ["gpu=true", "zone=a"] }), worker("w2", { labels: ["gpu=true", "zone=b"] }), worker("w3", { advertisementAlive: false })]

  it.each([
    ["placed on the owner (locality)", [submit("r1")], place("r1", candidates)],
    ["placed on a worker (stated preference)", [submit("r1", GPU, ["zone=b"])], place("r1", candidates)],
    ["placed on a worker (tie-break)", [submit("r1", GPU)], place("r1", candidates)],
    ["waiting", [submit("r1", GPU)], place("r1", candidates.map((c) => ({ ...c, slots: { capacity: 2, used: 2 } })))],
    ["blocked", [submit("r1", GPU)], place("r1", [ownerHost(), worker("w1", { revoked: true })])],
    ["placed again after a decline", [submit("r1", GPU), place("r1", [ownerHost(), worker("w1")]), decline("r1", 1, "w1")], place("r1", candidates)]
  ] as const)("%s: reproduced, also after a round trip through the journal's encoding", (_what, steps, last) => {
    const e = decided(steps, last)
    expect(auditPlacement(e)).toEqual({ reproduced: true })
    const stored = JSON.parse(JSON.stringify(Schema.encodeSync(Event)(e)))
    const read = Schema.decodeUnknownSync(Event)(stored) as PlacementDecided
    expect(auditPlacement(read)).toEqual({ reproduced: true })
  })

  const diverged = (e: PlacementDecided) => {
    const audit = auditPlacement(e)
    if (audit.reproduced) throw new Error("reproduced")
    return audit.differences
  }
  const recorded = decided([submit("r1", GPU, ["zone=b"])], place("r1", candidates))
  const tampered = (patch: Partial<PlacementDecided>) => ({ ...recorded, ...patch }) as PlacementDecided
  const verdicts = (f: (v: PlacementDecided["verdicts"][number]) => PlacementDecided["verdicts"][number]) => recorded.verdicts.map(f)

  it("a tampered host is named", () => {
    expect(recorded.host).toBe("w2")
    expect(diverged(tampered({ host: "w1" }))).toEqual(["host: recorded w1 (box-w1), now w2 (box-w2)"])
  })

  it("a tampered outcome is named", () => {
    expect(diverged(tampered({ outcome: "waiting", host: null }))).toEqual(["outcome: recorded waiting, now placed", "host: recorded none, now w2 (box-w2)"])
  })

  it("a tampered verdict's code is named with the candidate, both codes shown", () => {
    const changed = verdicts((v) => (v.candidate === "owner" ? { ...v, exclusions: [{ layer: "eligibility", code: "out-of-scope", text: "lacks label gpu=true" }] } : v))
    expect(diverged(tampered({ verdicts: changed }))).toEqual(["candidate owner: recorded exclusions out-of-scope, now missing-label"])
  })

  it("a tampered verdict's text or score, with the same codes, is named too", () => {
    const text = verdicts((v) => (v.candidate === "w3" ? { ...v, exclusions: v.exclusions.map((x) => ({ ...x, text: "it was fine" })) } : v))
    // What differs is said: it read "recorded exclusions advertisement-expired, now advertisement-expired".
    expect(diverged(tampered({ verdicts: text }))).toEqual([
      'candidate w3 (box-w3): recorded exclusions advertisement-expired, now advertisement-expired (recorded as "it was fine", now "its advertisement expired (no refresh for 15 s)")'
    ])
    const score = verdicts((v) => (v.candidate === "w1" ? { ...v, score: { locality: 0, preference: 5 } } : v))
    expect(diverged(tampered({ verdicts: score }))).toEqual(['candidate w1 (box-w1): recorded exclusions none, now none (score recorded {"locality":0,"preference":5}, now {"locality":0,"preference":0})'])
  })

  it("a verdict dropped or added, and a tampered provenance, are named", () => {
    expect(diverged(tampered({ verdicts: recorded.verdicts.filter((v) => v.candidate !== "w3") }))).toEqual(["candidate w3 (box-w3): not in the recorded verdicts"])
    expect(diverged(tampered({ verdicts: [...recorded.verdicts, { candidate: "w9", name: "ghost", exclusions: [], score: null }] }))).toEqual(["candidate w9 (ghost): recorded, but not judged now"])
    expect(diverged(tampered({ record: { ...recorded.record, selectionProvenance: "locality: the owner keeps what it can run" } }))).toEqual([
      'selection provenance: recorded "locality: the owner keeps what it can run", now "stated preference"'
    ])
  })

  it("a decision is audited by the rules' revision it was made by: one recorded before revisions (an owner-only job that workers 'do not hold') is reproduced, and would not be by revision 2", () => {
    // A worker that holds the job advertises only what it may be given: an owner-only job is never in its advertisement.
    const now = decided([submit("r1", LOCAL)], place("r1", [ownerHost(), worker("w1", { artifacts: [] })]))
    expect(now.activity.rules).toBe(PLACEMENT_RULES)
    const w1 = now.verdicts.find((v) => v.candidate === "w1")!
    expect(w1.exclusions).toEqual([{ layer: "eligibility", code: "not-remote-eligible", text: "demo:local@1.0.0 is not remote-eligible: it stays on the owner" }])
    expect(auditPlacement(now)).toEqual({ reproduced: true })
    // As an owner before revisions recorded it: no `rules`, and the worker said not to hold the job.
    const { rules: _, ...unrevised } = now.activity
    const held = { layer: "eligibility" as const, code: "job-not-held", text: "it does not hold demo:local@1.0.0" }
    const before = tampered({ ...now, activity: unrevised, verdicts: now.verdicts.map((v) => (v.candidate === "w1" ? { ...v, exclusions: [...v.exclusions, held] } : v)) })
    expect(auditPlacement(before)).toEqual({ reproduced: true })
    // Stored and read back (v4's optional field absent), it is still judged by revision 1.
    const read = Schema.decodeUnknownSync(Event)(JSON.parse(JSON.stringify(Schema.encodeSync(Event)(before)))) as PlacementDecided
    expect(read.activity).not.toHaveProperty("rules")
    expect(auditPlacement(read)).toEqual({ reproduced: true })
    // Made by rules newer than this code has: judged by the latest it has, and never said reproduced.
    expect(diverged({ ...now, activity: { ...now.activity, rules: PLACEMENT_RULES + 1 } } as PlacementDecided)).toEqual([
      `made by placement rules revision ${PLACEMENT_RULES + 1}, newer than this svc knows (${PLACEMENT_RULES}): judged by revision ${PLACEMENT_RULES}`
    ])
    // In a run's history, each decision says the revision it was made by.
    expect(historyOf([{ sequence: 1, stream: "run-r1", streamVersion: 1, type: "PlacementDecided", schemaVersion: 4, recordedAt: 0, event: before }])[0]!.decision).toMatchObject({ rules: 1, reproduced: true })
    // The same record claiming revision 2 is not what revision 2 decides.
    expect(diverged({ ...before, activity: { ...unrevised, rules: 2 } } as PlacementDecided)).toEqual(["candidate w1 (box-w1): recorded exclusions not-remote-eligible,job-not-held, now not-remote-eligible"])
  })

  it("a tampered input (a candidate's labels) changes the decision, and the audit names it", () => {
    const inputs = recorded.candidates.map((c) => (c.id === "w2" ? { ...c, labels: ["zone=b"] } : c))
    const differences = diverged(tampered({ candidates: inputs }))
    expect(differences).toContain("host: recorded w2 (box-w2), now w1 (box-w1)")
    expect(differences).toContain("candidate w2 (box-w2): recorded exclusions none, now missing-label")
  })
})

// ---- A run's history (svc journal history) ----------------------------------------------------

describe("historyOf", () => {
  /** The envelopes of every step, appended in order, as the run's stream holds them. */
  const streamOf = (...steps: ReadonlyArray<Step>): ReadonlyArray<Envelope> => {
    let s = initialState
    const all: Array<Envelope> = []
    for (const step of steps) {
      const { state, envelopes } = append(s, step(s))
      s = state
      all.push(...envelopes)
    }
    return all
  }

  it("tells why a run went to a worker, why it left it, and where it went next, each decision reproduced", () => {
    const entries = historyOf(
      streamOf(
        submit("r1", GPU),
        place("r1", [ownerHost(), worker("w1"), worker("w2", { slots: { capacity: 2, used: 2 } })]),
        claim("r1", 1, "w1"),
        supersede("r1", 1),
        place("r1", [ownerHost(), worker("w1", { advertisementAlive: false }), worker("w2")], 5_500),
        claim("r1", 2, "w2"),
        report("r1", 2, "w2")
      )
    )
    expect(entries.map((e) => e.text)).toEqual([
      `submitted by operator: ${GPU.address} (digest sha256:d1)`,
      "decision 1: placed on worker 'box-w1' as attempt 1",
      "attempt 1 started on worker 'box-w1' (its session fence 7)",
      "attempt 1 on worker 'box-w1' superseded: its worker's advertisement lapsed",
      "decision 2: placed on worker 'box-w2' as attempt 2",
      "attempt 2 started on worker 'box-w2' (its session fence 7)",
      "attempt 2 reported by worker 'box-w2': succeeded (exit code 0)"
    ])
    const [first, second] = entries.filter((e) => e.decision !== undefined).map((e) => e.decision!)
    expect(first).toMatchObject({ outcome: "placed", host: "w1", attempt: 1, reproduced: true, differences: [], notes: ["a note"] })
    expect(first!.verdicts.map((v) => [v.candidate, v.verdict])).toEqual([
      ["owner", "excluded (eligibility: lacks label gpu=true)"],
      ["w1", "eligible; score: locality 0, preference 0"],
      ["w2", "excluded (capacity: slots: 2 of 2 in use)"]
    ])
    expect(second!.verdicts.find((v) => v.candidate === "w1")?.verdict).toMatch(/^excluded \(eligibility: its advertisement expired/)
    expect(entries.map((e) => e.at)).toEqual([1_000, 2_000, 3_000, 5_000, 5_500, 3_000, 4_000])
  })

  it("says which identity when a machine that joined again shares its name with its revoked one", () => {
    const entries = historyOf(
      streamOf(
        submit("r1", GPU),
        place("r1", [ownerHost(), worker("wOld", { name: "lab-1", revoked: true }), worker("wNew", { name: "lab-1" })]),
        claim("r1", 1, "wNew")
      )
    )
    expect(entries.map((e) => e.text).slice(1)).toEqual(["decision 1: placed on worker 'lab-1' (wNew) as attempt 1", "attempt 1 started on worker 'lab-1' (wNew) (its session fence 7)"])
  })

  it("says which identity from the first line, when only a later decision brings in the other one of the name", () => {
    const entries = historyOf(
      streamOf(
        submit("r1", GPU),
        place("r1", [ownerHost(), worker("wOld", { name: "lab-1" })]),
        decline("r1", 1, "wOld"),
        place("r1", [ownerHost(), worker("wOld", { name: "lab-1", revoked: true }), worker("wNew", { name: "lab-1" })]),
        claim("r1", 2, "wNew")
      )
    )
    // The first lines read "worker 'lab-1'", which the later ones made ambiguous.
    expect(entries.map((e) => e.text).slice(1)).toEqual([
      "decision 1: placed on worker 'lab-1' (wOld) as attempt 1",
      "attempt 1 declined by worker 'lab-1' (wOld): does not hold sha256:d1",
      "decision 2: placed on worker 'lab-1' (wNew) as attempt 2",
      "attempt 2 started on worker 'lab-1' (wNew) (its session fence 7)"
    ])
  })

  it("names each layer once before its exclusions, as a run's explanation does", () => {
    const entries = historyOf(streamOf(submit("r1", GPU), place("r1", [ownerHost(), worker("w1", { revoked: true, labels: [] })])))
    const w1 = entries.find((e) => e.decision !== undefined)!.decision!.verdicts.find((v) => v.candidate === "w1")!
    expect(w1.verdict).toBe("excluded (eligibility: revoked; lacks label gpu=true)")
    // And as recorded, with their codes (what --json gives an auditor's script).
    expect(w1.exclusions.map((x) => [x.layer, x.code])).toEqual([
      ["eligibility", "revoked"],
      ["eligibility", "missing-label"]
    ])
  })

  it("a decision the current code decides otherwise is marked, with what differs", () => {
    const envelopes = streamOf(submit("r1", GPU), place("r1", [ownerHost(), worker("w1"), worker("w2")]))
    const decided = envelopes[1]!
    const e = decided.event as PlacementDecided
    const tampered = { ...decided, event: { ...e, host: e.host === "w1" ? "w2" : "w1" } as PlacementDecided }
    const [, entry] = historyOf([envelopes[0]!, tampered])
    expect(entry!.decision).toMatchObject({ reproduced: false })
    expect(entry!.decision!.differences[0]).toMatch(/^host: recorded w\d \(box-w\d\), now w\d \(box-w\d\)$/)
  })
})
