/**
 * The owner's runs (docs/runs.md): admission, placement and stop; the owner's own executions
 * are LocalRuns.ts, the worker side of claims, heartbeats, declines and reports is
 * WorkerCalls.ts, on the same commands, and reading runs (list, show, wait) is RunViews.ts. Every decision is a pure decider of
 * `domain/runs`, journaled through the projections; this module gathers the inputs (the
 * candidates as the owner sees them now) and acts on what was decided.
 *
 * One scheduler fiber places runs, in submission order, whenever something changes, and wakes
 * at the next deadline (an advertisement that lapses, an assignment not claimed in time). Placing one run at a time against the state
 * that the previous placement left is what keeps a host's slots from being promised twice.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type { Envelope } from "../../domain/journal/Events.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { makeFeasibilityCache } from "../../domain/placement/Feasibility.js"
import type { Quotas, Silence } from "../../domain/placement/Placement.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import { ACTIVE, attemptId, lastAttempt, parseAttemptId } from "../../domain/runs/Runs.js"
import { depthProblem, preferenceProblem } from "../../domain/runs/Values.js"
import { ADVERTISEMENT_LIFETIME_MS, advertisementAlive, silenceOf } from "../../domain/workers/DisplayState.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import { base62FromBytes } from "../../domain/workers/Secrets.js"
import { Projections, type AnyDecision, type AnyRejection } from "../journal/Projections.js"
import { Entropy } from "../workers/Entropy.js"
import { Freshness, noteAwake } from "../workers/Freshness.js"
import { type OutputDelta, type Refusal, type Work } from "../workers/Protocol.js"
import { makeCandidates } from "./Candidates.js"
import { makeLocalRuns } from "./LocalRuns.js"
import { Executor } from "./Executor.js"
import { JobNotRunnable, type ResolvedJob } from "./JobCatalog.js"
import { RunFiles } from "./RunFiles.js"
import { makeWaitingClaims } from "./WaitingClaims.js"
import { RunRefused } from "./RunRefused.js"
import { makeRunViews, type RunDetail, type RunFilter, type RunList, type RunView } from "./RunViews.js"
import { makeSlotWaits } from "./SlotWaits.js"
import { heldBy, makeWorkerCalls, refusal } from "./WorkerCalls.js"

export { stopsIn } from "./WorkerCalls.js"
export { RunRefused } from "./RunRefused.js"
export { progressOf, type RunDetail, type RunFilter, type RunList, type RunView } from "./RunViews.js"

/** What the owner offers as an execution host of its own work. */
export interface OwnerHostSettings {
  readonly capacity: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  /** Which of these programs are on the owner's PATH. */
  readonly bins: (programs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>>
  /** Resolves an address against the owner's installed bags. */
  readonly resolve: (address: string) => Effect.Effect<ResolvedJob, JobNotRunnable>
  /**
   * Holds one of this machine's slots while an owner-local attempt runs: the arbiter that keeps
   * the owner's own work and the work it does for other owners within its capacity.
   */
  readonly withSlot: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}
export class OwnerHost extends Context.Tag("svc/OwnerHost")<OwnerHost, OwnerHostSettings>() {}

/** An assigned attempt the worker has not claimed in this time is placed again. */
export const CLAIM_DEADLINE_MS = 30_000
/** After the owner starts, workers get this long to call again before their attempts are superseded. */
export const RESTART_GRACE_MS = ADVERTISEMENT_LIFETIME_MS
const MAX_INPUT_BYTES = 1024 * 1024

export interface DispatcherService {
  readonly submit: (i: { readonly address: string; readonly input: unknown; readonly prefer: ReadonlyArray<string>; readonly actor: string }) => Effect.Effect<RunView, RunRefused>
  readonly list: (filter?: RunFilter) => Effect.Effect<RunList, RunRefused>
  readonly show: (runId: string) => Effect.Effect<RunDetail, RunRefused>
  readonly stop: (runId: string, actor: string) => Effect.Effect<RunView, RunRefused>
  /**
   * Answers when the run has finished, or after `ms` with its state then; with `seen` (the
   * `progressOf` of the view the caller has), also as soon as the run's progress differs from it.
   */
  readonly wait: (runId: string, ms: number, seen?: string) => Effect.Effect<RunView, RunRefused>
  /** The operator confirms a (revoked) worker no longer runs anything: its slots are freed. */
  readonly release: (workerId: string, actor: string, force?: boolean) => Effect.Effect<number, RunRefused>
  /**
   * The installation left, its runtime having stopped what it ran for this owner but `running`
   * (`svc workers leave`): the slots of the others are freed, as a hello's list frees them.
   * Answers how many.
   */
  readonly left: (workerId: string, running: ReadonlyArray<string>) => Effect.Effect<number>
  // The worker route, after authentication and the fence check:
  readonly hello: (worker: WorkerRecord, running: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, Refusal>
  /**
   * With `running` (the worker's attempts, no other claim in flight), a started attempt it does
   * not list is placed again first. With `afterRound` (a report that claims the next), a run
   * waiting for a slot is placed first, by a round of its own, so that the slot the report freed
   * can take it in this answer.
   */
  readonly claim: (worker: WorkerRecord, fence: number, waitMs: number, running?: ReadonlyArray<string>, afterRound?: boolean) => Effect.Effect<Omit<Work, "newCredential"> | null, Refusal>
  /** `waiting`: those of `running` that wait on the worker for a free slot. */
  readonly heartbeat: (worker: WorkerRecord, running: ReadonlyArray<string>, output: ReadonlyArray<OutputDelta>, waiting?: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, Refusal>
  readonly decline: (worker: WorkerRecord, attempt: string, reason: string) => Effect.Effect<void, Refusal>
  readonly report: (
    worker: WorkerRecord,
    attempt: string,
    outcome: { readonly ok: boolean; readonly result?: unknown; readonly error?: string; readonly exitCode?: number | null; readonly durationMs?: number },
    output: OutputDelta | undefined
  ) => Effect.Effect<void, Refusal>
  /** Attempts this worker must stop (stopped runs, superseded attempts it may still run). */
  readonly stopsFor: (workerId: string) => Effect.Effect<ReadonlyArray<string>>
  /** Something changed that may let a run be placed: the scheduler looks again. */
  readonly kick: Effect.Effect<void>
  /**
   * The worker was revoked or its session taken over: its waiting claims look again at once, and
   * are answered as their next call would be (`revoked`, `fenced`), not with no work at the end
   * of their wait.
   */
  readonly wakeClaims: (workerId: string) => Effect.Effect<void>
  /** The worker's process said bye: its waiting claims are answered now, with no work. */
  readonly endClaims: (workerId: string) => Effect.Effect<void>
  /** Why no worker would run `address` now (its bag is not installed here, or only the owner runs it), or undefined: what an invite's scope is checked against. */
  readonly jobProblem: (address: string) => Effect.Effect<string | undefined>
}

export class Dispatcher extends Context.Tag("svc/Dispatcher")<Dispatcher, DispatcherService>() {}


export const make = Effect.gen(function* () {
  const projections = yield* Projections
  const freshness = yield* Freshness
  const executor = yield* Executor
  const files = yield* RunFiles
  const entropy = yield* Entropy
  const host = yield* OwnerHost
  const startedAt = yield* Clock.currentTimeMillis
  // The owner's own executions live in this layer's scope: stopping the owner stops them.
  const scope = yield* Effect.scope

  const wake = yield* Queue.sliding<void>(1)
  /**
   * A deadline learned without a round (an attempt placed in its submission's commit): the
   * scheduler's sleep is shortened to it, no round is run now. Earlier than the true deadline
   * is harmless (that round finds nothing due and computes the next one).
   */
  let hinted: number | null = null
  const rewake = yield* Queue.sliding<void>(1)
  const hint = (at: number) =>
    Effect.suspend(() => {
      hinted = hinted === null ? at : Math.min(hinted, at)
      return Effect.asVoid(Queue.offer(rewake, undefined))
    })
  /**
   * Asks the scheduler for a round. A round only looks at open runs, so with none there is
   * nothing for it to do: a worker coming back from silence (its first refresh after 15 s)
   * then costs no round, which matters when thousands of them come back at once.
   */
  const kick = Effect.flatMap(projections.state, (s) => (HashMap.size(s.runs.open) === 0 ? Effect.void : Effect.asVoid(Queue.offer(wake, undefined))))
  /** A round only when a run waits to be placed. */
  const kickToPlace = Effect.flatMap(projections.state, (s) => (HashMap.size(s.runs.pending) === 0 ? Effect.void : Effect.asVoid(Queue.offer(wake, undefined))))
  /** Claims waiting for work, per worker; a placement on a worker hands its attempt to one of them. */
  const claims = makeWaitingClaims()
  const slotWaits = makeSlotWaits()
  /**
   * Runs that changed, for `wait`: completed on the next commit that touches a run. Made only
   * when someone waits: most commits have nobody to wake, and a deferred each cost about 1% of
   * the owner's time under load (bench/dispatch).
   */
  let changed: Deferred.Deferred<void> | undefined
  const nextChange = Effect.suspend(() => {
    if (changed === undefined) changed = Deferred.unsafeMake<void>(FiberId.none)
    return Effect.succeed(changed)
  })
  /**
   * Completed when the scheduler's next round is done, for a report that claims the next: the
   * run waiting for the slot it freed is placed by that round. Made only when asked for.
   */
  let roundDone: Deferred.Deferred<void> | undefined
  const afterNextRound = Effect.suspend(() => {
    if (roundDone === undefined) roundDone = Deferred.unsafeMake<void>(FiberId.none)
    const d = roundDone
    // A round is asked for: the one the report's commit asked for may have run already.
    return Effect.zipRight(Queue.offer(wake, undefined), Deferred.await(d))
  })
  /** Those waiting when a round starts are answered when it ends: a round already under way may not see their change. */
  const roundOf = <A, E>(round: Effect.Effect<A, E>) =>
    Effect.suspend(() => {
      const waiting = roundDone
      roundDone = undefined
      return waiting === undefined ? round : Effect.ensuring(round, Deferred.succeed(waiting, undefined))
    })
  const announce = Effect.suspend(() => {
    const d = changed
    if (d === undefined) return Effect.void
    changed = undefined
    return Deferred.succeed(d, undefined)
  })

  /**
   * Decide, append, apply; then wake whoever waits on runs, but not the scheduler: for a change
   * that leaves it nothing to do, a claim (an assigned attempt starts; nothing is freed or
   * submitted) and a submission placed in its own commit. A round would only look at every open
   * run and find nothing, on the claim's path.
   */
  const executeWithoutRound = (decide: (s: OwnerState) => AnyDecision | AnyRejection) =>
    Effect.tap(projections.executeOn(decide), (envelopes) => (envelopes.length > 0 ? Effect.zipRight(announce, sweepIfForgotten) : Effect.void))

  /**
   * The output files of runs the projections no longer keep are removed (docs/runs.md,
   * "Output"): after a commit that made them forget a generation of settled runs, and once at
   * start (for generations forgotten while the owner was down). One sweep at a time; a file
   * whose run is kept is never touched, and runs are only ever forgotten once settled.
   */
  let sweptAt = -1
  let sweeping = false
  const sweep = Effect.gen(function* () {
    for (const id of yield* files.attempts) {
      // The state as it is now, not as the sweep began: a run's files appear only after it is in
      // the state (its placement is committed first), so a run submitted meanwhile is kept.
      const parsed = parseAttemptId(id)
      if (parsed !== undefined && HashMap.has(projections.current().runs.runs, parsed.runId)) continue
      yield* files.remove(id)
    }
  })
  const sweepIfForgotten = Effect.suspend(() => {
    const forgotten = projections.current().runs.forgotten
    if (forgotten === sweptAt || sweeping) return Effect.void
    sweptAt = forgotten
    sweeping = true
    return Effect.asVoid(Effect.forkIn(Effect.ensuring(sweep, Effect.sync(() => void (sweeping = false))), scope))
  })
  /**
   * The same, then a scheduler round for the runs the change may let it place (a report or a
   * cessation frees a slot, a decline or a supersession makes a run pending). With no run
   * pending the round would find nothing to place: the lapses and unclaimed attempts it also
   * looks for have deadlines of their own (the scheduler's timer), and the changes that make one
   * due at once (a revocation, an advertisement, a hello) ask for a round with `kick`.
   */
  const execute = (decide: (s: OwnerState) => AnyDecision | AnyRejection) =>
    Effect.tap(executeWithoutRound(decide), (envelopes) => (envelopes.length > 0 ? kickToPlace : Effect.void))

  const toRefusal = (e: { readonly _tag: string; readonly message: string; readonly rejection?: { readonly code: string } }): Refusal => {
    const code = e.rejection?.code
    switch (code) {
      case "out-of-scope":
      case "superseded":
      case "unknown-activity":
        return refusal(code, e.message)
      case "already-reported":
      case "run-finished":
      case "unknown-run":
        return refusal("unknown-activity", e.message)
      default:
        return refusal("bad-request", `the owner could not record this: ${e.message}`)
    }
  }
  const toRunRefused = (e: { readonly message: string; readonly rejection?: { readonly code: string } }) => new RunRefused({ code: e.rejection?.code ?? "refused", message: e.message })

  const state = projections.state
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))
  const { view, find, list, show, wait } = makeRunViews({ state, readRun: projections.readRun, files, nextChange, slotWaits })

  // ---- Admission ------------------------------------------------------------------------

  const submit: DispatcherService["submit"] = (i) =>
    Effect.gen(function* () {
      const badPreference = preferenceProblem(i.prefer)
      if (badPreference !== undefined) return yield* new RunRefused({ code: "bad-preference", message: badPreference })
      // Before anything writes it as JSON: too deep a document overflows the stack (domain/runs/Values.ts).
      const tooDeep = depthProblem(i.input, "the input")
      if (tooDeep !== undefined) return yield* new RunRefused({ code: "invalid-input", message: tooDeep })
      const size = Buffer.byteLength(JSON.stringify(i.input ?? null))
      if (size > MAX_INPUT_BYTES) return yield* new RunRefused({ code: "input-too-large", message: `the input is ${size} bytes; at most ${MAX_INPUT_BYTES} are accepted` })
      const resolved = yield* host.resolve(i.address).pipe(Effect.mapError((e) => new RunRefused({ code: "not-runnable", message: e.message })))
      const problem = resolved.inputProblem(i.input)
      if (problem !== undefined) return yield* new RunRefused({ code: "invalid-input", message: problem })
      const runId = `r${base62FromBytes(entropy.bytes(10), 10)}`
      const job = resolved.job
      const ownerBins = yield* host.bins(job.requiredBins)
      const now = yield* Clock.currentTimeMillis
      let inline = false
      const envelopes = yield* handingOff(runId, (s) => {
        const submission = { runId, job, input: i.input, preferredLabels: [...new Set(i.prefer)].sort(), actor: i.actor, now }
        // Placed in the same commit unless an earlier run still waits for room (the scheduler places in order then).
        inline = !earlierRunWaiting(s)
        return inline
          ? RunDecide.decideSubmitAndPlace({ ...submission, candidates: candidatesFor(s, job, now, ownerBins, promisedIn(s)), quotas, notes: NOTES, cache: feasibility }, s.runs)
          : RunDecide.decideSubmit(submission, s.runs)
      }, now, executeWithoutRound).pipe(Effect.mapError(toRunRefused))
      // Submitted alone: the scheduler places it, after the runs before it.
      if (!inline) yield* kick
      yield* afterPlacement(runId, envelopes)
      const s = yield* state
      return view(s, runOf(s, runId)!)
    })

  // ---- Placement ------------------------------------------------------------------------

  const workerAlive = (w: WorkerRecord, now: number) => w.advertisement !== null && advertisementAlive(freshness.get(w.id), now)

  const silenceOfWorker = (w: WorkerRecord): Silence | undefined => silenceOf(w, freshness.get(w.id))
  const { candidatesFor } = makeCandidates(host, workerAlive, (id) => freshness.get(id)?.busy ?? 0, silenceOfWorker)
  const feasibility = makeFeasibilityCache()

  /** A pending run that may still be placed somewhere (not blocked): a new run placed at once would jump ahead of it. */
  const earlierRunWaiting = (s: OwnerState): boolean => {
    for (const [id] of s.runs.pending) {
      const run = runOf(s, id)
      if (run !== undefined && run.placement?.outcome !== "blocked") return true
    }
    return false
  }

  /**
   * A placement, with the hand-off to a waiting claim (docs/runs.md, "A waiting claim"): deciding
   * it may take a claim waiting on the chosen worker and start the attempt in the same commit;
   * whatever becomes of the commit, the claim taken is then answered or sent back to look again.
   */
  const handingOff = <E, R>(
    runId: string,
    decide: (s: OwnerState) => RunDecide.RunDecision | RunDecide.RunRejection,
    now: number,
    run: (decide: (s: OwnerState) => AnyDecision | AnyRejection) => Effect.Effect<ReadonlyArray<Envelope>, E, R>
  ) =>
    run((s) => {
      const decision = decide(s)
      if (decision._tag === "Rejected") return decision
      for (const e of decision.events) if (e._tag === "PlacementDecided" && e.host !== null && e.attempt !== null) promises.set(runId, { host: e.host, attempt: e.attempt })
      return RunDecide.decideHandOff(
        decision,
        s.runs,
        (hostId) => {
          const w = Option.getOrUndefined(HashMap.get(s.registry.workers, hostId))
          return w === undefined ? undefined : claims.take(hostId, w.fence, runId)
        },
        now
      )
    }).pipe(
      Effect.onExit((exit) => {
        promises.delete(runId)
        // A claim handed its attempt answers first: the placing fiber's own remaining work waits a turn.
        return Effect.flatMap(claims.settle(runId, Exit.isSuccess(exit) ? exit.value : undefined), (handed) => (handed ? Effect.yieldNow() : Effect.void))
      })
    )

  /**
   * Slots promised by placements decided and not applied yet. A placement decides against the
   * applied state, and appends made in one turn share a commit, so placements decided in the
   * same turn (submissions at once) would all see the same free slot. A promise counts as used
   * on its host until the state holds its attempt (then the ledger counts it), so it is never
   * counted twice.
   */
  const promises = new Map<string, { readonly host: string; readonly attempt: number }>()
  const promisedIn = (s: OwnerState): ReadonlyMap<string, number> | undefined => {
    if (promises.size === 0) return undefined
    const counts = new Map<string, number>()
    for (const [runId, p] of promises) {
      if (runOf(s, runId)?.attempts.some((a) => a.n === p.attempt) === true) continue
      counts.set(p.host, (counts.get(p.host) ?? 0) + 1)
    }
    return counts
  }

  /**
   * A placement that chose a host: the owner starts it; on a worker, the scheduler learns when
   * the attempt could lapse or go unclaimed (without a round now), and the worker's waiting
   * claims are woken, unless one was handed the attempt.
   */
  const afterPlacement = (runId: string, envelopes: ReadonlyArray<Envelope>) =>
    Effect.forEach(
      envelopes,
      ({ event }) => {
        if (event._tag !== "PlacementDecided" || event.host === null || event.attempt === null) return Effect.void
        if (event.host === "owner") return startLocal(runId, event.attempt)
        const deadline = hint(Math.min(lapsesAt(event.host, event.at), event.at + CLAIM_DEADLINE_MS))
        return envelopes.some((e) => e.event._tag === "AttemptStarted" && e.event.attempt === event.attempt) ? deadline : Effect.zipRight(deadline, claims.wake(event.host))
      },
      { discard: true }
    )

  const quotas: Quotas = { logical: null, endpoint: null }
  const NOTES = [
    "logical quota: none applies (the limits count detached agents; a job run is not one)",
    "inference endpoint: none (a job run uses no model), so no endpoint capacity and no model were selected"
  ]

  /** When a worker's attempts lapse if it stays silent: 15 s after its last advertisement, not before the owner's restart grace ends. */
  const lapsesAt = (workerId: string, now: number) => {
    const lastAdvertisedAt = freshness.get(workerId)?.lastAdvertisedAt ?? null
    return Math.max(lastAdvertisedAt === null ? now : lastAdvertisedAt + ADVERTISEMENT_LIFETIME_MS, startedAt + RESTART_GRACE_MS)
  }

  /**
   * Attempts that no longer count: on a revoked or lapsed worker, or assigned and never claimed.
   * Answers when the next such deadline falls (null: none), so the scheduler sleeps until then.
   */
  const supersedeLapsed = (now: number) =>
    Effect.gen(function* () {
      const s = yield* state
      let next: number | null = null
      const due = (at: number) => {
        if (at > now && (next === null || at < next)) next = at
      }
      for (const [runId] of s.runs.open) {
        const run = runOf(s, runId)
        const last = run === undefined ? undefined : lastAttempt(run)
        if (last === undefined || !ACTIVE.has(last.state) || last.host === "owner") continue
        const w = Option.getOrUndefined(HashMap.get(s.registry.workers, last.host))
        // A worker that said bye is known to be gone now (no grace for an owner's restart needed).
        const ended = w !== undefined && freshness.get(w.id)?.sessionEnded === true
        const lapsed = w !== undefined && !workerAlive(w, now) && (ended || now - startedAt >= RESTART_GRACE_MS)
        const unclaimed = last.state === "assigned" && now - last.assignedAt >= CLAIM_DEADLINE_MS
        const reason =
          w === undefined
            ? "its worker is unknown"
            : w.revokedAt !== null
              ? "its worker was revoked"
              : lapsed
                ? ended
                  ? freshness.get(w.id)?.leaving === true
                    ? "its worker left this owner (svc workers leave on its machine, which stopped it first) before the attempt ended"
                    : "its worker ended its session cleanly (it said so: its svc serve stopped, or the machine joined again) before the attempt ended"
                  : "its worker's advertisement lapsed (no refresh for 15 s)"
                : unclaimed
                  ? `its worker did not claim it within ${CLAIM_DEADLINE_MS / 1000} s`
                  : undefined
        if (reason === undefined) {
          due(lapsesAt(last.host, now))
          if (last.state === "assigned") due(last.assignedAt + CLAIM_DEADLINE_MS)
          continue
        }
        yield* execute((st) => RunDecide.decideSupersede({ runId, attempt: last.n, reason, now }, st.runs)).pipe(Effect.ignore)
      }
      return next as number | null
    })

  const placePending = (now: number) =>
    Effect.gen(function* () {
      const pending = [...(yield* state).runs.pending].sort(([, a], [, b]) => a - b).map(([id]) => id)
      const binsCache = new Map<string, ReadonlyArray<string>>()
      for (const runId of pending) {
        const s = yield* state
        const run = runOf(s, runId)
        if (run === undefined || run.state !== "pending") continue
        const key = run.job.requiredBins.join("\u0000")
        let ownerBins = binsCache.get(key)
        if (ownerBins === undefined) {
          ownerBins = yield* host.bins(run.job.requiredBins)
          binsCache.set(key, ownerBins)
        }
        const envelopes = yield* handingOff(
          runId,
          (st) => RunDecide.decidePlacement({ runId, candidates: candidatesFor(st, runOf(st, runId)!.job, now, ownerBins, promisedIn(st)), quotas, notes: NOTES, now, cache: feasibility }, st.runs),
          now,
          execute
        ).pipe(Effect.catchAll((e) => Effect.as(Effect.logWarning(`placing ${runId}: ${e.message}`), [])))
        yield* afterPlacement(runId, envelopes)
      }
    })

  /** One round: supersede what lapsed, place what is pending; answers when the next deadline falls. */
  const tick = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    // Resumed from a pause of the owner's own, this round may come before the beat (Presence's
    // check): the pause is excused first, or every worker would be found lapsed for the owner's silence.
    yield* noteAwake(freshness, now)
    const next = yield* supersedeLapsed(now)
    yield* placePending(now)
    return next
  })

