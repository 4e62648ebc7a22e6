/**
 * Runs and their attempts, folded from the journal (docs/runs.md). A run is submitted on the
 * owner, placed (or left blocked or waiting, with the reason), and each placement starts an
 * attempt on one host. An attempt holds one physical slot of its host from placement until the
 * host is known to have stopped it: a report, a decline, or an observed cessation.
 *
 * Pure: time comes from the events.
 */
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"
import type { Envelope, PlacementDecided, PlacementRecord, RunJob, RunSubmitted } from "../journal/Events.js"
import { verdictTableOf } from "../journal/PlacementPacking.js"
import { explainTable, type VerdictTable } from "../placement/Placement.js"

/** Every run state, in lifecycle order (what `svc runs list --state` takes). */
export const RUN_STATES = ["pending", "assigned", "running", "succeeded", "failed", "stopped"] as const
export type RunState = (typeof RUN_STATES)[number]
export type AttemptState = "assigned" | "running" | "reported" | "declined" | "superseded" | "stopping" | "ceased"

export const TERMINAL: ReadonlySet<RunState> = new Set(["succeeded", "failed", "stopped"])
/** Attempt states in which the host may still be running it. */
export const ACTIVE: ReadonlySet<AttemptState> = new Set(["assigned", "running"])

export interface AttemptRecord {
  readonly n: number
  /** `owner` or a worker id. */
  readonly host: string
  readonly state: AttemptState
  /** One physical slot of the host is held until the host is known to have stopped it. */
  readonly holdsSlot: boolean
  readonly assignedAt: number
  readonly startedAt: number | null
  /** The worker session that claimed it. */
  readonly fence: number | null
  readonly endedAt: number | null
  /** How long its job ran, as its host measured it (a report that said so); `endedAt` is when the report arrived. */
  readonly ranMs?: number
  /**
   * A reported attempt: whether its job succeeded. The run says so too, but not a run already
   * stopped when the report came (stop wins), whose attempt alone keeps it.
   */
  readonly ok?: boolean
  /** Why it ended, was declined or superseded; the error of a failed report. */
  readonly reason: string | null
}

/**
 * Excluded hosts named in a run's kept explanation at most: it is kept with every run, so its
 * size must not grow with the fleet. The journaled decision has every verdict (`svc journal
 * export`).
 */
export const EXPLAINED_HOSTS = 20

export interface PlacementSummary {
  readonly outcome: "placed" | "blocked" | "waiting"
  readonly host: string | null
  readonly explanation: string
  /** Outcome, host and every candidate's exclusion codes: an unchanged decision is not journaled again. */
  readonly key: string
  readonly record: PlacementRecord
  readonly notes: ReadonlyArray<string>
  readonly at: number
  readonly sequence: number
}

export interface RunRecord {
  readonly id: string
  readonly job: RunJob
  readonly input: unknown
  readonly preferredLabels: ReadonlyArray<string>
  readonly actor: string
  /** The idempotency key it was submitted with (`svc run --idempotency-key`); absent without one. */
  readonly key?: string
  readonly submittedAt: number
  /** Journal sequence of the submission: the order runs are placed in. */
  readonly submittedSequence: number
  readonly state: RunState
  readonly attempts: ReadonlyArray<AttemptRecord>
  readonly declinedBy: ReadonlyArray<string>
  readonly placement: PlacementSummary | null
  readonly placements: number
  readonly result: unknown
  readonly error: string | null
  readonly finishedAt: number | null
  readonly stoppedBy: string | null
  readonly streamVersion: number
}

export interface RunsState {
  readonly runs: HashMap.HashMap<string, RunRecord>
  /** Runs not finished yet, by submission sequence (what a round checks for lapsed and unclaimed attempts). */
  readonly open: HashMap.HashMap<string, number>
  /** Per host, the attempts holding one of its slots (an index: what a worker's calls reconcile). */
  readonly held: HashMap.HashMap<string, ReadonlyArray<string>>
  /**
   * Runs in state `pending` (no attempt counts: to place, or waiting, or blocked), by submission
   * sequence: the scheduler's work list, so that a round or a submission looks at these and not
   * at every run in flight. An index, like `open` and `held`: not part of the canonical state.
   */
  readonly pending: HashMap.HashMap<string, number>
  /**
   * Retention (docs/runs.md, "Runs kept in memory"): settled runs (finished, no slot held) in
   * two generations of at most `retain` each. When the newer one fills up, the runs of the older
   * one are forgotten (dropped from `runs`; their streams stay in the journal, where `svc runs
   * show` reads them) and the newer one becomes the older. So memory holds every run in flight
   * and the `retain` to `2 x retain - 1` most recently settled ones, whatever the journal's length.
   * Decided by the fold from events alone: live and replayed states forget the same runs.
   */
  readonly settled: HashSet.HashSet<string>
  readonly settledBefore: HashSet.HashSet<string>
  /** How many settled runs were forgotten so far. */
  readonly forgotten: number
  /** The size of a generation of settled runs (RETAINED_SETTLED_RUNS; smaller in tests). */
  readonly retain: number
}

