/**
 * Run decisions, pure: each answers the events to append to the run's stream (against the
 * version it was decided on) or a rejection that changes nothing. Time, ids and the placement
 * inputs arrive in the command; the owner runtime gathers them, calls these live, and journals
 * what they decide, so an auditor can re-run every placement from its recorded inputs.
 */
import { canonicalJson } from "./Values.js"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import {
  AttemptCeased,
  AttemptDeclined,
  AttemptReported,
  AttemptStarted,
  AttemptSuperseded,
  PlacementDecided,
  RunStopRequested,
  RunSubmitted,
  runStream,
  type Event,
  type PlacementRecord,
  type RunJob
} from "../journal/Events.js"
import type { FeasibilityCache } from "../placement/Feasibility.js"
import { place, PLACEMENT_RULES, type Activity, type Candidate, type CandidateVerdict, type Outcome, type Quotas } from "../placement/Placement.js"
import { ACTIVE, attemptId, lastAttempt, placedRun, placementKey, submittedRun, TERMINAL, type AttemptRecord, type RunRecord, type RunsState } from "./Runs.js"

export type RunRejectionCode = "unknown-run" | "run-exists" | "run-finished" | "unknown-activity" | "superseded" | "out-of-scope" | "already-reported"

export interface RunRejection {
  readonly _tag: "Rejected"
  readonly code: RunRejectionCode
  readonly message: string
}

export interface RunDecision {
  readonly _tag: "Decided"
  readonly stream: string
  readonly expectedVersion: number
  readonly events: ReadonlyArray<Event>
  /**
   * A placement not made now, for a worker not heard from since the owner started that may take
   * the run (`callingBack`): the run stays pending, its decision made when the worker calls.
   */
  readonly awaitingWorkers?: true
}

const reject = (code: RunRejectionCode, message: string): RunRejection => ({ _tag: "Rejected", code, message })
const decided = (run: { readonly id: string; readonly streamVersion: number }, events: ReadonlyArray<Event>): RunDecision => ({
  _tag: "Decided",
  stream: runStream(run.id),
  expectedVersion: run.streamVersion,
  events
})

type Found = { readonly _tag: "Found"; readonly run: RunRecord } | RunRejection
const findRun = (runs: RunsState, runId: string): Found => {
  const found = HashMap.get(runs.runs, runId)
  return found._tag === "Some" ? { _tag: "Found", run: found.value } : reject("unknown-run", `no run ${runId} on this owner`)
}

export const decideSubmit = (
  c: { readonly runId: string; readonly job: RunJob; readonly input: unknown; readonly preferredLabels: ReadonlyArray<string>; readonly actor: string; readonly key?: string; readonly now: number },
  runs: RunsState
): RunDecision | RunRejection =>
  HashMap.has(runs.runs, c.runId)
    ? reject("run-exists", `run ${c.runId} exists already`)
    : {
        _tag: "Decided",
        stream: runStream(c.runId),
        expectedVersion: 0,
        events: [new RunSubmitted({ runId: c.runId, job: c.job, input: c.input, preferredLabels: c.preferredLabels, actor: c.actor, ...(c.key === undefined ? {} : { key: c.key }), at: c.now })]
      }

/**
 * Whether a submission with an idempotency key is the one that made `run` (its id derived from
 * that key): the same key, job and input, and the same preferences. Answers what differs, or
 * undefined when it is the same submission (which is answered with that run, not made again).
 */
export const sameSubmission = (run: RunRecord, c: { readonly key: string; readonly address: string; readonly input: unknown; readonly preferredLabels: ReadonlyArray<string> }): string | undefined => {
  if (run.key !== c.key) return `run ${run.id} was not submitted with this key`
  if (run.job.address !== c.address) return `it was submitted as a run of ${run.job.address}, not ${c.address}`
  if (canonicalJson(run.input) !== canonicalJson(c.input)) return "it was submitted with another input"
  if (run.preferredLabels.join("\n") !== c.preferredLabels.join("\n")) return `it was submitted with other preferences (${run.preferredLabels.length === 0 ? "none" : run.preferredLabels.join(", ")})`
  return undefined
}