  // ---- The owner's own executions (LocalRuns.ts) ----------------------------------------

  const { recordReport, startLocal, stopLocal, reconcileOwnerAtStart } = makeLocalRuns({ state, execute, host, executor, files, scope, slotWaits })

  // ---- Stop and release --------------------------------------------------------------------

  const stop: DispatcherService["stop"] = (runId, actor) =>
    Effect.gen(function* () {
      const [, found, kept] = yield* find(runId)
      const now = yield* Clock.currentTimeMillis
      // Only a settled run is forgotten: it has finished, and stopping it is refused as for any finished run.
      if (!kept) {
        const finished = RunDecide.alreadyFinished(found)
        return yield* toRunRefused({ message: finished.message, rejection: finished })
      }
      yield* execute((s) => RunDecide.decideStop({ runId, actor, now }, s.runs)).pipe(Effect.mapError(toRunRefused))
      const [s, run] = yield* find(runId)
      const last = lastAttempt(run)
      if (last !== undefined && last.host === "owner") yield* stopLocal(attemptId(runId, last.n))
      // A remote attempt is told to stop in the answer to its worker's next call.
      return view(s, run)
    })

  /**
   * Frees the slots a host holds for attempts known to have stopped there (an active one is
   * superseded first, so its run is placed again): those not in `keep`. Answers how many.
   */
  const releaseHeld = (workerId: string, reason: string, keep: ReadonlySet<string>) =>
    Effect.gen(function* () {
      const s = yield* state
      const now = yield* Clock.currentTimeMillis
      let freed = 0
      for (const { id, runId, a } of heldBy(s, workerId)) {
        if (keep.has(id)) continue
        const superseded = ACTIVE.has(a.state)
          ? yield* execute((st) => RunDecide.decideSupersede({ runId, attempt: a.n, reason, now }, st.runs)).pipe(Effect.orElseSucceed(() => []))
          : []
        const done = yield* execute((st) => RunDecide.decideCease({ runId, attempt: a.n, reason, now }, st.runs)).pipe(Effect.orElseSucceed(() => []))
        // An attempt never claimed is ceased by its supersession itself, then the cease finds nothing to do.
        freed += [...superseded, ...done].some((e) => e.event._tag === "AttemptCeased") ? 1 : 0
      }
      return freed
    })