/** Settled runs per generation kept in memory (between this many and twice as many are kept). */
export const RETAINED_SETTLED_RUNS = 5_000

/** The empty runs state, keeping `retain` settled runs per generation. */
export const emptyRuns = (retain: number = RETAINED_SETTLED_RUNS): RunsState => {
  if (!Number.isInteger(retain) || retain < 1) throw new RangeError(`retain must be a positive integer, not ${retain}`)
  return { runs: HashMap.empty(), open: HashMap.empty(), held: HashMap.empty(), pending: HashMap.empty(), settled: HashSet.empty(), settledBefore: HashSet.empty(), forgotten: 0, retain }
}

export const initialRuns: RunsState = emptyRuns()

/** Finished, and no host holds a slot for it: nothing it can still change (a late report is refused). */
export const isSettled = (run: RunRecord): boolean => TERMINAL.has(run.state) && run.attempts.every((a) => !a.holdsSlot)

/**
 * A run that just settled joins the newer generation; a full generation retires the older
 * one, whose runs are forgotten. The maps may be open for mutation (a fold): every update is
 * by assignment, as for the other maps.
 */
const settle = (state: RunsState, id: string): RunsState => {
  const settled = HashSet.add(state.settled, id)
  if (HashSet.size(settled) < state.retain) return { ...state, settled }
  let runs = state.runs
  let forgotten = state.forgotten
  for (const old of state.settledBefore) {
    // Settled is final for the deciders; a run an event changed since (none should) is kept.
    const run = HashMap.get(runs, old)
    if (run._tag === "None" || !isSettled(run.value)) continue
    runs = HashMap.remove(runs, old)
    forgotten++
  }
  return { ...state, runs, settled: HashSet.empty(), settledBefore: settled, forgotten }
}

const hold = (held: RunsState["held"], host: string, attempt: string): RunsState["held"] =>
  HashMap.set(held, host, [...Option.getOrElse(HashMap.get(held, host), () => [] as ReadonlyArray<string>), attempt])
const unhold = (held: RunsState["held"], host: string, attempt: string): RunsState["held"] => {
  const current = Option.getOrElse(HashMap.get(held, host), () => [] as ReadonlyArray<string>)
  if (!current.includes(attempt)) return held
  const rest = current.filter((a) => a !== attempt)
  return rest.length === 0 ? HashMap.remove(held, host) : HashMap.set(held, host, rest)
}

export const attemptId = (runId: string, n: number) => `${runId}.${n}`

const RUN_ID = "r[A-Za-z0-9]+"
const RUN_ID_ONLY = new RegExp(`^${RUN_ID}$`)
const ATTEMPT_ID = new RegExp(`^(${RUN_ID})\\.([1-9][0-9]{0,5})$`)

/** Whether `id` has the form of a run id (`r` and base62). */
export const isRunId = (id: string): boolean => RUN_ID_ONLY.test(id)

/** `r1a2b.3` -> run `r1a2b`, attempt 3; anything else: undefined. */
export const parseAttemptId = (id: string): { readonly runId: string; readonly attempt: number } | undefined => {
  const m = ATTEMPT_ID.exec(id)
  return m === null ? undefined : { runId: m[1]!, attempt: Number(m[2]) }
}

export const lastAttempt = (run: RunRecord): AttemptRecord | undefined => run.attempts[run.attempts.length - 1]

const withAttempt = (run: RunRecord, n: number, f: (a: AttemptRecord) => AttemptRecord): RunRecord => ({
  ...run,
  attempts: run.attempts.map((a) => (a.n === n ? f(a) : a))
})

/** The run's new record; `wasSettled`: whether its record before this event was settled. */
const finish = (state: RunsState, id: string, run: RunRecord, wasSettled: boolean, held: RunsState["held"] = state.held): RunsState => {
  const next: RunsState = {
    ...state,
    runs: HashMap.set(state.runs, id, run),
    open: TERMINAL.has(run.state) ? HashMap.remove(state.open, id) : state.open,
    held,
    pending:
      run.state === "pending"
        ? HashMap.has(state.pending, id)
          ? state.pending
          : HashMap.set(state.pending, id, run.submittedSequence)
        : HashMap.has(state.pending, id)
          ? HashMap.remove(state.pending, id)
          : state.pending
  }
  return !wasSettled && isSettled(run) ? settle(next, id) : next
}