/**
 * The run as the fold will hold it once `decision` commits, for a decider that continues the
 * decision in the same command (a placement after a submission, a claim's start after a
 * placement): the run's own record only, without the projections' indexes or a placement's
 * summary, which those deciders do not read (nor the sequence, not known yet).
 */
const runAfter = (runs: RunsState, decision: RunDecision): RunRecord | undefined => {
  const first = decision.events[0]
  let run = first !== undefined && "runId" in first ? Option.getOrUndefined(HashMap.get(runs.runs, first.runId)) : undefined
  decision.events.forEach((e, i) => {
    if (e._tag === "RunSubmitted") run = submittedRun(e, 0, decision.expectedVersion + i + 1)
    else if (e._tag === "PlacementDecided" && run !== undefined) run = { ...placedRun(run, e), streamVersion: decision.expectedVersion + i + 1 }
  })
  return run
}

/**
 * Submits a run and places it in the same command: one commit instead of two before a waiting
 * worker hears of it. The placement is the one the scheduler would make next, decided on the
 * state with the run submitted (the candidates do not depend on the run, only on its job).
 * The caller places inline only when no earlier run is still waiting for room (it would jump
 * the queue); otherwise it submits alone and the scheduler places in order.
 */
export const decideSubmitAndPlace = (
  c: Parameters<typeof decideSubmit>[0] & Omit<PlacementInputs, "runId" | "now">,
  runs: RunsState
): RunDecision | RunRejection => {
  const submitted = decideSubmit(c, runs)
  if (submitted._tag === "Rejected") return submitted
  const placed: RunDecision = placeRun(
    {
      runId: c.runId,
      candidates: c.candidates,
      quotas: c.quotas,
      notes: c.notes,
      now: c.now,
      ...(c.cache === undefined ? {} : { cache: c.cache }),
      ...(c.restartGraceUntil === undefined ? {} : { restartGraceUntil: c.restartGraceUntil }),
      ...(c.helloRecent === undefined ? {} : { helloRecent: c.helloRecent })
    },
    runAfter(runs, submitted)!
  )
  return { ...submitted, events: [...submitted.events, ...placed.events], ...(placed.awaitingWorkers === true ? { awaitingWorkers: true as const } : {}) }
}

/** A host that declined the same run this many times is not offered it again (a worker that says it holds a job and declines it all the same). */
export const MAX_DECLINES = 3

/** How many attempts of the run `host` declined, and when it declined the latest. */
export const declinesOf = (run: RunRecord, host: string): { readonly count: number; readonly lastAt: number | undefined } => {
  let count = 0
  let lastAt: number | undefined
  for (const a of run.attempts) {
    if (a.host !== host || a.state !== "declined") continue
    count++
    if (a.endedAt !== null && (lastAt === undefined || a.endedAt > lastAt)) lastAt = a.endedAt
  }
  return { count, lastAt }
}

/**
 * The hosts whose decline of the run still stands. A decline was about what the host held at
 * that moment (its bag being reinstalled, say); a host heard to offer what it holds after its
 * latest decline of the run (`heardAt`: a worker's advertisement, a refresh of the same content
 * too; for the owner, the app's word that it holds the bag the run pins again) is judged again
 * by what it offers now, unless it declined the run `MAX_DECLINES` times. Undefined `heardAt`, or
 * a host heard of no later: the decline stands. The runs audit saw a run blocked by a decline for
 * good once the bag was back; its attack, with a bag removed and installed again between two
 * advertisements (nothing journaled), when the rule waited for the advertisement to change.
 */
export const standingDeclines = (run: RunRecord, heardAt?: (host: string) => number | undefined): ReadonlyArray<string> => {
  if (run.declinedBy.length === 0 || heardAt === undefined) return run.declinedBy
  const standing = run.declinedBy.filter((host) => {
    const heard = heardAt(host)
    if (heard === undefined) return true
    const { count, lastAt } = declinesOf(run, host)
    return lastAt === undefined || count >= MAX_DECLINES || heard <= lastAt
  })
  // The same list when nothing was lifted: the feasibility cache and the journal's packing see the very same value.
  return standing.length === run.declinedBy.length ? run.declinedBy : standing
}

