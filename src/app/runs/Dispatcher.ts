/**
 * The owner's runs (docs/runs.md): admission, placement and stop. Every decision is a pure
 * decider of `domain/runs`, journaled through the projections; the dispatcher gathers the inputs
 * (the candidates as the owner sees them now) and acts on what was decided.
 *
 * One scheduler fiber places runs, in submission order, whenever something changes, and wakes
 * at the next deadline (an advertisement that lapses, an assignment not claimed in time). Placing one run at a time against the state
 * that the previous placement left is what keeps a host's slots from being promised twice.
 *
 * This module is the service, and the commands its parts share (decide, append, apply, then wake
 * whoever waits on runs, and remove the output of runs forgotten). The parts: admission and
 * placement (Placements.ts), what supersedes an attempt (Supersession.ts), when the scheduler
 * runs a round (Scheduler.ts), stop and release (RunStops.ts), the owner's own executions
 * (LocalRuns.ts), the worker side of claims, heartbeats, declines and reports (WorkerCalls.ts),
 * and reading runs (list, show, wait: RunViews.ts).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { parseAttemptId } from "../../domain/runs/Runs.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import { Projections, type AnyDecision, type AnyRejection, type Execute } from "../journal/Projections.js"
import { Entropy } from "../workers/Entropy.js"
import { Hashing } from "../journal/Hashing.js"
import { base62FromBytes } from "../../domain/workers/Secrets.js"
import { Freshness, noteAwake } from "../workers/Freshness.js"
import { unavailableRefusal, type OutputDelta, type Refusal, type Work } from "../workers/Protocol.js"
import { makeLocalRuns } from "./LocalRuns.js"
import { Executor } from "./Executor.js"
import type { JobNotRunnable, ResolvedJob } from "./JobCatalog.js"
import { Line, MAKES_PENDING_AGAIN } from "./Line.js"
import { makePlacements } from "./Placements.js"
import { RunFiles } from "./RunFiles.js"
import { makeRunStops } from "./RunStops.js"
import { makeScheduler } from "./Scheduler.js"
import { makeSupersession, RESTART_GRACE_MS } from "./Supersession.js"
import { makeWaitingClaims } from "./WaitingClaims.js"
import { RunRefused } from "./RunRefused.js"
import { makeRunViews, type RunDetail, type RunFilter, type RunList, type RunView } from "./RunViews.js"
import { makeSlotWaits } from "./SlotWaits.js"
import { makeWorkerCalls, refusal } from "./WorkerCalls.js"

export { stopsIn } from "./WorkerCalls.js"
export { RunRefused } from "./RunRefused.js"
export { progressOf, type RunDetail, type RunFilter, type RunList, type RunView } from "./RunViews.js"
export { CLAIM_DEADLINE_MS, RESTART_GRACE_MS } from "./Supersession.js"

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

export interface DispatcherService {
  /**
   * With `key` (an idempotency key), the run's id is derived from it, and a submission the owner
   * has made already under that key is answered with that run (`existing`), not made again.
   */
  readonly submit: (i: {
    readonly address: string
    readonly input: unknown
    readonly prefer: ReadonlyArray<string>
    readonly actor: string
    readonly key?: string
  }) => Effect.Effect<RunView & { readonly existing?: true }, RunRefused>
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
  /** Its bye (a clean stop): what it held was stopped, and is placed again; answers how many slots were freed. */
  readonly ended: (workerId: string) => Effect.Effect<number>
  // The worker route, after authentication and the fence check:
  /** `resumes`: the hello is the same process's, resuming its session (its link started again). */
  readonly hello: (worker: WorkerRecord, running: ReadonlyArray<string>, resumes?: boolean) => Effect.Effect<ReadonlyArray<string>, Refusal>
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

/** A command: decide on the state, append what was decided, apply it (`execute`, `executeWithoutRound`). */
export type { Execute }