  const release: DispatcherService["release"] = (workerId, _actor, force = false) =>
    Effect.gen(function* () {
      const w = HashMap.get((yield* state).registry.workers, workerId)
      const now = yield* Clock.currentTimeMillis
      // Releasing tells the owner the worker runs nothing: not to be said of one still calling.
      if (!force && Option.isSome(w) && w.value.revokedAt === null && workerAlive(w.value, now)) {
        const seen = freshness.get(workerId)?.lastSeenAt ?? null
        return yield* new RunRefused({
          code: "worker-alive",
          message: `worker ${w.value.name} is still advertising${seen === null ? "" : ` (it last called ${Math.max(0, Math.round((now - seen) / 1000))} s ago)`}, so it may still be running what it holds: stop or revoke it first, or pass --force if you know it runs nothing`
        })
      }
      return yield* releaseHeld(workerId, "the operator confirmed its worker stopped", new Set())
    })

  const left: DispatcherService["left"] = (workerId, running) =>
    Effect.tap(releaseHeld(workerId, "its worker left, having stopped it", new Set(running)), () => kick)

  // ---- The worker route (WorkerCalls.ts) ---------------------------------------------------

  const { hello, claim, heartbeat, decline, report, stopsFor } = makeWorkerCalls({ state, execute, executeWithoutRound, toRefusal, claims, slotWaits, files, kick, afterNextRound, runWaiting: earlierRunWaiting, releaseHeld, recordReport })