/** A run as its submission makes it, at that sequence and stream version. */
export const submittedRun = (e: RunSubmitted, sequence: number, streamVersion: number): RunRecord => ({
  id: e.runId,
  job: e.job,
  input: e.input,
  preferredLabels: e.preferredLabels,
  actor: e.actor,
  // Absent without one: the projections' canonical form, and so earlier checkpoints, stay as they were.
  ...(e.key === undefined ? {} : { key: e.key }),
  submittedAt: e.at,
  submittedSequence: sequence,
  state: "pending",
  attempts: [],
  declinedBy: [],
  placement: null,
  placements: 0,
  result: null,
  error: null,
  finishedAt: null,
  stoppedBy: null,
  streamVersion
})

/**
 * A run as a decision leaves it, but for the decision's summary (`placement`, which the fold
 * adds): a placement that chose a host assigns it the decision's attempt.
 */
export const placedRun = (before: RunRecord, e: PlacementDecided): RunRecord => {
  const placed = e.outcome === "placed" && e.host !== null && e.attempt !== null
  return {
    ...before,
    placements: before.placements + 1,
    state: placed ? "assigned" : before.state,
    attempts: placed
      ? [...before.attempts, { n: e.attempt!, host: e.host!, state: "assigned", holdsSlot: true, assignedAt: e.at, startedAt: null, fence: null, endedAt: null, reason: null }]
      : before.attempts
  }
}

export const evolveRuns = (state: RunsState, envelope: Envelope): RunsState => {
  const e = envelope.event
  if (e._tag === "RunSubmitted") {
    const run = submittedRun(e, envelope.sequence, envelope.streamVersion)
    return {
      ...state,
      runs: HashMap.set(state.runs, e.runId, run),
      open: HashMap.set(state.open, e.runId, envelope.sequence),
      pending: HashMap.set(state.pending, e.runId, envelope.sequence)
    }
  }
  if (!("runId" in e)) return state
  const found = HashMap.get(state.runs, e.runId)
  if (found._tag === "None") return state
  const before = { ...found.value, streamVersion: envelope.streamVersion }
  const terminal = TERMINAL.has(before.state)
  const was = isSettled(before)
  switch (e._tag) {
    case "PlacementDecided": {
      // Read through a table: a decision read from the journal is explained and keyed from its
      // stored rows, without making its verdicts.
      const table = verdictTableOf(e)
      const placement: PlacementSummary = {
        outcome: e.outcome,
        host: e.host,
        explanation: explainTable(e.outcome, e.host, table, EXPLAINED_HOSTS),
        key: placementKeyOf(e.outcome, e.host, table),
        record: e.record,
        notes: e.notes,
        at: e.at,
        sequence: envelope.sequence
      }
      const placed = e.outcome === "placed" && e.host !== null && e.attempt !== null
      const run: RunRecord = { ...placedRun(before, e), placement }
      return finish(state, e.runId, run, was, placed ? hold(state.held, e.host!, attemptId(e.runId, e.attempt!)) : state.held)
    }
    case "AttemptStarted": {
      const run = withAttempt(before, e.attempt, (a) => ({ ...a, state: "running", startedAt: e.at, fence: e.fence }))
      return finish(state, e.runId, terminal ? run : { ...run, state: "running" }, was)
    }
    case "AttemptDeclined": {
      const run = withAttempt(before, e.attempt, (a) => ({ ...a, state: "declined", holdsSlot: false, endedAt: e.at, reason: e.reason }))
      return finish(
        state,
        e.runId,
        { ...run, declinedBy: run.declinedBy.includes(e.host) ? run.declinedBy : [...run.declinedBy, e.host], state: terminal ? run.state : "pending" },
        was,
        unhold(state.held, e.host, attemptId(e.runId, e.attempt))
      )
    }
    case "AttemptReported": {
      const run = withAttempt(before, e.attempt, (a) => ({ ...a, state: "reported", holdsSlot: false, endedAt: e.at, reason: e.error, ...(e.ranMs === undefined ? {} : { ranMs: e.ranMs }), ok: e.ok }))
      const held = unhold(state.held, e.host, attemptId(e.runId, e.attempt))
      if (terminal) return finish(state, e.runId, run, was, held)
      return finish(state, e.runId, { ...run, state: e.ok ? "succeeded" : "failed", result: e.ok ? e.result : null, error: e.error, finishedAt: e.at }, was, held)
    }
    case "AttemptSuperseded": {
      const run = withAttempt(before, e.attempt, (a) => ({ ...a, state: "superseded", endedAt: e.at, reason: e.reason }))
      return finish(state, e.runId, terminal ? run : { ...run, state: "pending" }, was)
    }
    case "AttemptCeased":
      return finish(
        state,
        e.runId,
        withAttempt(before, e.attempt, (a) => ({ ...a, state: a.state === "reported" || a.state === "declined" ? a.state : "ceased", holdsSlot: false, endedAt: a.endedAt ?? e.at, reason: a.reason ?? e.reason })),
        was,
        unhold(state.held, e.host, attemptId(e.runId, e.attempt))
      )
    case "RunStopRequested": {
      const run = { ...before, state: "stopped" as const, finishedAt: e.at, stoppedBy: e.actor, error: "stopped by the operator" }
      return finish(state, e.runId, { ...run, attempts: run.attempts.map((a) => (ACTIVE.has(a.state) ? { ...a, state: "stopping" as const } : a)) }, was)
    }
    default:
      return state
  }
}