/**
 * What placement sees of a run. The activity id is the run id, so its tie-break is stable across
 * attempts. `heardAt`: when each host was last heard to offer what it holds (`standingDeclines`).
 */
export const activityOf = (run: RunRecord, heardAt?: (host: string) => number | undefined): Activity => ({
  id: run.id,
  address: run.job.address,
  digest: run.job.digest,
  executor: run.job.executor,
  remoteEligible: run.job.remoteEligible,
  requiredLabels: run.job.requiredLabels,
  requiredBins: run.job.requiredBins,
  preferredLabels: run.preferredLabels,
  bounds: run.job.bounds,
  declinedBy: standingDeclines(run, heardAt),
  rules: PLACEMENT_RULES
})

/**
 * The kind of a pending run, for placement: runs of one kind are judged alike by every layer
 * (the tie-break, by run id, only picks among hosts with room). A run's job is pinned by address
 * and digest, so its executor, eligibility, labels, programs and bounds follow from those; its
 * preferences and its declines that stand are its own. A round that leaves a run unplaced leaves
 * every later run of its kind unplaced as well (nothing it places frees a slot): the scheduler
 * decides the first of each kind and keeps the rest in line behind it (app/runs/Placements.ts).
 */
export const placementKind = (run: RunRecord, heardAt?: (host: string) => number | undefined): string => {
  const declines = standingDeclines(run, heardAt)
  // Joined with characters no address, digest, label or host id holds (labels are KEY=VALUE words).
  return `${run.job.address}\u0000${run.job.digest}\u0000${run.preferredLabels.join("\u0001")}\u0000${declines.join("\u0001")}`
}

/** How the host was chosen among those with room, for the placement record. */
export const selectionProvenance = (o: Outcome): string => {
  if (o.outcome !== "placed") return o.outcome === "blocked" ? "none: no candidate is eligible" : "none: no eligible candidate has room"
  const room = o.verdicts.filter((v) => v.score !== null)
  const chosen = room.find((v) => v.candidate === o.host)!
  if (room.length === 1) return "the only eligible candidate with room"
  if (chosen.score!.locality > 0) return "locality: the owner keeps what it can run"
  const best = room.filter((v) => v.score!.preference === chosen.score!.preference)
  if (chosen.score!.preference > 0 && best.length === 1) return "stated preference"
  return `deterministic tie-break among ${best.length} equally ranked candidates`
}

export interface PlacementInputs {
  readonly runId: string
  readonly candidates: ReadonlyArray<Candidate>
  readonly quotas: Quotas
  readonly notes: ReadonlyArray<string>
  readonly now: number
  /** The dispatcher's feasibility cache: the same outcome, sooner (placement/Placement.ts). */
  readonly cache?: FeasibilityCache
  /** When each host was last heard to offer what it holds: a decline before it no longer stands (`standingDeclines`). */
  readonly heardAt?: (host: string) => number | undefined
  /**
   * Until when the owner, restarted, gives its workers time to call back (docs/runs.md, "After a
   * restart"): till then a decision that places nothing, while a worker not heard from since the
   * start would be eligible by its last advertisement, is not made (`callingBack`).
   */
  readonly restartGraceUntil?: number
  /**
   * Whether a worker said hello a moment ago and its session's first advertisement is still on its
   * way (milliseconds behind it): a decision that places nothing while such a worker is excluded for
   * that alone is not made (`helloPending`), since that advertisement asks for a round at once. A
   * worker restarting recorded two decisions per waiting run that changed nothing (attack).
   */
  readonly helloRecent?: (host: string) => boolean
}

/** Whether a worker that said hello a moment ago (`recent`) may take the run: its exclusion is only that its advertisement has not come yet. */
export const helloPending = (candidates: ReadonlyArray<Candidate>, verdicts: ReadonlyArray<CandidateVerdict>, recent: (host: string) => boolean): boolean => {
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!
    if (c.silence !== "hello" || c.revoked || !recent(c.id)) continue
    const exclusions = verdicts[i]?.exclusions ?? []
    if (exclusions.length === 1 && exclusions[0]!.code === "advertisement-expired") return true
  }
  return false
}