  yield* reconcileOwnerAtStart
  yield* sweepIfForgotten
  // Rounds run when something changed (a kick), or when the next deadline falls (a lapse, an unclaimed assignment).
  yield* Effect.forkScoped(
    Effect.iterate(null as number | null, {
      while: () => true,
      body: (next) =>
        Effect.gen(function* () {
          let deadline = next
          for (;;) {
            if (hinted !== null) {
              deadline = deadline === null ? hinted : Math.min(deadline, hinted)
              hinted = null
            }
            const now = yield* Clock.currentTimeMillis
            const timer = deadline === null ? Effect.never : Effect.as(Effect.sleep(Duration.millis(Math.max(0, deadline - now))), "round" as const)
            const woke = yield* Effect.raceFirst(Effect.as(Queue.take(wake), "round" as const), Effect.raceFirst(Effect.as(Queue.take(rewake), "hint" as const), timer))
            if (woke === "round") break
          }
          return yield* roundOf(
            tick.pipe(Effect.catchAllCause((cause) => Effect.zipRight(Effect.logError("the run scheduler failed a round", cause), Effect.map(Clock.currentTimeMillis, (t) => t + 1000))))
          )
        })
    })
  )
  yield* kick

  const jobProblem: DispatcherService["jobProblem"] = (address) =>
    host.resolve(address).pipe(
      // A job only the owner runs is never placed on a worker, whatever its scope says.
      // `ownerOnly` says it: "owner only: it touches files on the host (preflight)".
      Effect.map((r) => (r.job.remoteEligible ? undefined : r.job.ownerOnly.join("; "))),
      Effect.catchAll((e) => Effect.succeed(e.message))
    )

  return Dispatcher.of({ submit, list, show, stop, wait, release, left, hello, claim, heartbeat, decline, report, stopsFor, kick, wakeClaims: claims.wake, endClaims: claims.withdraw, jobProblem })
})

export const layer = Layer.scoped(Dispatcher, make)