/**
 * The identity of a decision for "has anything changed since the last one recorded": outcome,
 * host and every candidate's exclusions, hashed to 104 bits (kept with every run, so its size
 * must not grow with the fleet). An eligibility exclusion by its code and text: a worker whose
 * labels were swapped lacks another label under the same code, and a key of codes alone kept the
 * run saying it lacked the one it now has (fleet audit); no text holds a time that moves on its
 * own. A capacity exclusion by its code, capacity and what was requested, not by how many are in
 * use: a full host's use moves with other work (3 of 2 in use, then 2 of 2) without making the
 * decision another one, while a capacity changed is a change of the host's settings. Two
 * different decisions of one run hashing alike (odds about 2^-104) would leave the newer one
 * unjournaled until the decision changes again.
 */
export const placementKey = (o: {
  readonly outcome: string
  readonly host: string | null
  readonly verdicts: ReadonlyArray<{ readonly candidate: string; readonly exclusions: ReadonlyArray<KeyedExclusion> }>
}): string => {
  const v = o.verdicts
  return placementKeyOf(o.outcome, o.host, {
    size: v.length,
    candidate: (i) => v[i]!.candidate,
    exclusionCount: (i) => v[i]!.exclusions.length,
    exclusion: (i, j) => v[i]!.exclusions[j]!
  })
}

/** What keying a decision reads of its verdicts. */
type VerdictCodes = Pick<VerdictTable, "size" | "candidate" | "exclusionCount"> & { exclusion(i: number, j: number): KeyedExclusion }

/** What keying reads of an exclusion: a capacity one has `capacity` and `requested` (and `used`, not keyed). */
type KeyedExclusion = { readonly code: string; readonly text: string; readonly capacity?: number; readonly requested?: number; readonly used?: number }

/** `placementKey` of an outcome whose verdicts are read from `t` (a `VerdictTable`). */
export const placementKeyOf = (outcome: string, host: string | null, t: VerdictCodes): string => {
  // The text `outcome|host|candidate:code=text,code/capacity/requested;candidate:...`, fed to the hash piece by piece
  // instead of being built: a decision over many hosts made a hundred strings and their join.
  const h = new Cyrb53x2()
  h.add(outcome)
  h.add("|")
  h.add(host ?? "")
  h.add("|")
  for (let i = 0; i < t.size; i++) {
    if (i > 0) h.add(";")
    h.add(t.candidate(i))
    h.add(":")
    const n = t.exclusionCount(i)
    for (let j = 0; j < n; j++) {
      if (j > 0) h.add(",")
      const e = t.exclusion(i, j)
      h.add(e.code)
      if (e.capacity === undefined) {
        h.add("=")
        h.add(e.text)
      } else {
        h.add("/")
        h.add(String(e.capacity))
        h.add("/")
        h.add(String(e.requested))
      }
    }
  }
  return h.hex()
}

/**
 * cyrb53 (a public-domain 53-bit string hash) with seeds 1 and 2 over the same text at once,
 * fed in pieces: 104 bits, as 28 hex digits.
 */
class Cyrb53x2 {
  private a1 = 0xdeadbeef ^ 1
  private a2 = 0x41c6ce57 ^ 1
  private b1 = 0xdeadbeef ^ 2
  private b2 = 0x41c6ce57 ^ 2
  add(text: string): void {
    let a1 = this.a1
    let a2 = this.a2
    let b1 = this.b1
    let b2 = this.b2
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i)
      a1 = Math.imul(a1 ^ ch, 2654435761)
      a2 = Math.imul(a2 ^ ch, 1597334677)
      b1 = Math.imul(b1 ^ ch, 2654435761)
      b2 = Math.imul(b2 ^ ch, 1597334677)
    }
    this.a1 = a1
    this.a2 = a2
    this.b1 = b1
    this.b2 = b2
  }
  hex(): string {
    return `${finish53(this.a1, this.a2).toString(16).padStart(14, "0")}${finish53(this.b1, this.b2).toString(16).padStart(14, "0")}`
  }
}

const finish53 = (h1: number, h2: number): number => {
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}