/**
 * Whether a worker may soon take the run: nothing heard from it since the owner started, or only
 * its hello (its advertisement follows), and its last advertisement excludes it for nothing else. Placing nothing now would record the run
 * blocked (or waiting) only because the owner has not heard from its workers yet.
 */
export const callingBack = (candidates: ReadonlyArray<Candidate>, verdicts: ReadonlyArray<CandidateVerdict>): boolean => {
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!
    if ((c.silence !== "unheard" && c.silence !== "hello") || c.revoked) continue
    const exclusions = verdicts[i]?.exclusions ?? []
    if (exclusions.length === 1 && exclusions[0]!.code === "advertisement-expired") return true
  }
  return false
}

/**
 * Places a pending run. A placed decision assigns the next attempt to its host; on the owner
 * it starts at once. A blocked or waiting decision equal to the last recorded one (same
 * outcome, the same exclusions for the same candidates: `placementKey`) is not recorded again.
 */
export const decidePlacement = (c: PlacementInputs, runs: RunsState): RunDecision | RunRejection => {
  const found = findRun(runs, c.runId)
  return found._tag === "Rejected" ? found : placeRun(c, found.run)
}

const placeRun = (c: PlacementInputs, run: RunRecord): RunDecision => {
  if (run.state !== "pending") return decided(run, [])
  const activity = activityOf(run, c.heardAt)
  const outcome = place(activity, c.candidates, c.quotas, c.cache)
  const host = outcome.outcome === "placed" ? outcome.host : null
  if (host === null && c.restartGraceUntil !== undefined && c.now < c.restartGraceUntil && callingBack(c.candidates, outcome.verdicts)) {
    return { ...decided(run, []), awaitingWorkers: true }
  }
  // Not for a run last placed (pending again: its attempt ceased or was superseded), whose explanation would go on saying it was placed.
  if (host === null && c.helloRecent !== undefined && run.placement?.outcome !== "placed" && helloPending(c.candidates, outcome.verdicts, c.helloRecent)) return decided(run, [])
  const key = placementKey({ ...outcome, host })
  if (host === null && run.placement !== null && run.placement.key === key) return decided(run, [])
  const attempt = host === null ? null : run.attempts.length + 1
  const record: PlacementRecord = {
    executionHost: host,
    inferenceEndpoint: null,
    requestedModel: null,
    resolvedModel: null,
    selectionProvenance: selectionProvenance(outcome),
    limits: { timeoutMs: run.job.timeoutMs, bounds: run.job.bounds }
  }
  const events: Array<Event> = [
    // Built from values typed end to end and just computed here; checking them again against the
    // schema cost more than the whole decision (bench/dispatch). Reading the journal still checks.
    new PlacementDecided(
      {
        runId: run.id,
        attempt,
        activity,
        candidates: c.candidates,
        quotas: c.quotas,
        notes: c.notes,
        outcome: outcome.outcome,
        host,
        verdicts: outcome.verdicts,
        record,
        at: c.now
      },
      true
    )
  ]
  if (host === "owner" && attempt !== null) events.push(new AttemptStarted({ runId: run.id, attempt, host, fence: null, at: c.now }))
  return decided(run, events)
}

const inScope = (scope: ReadonlyArray<string>, address: string) => scope.length === 0 || scope.includes(address)

/** The attempt `n` of a run (undefined: not found), if `host` holds it. */
const attemptIn = (run: RunRecord | undefined, runId: string, n: number, host: string): readonly [RunRecord, AttemptRecord] | RunRejection => {
  const attempt = run?.attempts.find((a) => a.n === n)
  if (run === undefined || attempt === undefined || attempt.host !== host) return reject("unknown-activity", `no activity attempt ${attemptId(runId, n)} is placed on this worker`)
  return [run, attempt]
}
const attemptOn = (runs: RunsState, runId: string, n: number, host: string) => attemptIn(Option.getOrUndefined(HashMap.get(runs.runs, runId)), runId, n, host)