export const make = Effect.gen(function* () {
  const projections = yield* Projections
  const freshness = yield* Freshness
  const executor = yield* Executor
  const files = yield* RunFiles
  const entropy = yield* Entropy
  const hashing = yield* Hashing
  const host = yield* OwnerHost
  const startedAt = yield* Clock.currentTimeMillis
  // The owner's own executions live in this layer's scope: stopping the owner stops them.
  const scope = yield* Effect.scope

  const { hint, kick, kickToPlace, afterNextRound, rounds } = yield* makeScheduler(projections.state)
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
  const announce = Effect.suspend(() => {
    const d = changed
    if (d === undefined) return Effect.void
    changed = undefined
    return Deferred.succeed(d, undefined)
  })

  /** The line of pending runs: per kind, in submission order (Line.ts; Placements.ts, `placePending`). */
  const line = new Line()

  /**
   * Decide, append, apply; then wake whoever waits on runs, but not the scheduler: for a change
   * that leaves it nothing to do, a claim (an assigned attempt starts; nothing is freed or
   * submitted) and a submission placed in its own commit. A round would only look at every open
   * run and find nothing, on the claim's path.
   */
  const executeWithoutRound = (decide: (s: OwnerState) => AnyDecision | AnyRejection) =>
    Effect.tap(projections.executeOn(decide), (envelopes) => {
      if (envelopes.length === 0) return Effect.void
      // A run submitted joins the line of pending runs; one that may be pending again has it made again (Line.ts).
      for (const { event } of envelopes) {
        if (event._tag === "RunSubmitted") line.add(event.runId)
        else if (MAKES_PENDING_AGAIN.has(event._tag)) line.invalidate()
      }
      return Effect.zipRight(announce, sweepIfForgotten)
    })

  /**
   * The output files of runs the projections no longer keep are removed (docs/runs.md,
   * "Output"): after a commit that made them forget a generation of settled runs, and once at
   * start (for generations forgotten while the owner was down). One sweep at a time; a file
   * whose run is kept is never touched, and runs are only ever forgotten once settled.
   */
  let sweptAt = -1
  let sweeping = false
  const sweep = Effect.gen(function* () {
    const gone: Array<string> = []
    const printed = new Set<string>()
    for (const id of yield* files.attempts) {
      // The state as it is now, not as the listing began: a run's files appear only after it is in
      // the state (its placement is committed first), so a run submitted meanwhile is kept.
      const parsed = parseAttemptId(id)
      if (parsed !== undefined && HashMap.has(projections.current().runs.runs, parsed.runId)) continue
      gone.push(id)
      // Only output that was there is said removed later: the owner's own attempts have their
      // files made as they start, empty for a job that prints nothing.
      if (parsed !== undefined && !printed.has(parsed.runId)) {
        const sizes = yield* files.sizes(id)
        if (sizes.stdout > 0 || sizes.stderr > 0) printed.add(parsed.runId)
      }
    }
    // Noted first: an owner that keeps more runs later (the setting raised) folds some of these
    // back into memory, and says their output was removed rather than that they printed nothing.
    yield* files.noteRemoved([...printed])
    // Said once a sweep, not once a file (a read-only directory fails every one).
    let failed = 0
    let first: string | undefined
    for (const id of gone) {
      yield* files.remove(id).pipe(
        Effect.catchAll((e) =>
          Effect.sync(() => {
            failed++
            first ??= e.message
          })
        )
      )
    }
    if (failed > 0) yield* Effect.logWarning(`the output files of ${failed} attempt${failed === 1 ? "" : "s"} of forgotten runs could not be removed (${first}); they are tried again when the next generation of runs is forgotten, and at the next start`)
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
        // Not what the call said, but the store that could not take it (a full disk): called again.
        return e._tag === "CommandRejected" ? refusal("bad-request", `the owner could not record this: ${e.message}`) : unavailableRefusal(e.message)
    }
  }
  const toRunRefused = (e: { readonly message: string; readonly rejection?: { readonly code: string } }) => new RunRefused({ code: e.rejection?.code ?? "refused", message: e.message })

  const state = projections.state
  /** Pending runs left undecided while the restarted owner's workers call back (Placements.ts, `undecided`). */
  const awaitingWorkers = new Set<string>()
  const { view, find, list, show, wait } = makeRunViews({ state, readRun: projections.readRun, files, nextChange, slotWaits, awaitingWorkers, queued: line })

  // ---- The owner's own executions (LocalRuns.ts) ----------------------------------------

  const { recordReport, startLocal, stopLocal, reconcileOwnerAtStart } = makeLocalRuns({ state, execute, host, executor, files, scope, slotWaits })

  // ---- Admission and placement (Placements.ts, Supersession.ts) ---------------------------

  const { workerAlive, lapsesAt, supersedeLapsed } = makeSupersession({ state, execute, freshness, startedAt })
  // "svc run key v1": no other digest of the same key can pass for it.
  const keyedRunId = (key: string) => `r${base62FromBytes(Buffer.from(hashing.sha256Hex(`svc run key v1\n${key}`), "hex"), 10)}`
  const { submit, earlierRunWaiting, placePending } = makePlacements({
    state,
    execute,
    executeWithoutRound,
    toRunRefused,
    view,
    host,
    entropy,
    keyedRunId,
    freshness,
    claims,
    hint,
    kick,
    startLocal,
    workerAlive,
    lapsesAt,
    restartGraceUntil: startedAt + RESTART_GRACE_MS,
    awaitingWorkers,
    line
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

  // ---- Stop and release (RunStops.ts) -----------------------------------------------------

  const { stop, releaseHeld, release, left, ended } = makeRunStops({ state, execute, toRunRefused, find, view, stopLocal, freshness, workerAlive, kick })

  // ---- The worker route (WorkerCalls.ts) ---------------------------------------------------

  const { hello, claim, heartbeat, decline, report, stopsFor } = makeWorkerCalls({ state, execute, executeWithoutRound, toRefusal, claims, slotWaits, files, kick, afterNextRound, runWaiting: earlierRunWaiting, releaseHeld, recordReport })

  yield* reconcileOwnerAtStart
  yield* sweepIfForgotten
  // Rounds run when something changed (a kick), or when the next deadline falls (a lapse, an unclaimed assignment).
  yield* Effect.forkScoped(rounds(tick))
  yield* kick

  const jobProblem: DispatcherService["jobProblem"] = (address) =>
    host.resolve(address).pipe(
      // A job only the owner runs is never placed on a worker, whatever its scope says.
      // `ownerOnly` says it: "owner only: it touches files on the host (preflight)".
      Effect.map((r) => (r.job.remoteEligible ? undefined : r.job.ownerOnly.join("; "))),
      Effect.catchAll((e) => Effect.succeed(e.message))
    )

  return Dispatcher.of({ submit, list, show, stop, wait, release, left, ended, hello, claim, heartbeat, decline, report, stopsFor, kick, wakeClaims: claims.wake, endClaims: claims.withdraw, jobProblem })
})

export const layer = Layer.scoped(Dispatcher, make)