type ClaimCommand = { readonly workerId: string; readonly scope: ReadonlyArray<string>; readonly fence: number; readonly runId: string; readonly attempt: number; readonly now: number }

/** A worker takes an attempt placed on it: the attempt starts, under the worker's session fence. */
export const decideClaim = (c: ClaimCommand, runs: RunsState): RunDecision | RunRejection => claimRun(c, attemptOn(runs, c.runId, c.attempt, c.workerId))

const claimRun = (c: ClaimCommand, found: readonly [RunRecord, AttemptRecord] | RunRejection): RunDecision | RunRejection => {
  if ("_tag" in found) return found
  const [run, attempt] = found
  if (!inScope(c.scope, run.job.address)) return reject("out-of-scope", `${run.job.address} is outside this worker's scope`)
  if (attempt.state !== "assigned") return reject("superseded", `attempt ${attemptId(run.id, attempt.n)} is ${attempt.state}, not waiting to be claimed`)
  return decided(run, [new AttemptStarted({ runId: run.id, attempt: attempt.n, host: c.workerId, fence: c.fence, at: c.now })])
}

/** A claim waiting for work on a worker, as a hand-off sees it. */
export interface WaitingClaim {
  readonly workerId: string
  readonly scope: ReadonlyArray<string>
  readonly fence: number
}

/**
 * A placement on a worker that has a claim waiting for work: the attempt starts in the
 * placement's own commit (the claim's `AttemptStarted` after the `PlacementDecided`), so the
 * waiting claim is answered after one durable commit instead of two. `claimOn` names the waiting
 * claim of a host, if there is one. Nothing else changes: with no placement on a worker, no
 * claim waiting there, or a claim the attempt cannot start for (`decideClaim` refuses it), the
 * decision is answered as it was, and the worker claims the assigned attempt as before.
 */
export const decideHandOff = (decision: RunDecision, runs: RunsState, claimOn: (host: string) => WaitingClaim | undefined, now: number): RunDecision => {
  let placed: PlacementDecided | undefined
  for (const e of decision.events) if (e._tag === "PlacementDecided") placed = e
  if (placed === undefined || placed.host === null || placed.host === "owner" || placed.attempt === null) return decision
  const claim = claimOn(placed.host)
  if (claim === undefined || claim.workerId !== placed.host) return decision
  const c = { workerId: claim.workerId, scope: claim.scope, fence: claim.fence, runId: placed.runId, attempt: placed.attempt, now }
  const started = claimRun(c, attemptIn(runAfter(runs, decision), c.runId, c.attempt, c.workerId))
  return started._tag === "Rejected" ? decision : { ...decision, events: [...decision.events, ...started.events] }
}

export const decideDecline = (
  c: { readonly workerId: string; readonly scope: ReadonlyArray<string>; readonly runId: string; readonly attempt: number; readonly reason: string; readonly now: number },
  runs: RunsState
): RunDecision | RunRejection => {
  const found = attemptOn(runs, c.runId, c.attempt, c.workerId)
  if ("_tag" in found) return found
  const [run, attempt] = found
  if (!inScope(c.scope, run.job.address)) return reject("out-of-scope", `${run.job.address} is outside this worker's scope`)
  if (attempt.state === "declined") return decided(run, [])
  if (!ACTIVE.has(attempt.state) && attempt.state !== "stopping") return reject("superseded", `attempt ${attemptId(run.id, attempt.n)} is ${attempt.state}: its decline changes nothing`)
  return decided(run, [new AttemptDeclined({ runId: run.id, attempt: attempt.n, host: c.workerId, reason: c.reason, at: c.now })])
}

export interface ReportCommand {
  readonly host: string
  readonly scope: ReadonlyArray<string>
  readonly runId: string
  readonly attempt: number
  readonly ok: boolean
  readonly result: unknown
  readonly error: string | null
  readonly exitCode: number | null
  /** How long the job ran, as its host measured it (when it said). */
  readonly ranMs?: number
  readonly now: number
}

/**
 * A report, fenced by attempt: only the attempt the host is running (or was told to stop) may
 * report. A retry of a recorded report is answered as the first was and recorded once; a report
 * for a superseded attempt is refused (its activity was placed again: at-least-once).
 */
export const decideReport = (c: ReportCommand, runs: RunsState): RunDecision | RunRejection => {
  const found = attemptOn(runs, c.runId, c.attempt, c.host)
  if ("_tag" in found) return found
  const [run, attempt] = found
  const id = attemptId(run.id, attempt.n)
  if (!inScope(c.scope, run.job.address)) return reject("out-of-scope", `${run.job.address} is outside this worker's scope`)
  switch (attempt.state) {
    case "running":
    case "stopping":
      return decided(run, [
        new AttemptReported({
          runId: run.id,
          attempt: attempt.n,
          host: c.host,
          ok: c.ok,
          result: c.ok ? c.result : null,
          error: c.error,
          exitCode: c.exitCode,
          ...(c.ranMs === undefined ? {} : { ranMs: c.ranMs }),
          at: c.now
        })
      ])
    case "reported":
      return decided(run, [])
    case "assigned":
      return reject("unknown-activity", `attempt ${id} was never claimed, so it cannot report`)
    case "declined":
      return reject("superseded", `attempt ${id} was declined`)
    case "superseded":
    case "ceased":
      return reject("superseded", `attempt ${id} was superseded (${attempt.reason ?? "placed again"}): its activity was placed again, and this late report is refused`)
  }
}

/** The attempt no longer counts; one never claimed never ran, so its slot is free at once. */
export const decideSupersede = (c: { readonly runId: string; readonly attempt: number; readonly reason: string; readonly now: number }, runs: RunsState): RunDecision | RunRejection => {
  const found = findRun(runs, c.runId)
  if (found._tag === "Rejected") return found
  const run = found.run
  const attempt = run.attempts.find((a) => a.n === c.attempt)
  if (attempt === undefined || !ACTIVE.has(attempt.state)) return decided(run, [])
  const events: Array<Event> = [new AttemptSuperseded({ runId: run.id, attempt: attempt.n, host: attempt.host, reason: c.reason, at: c.now })]
  if (attempt.state === "assigned") events.push(new AttemptCeased({ runId: run.id, attempt: attempt.n, host: attempt.host, reason: "never claimed", at: c.now }))
  return decided(run, events)
}

/** The host is observed no longer running a superseded or stopped attempt: its slot is free. */
export const decideCease = (c: { readonly runId: string; readonly attempt: number; readonly reason: string; readonly now: number }, runs: RunsState): RunDecision | RunRejection => {
  const found = findRun(runs, c.runId)
  if (found._tag === "Rejected") return found
  const run = found.run
  const attempt = run.attempts.find((a) => a.n === c.attempt)
  if (attempt === undefined || !attempt.holdsSlot || ACTIVE.has(attempt.state)) return decided(run, [])
  return decided(run, [new AttemptCeased({ runId: run.id, attempt: attempt.n, host: attempt.host, reason: c.reason, at: c.now })])
}

/** Stops a run wherever it is: no more placement; an attempt never claimed frees its slot now. */
/** Stopping a finished run is refused (a forgotten run too: only settled runs are forgotten). */
export const alreadyFinished = (run: RunRecord): RunRejection => reject("run-finished", `run ${run.id} has already ${run.state === "stopped" ? "been stopped" : run.state}`)

export const decideStop = (c: { readonly runId: string; readonly actor: string; readonly now: number }, runs: RunsState): RunDecision | RunRejection => {
  const found = findRun(runs, c.runId)
  if (found._tag === "Rejected") return found
  const run = found.run
  if (TERMINAL.has(run.state)) return alreadyFinished(run)
  const events: Array<Event> = [new RunStopRequested({ runId: run.id, actor: c.actor, at: c.now })]
  const last = lastAttempt(run)
  if (last !== undefined && last.state === "assigned" && last.host !== "owner") {
    events.push(new AttemptCeased({ runId: run.id, attempt: last.n, host: last.host, reason: "stopped before it was claimed", at: c.now }))
  }
  return decided(run, events)
}
