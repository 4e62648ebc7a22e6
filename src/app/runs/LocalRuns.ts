/**
 * The owner's own executions (docs/runs.md, "Lifecycle", "Stop", "After a restart"): an
 * attempt placed on the owner runs here, in a fiber of the dispatcher's scope, holding one of
 * this machine's slots; its outcome is reported through the same command a worker's report
 * goes through. Stopped, it is ceased once its child has exited. At start, attempts the owner
 * was running when it stopped did not survive it: they are superseded and their slots freed.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ranMsOf } from "../../domain/journal/Events.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import { ACTIVE, attemptId, lastAttempt } from "../../domain/runs/Runs.js"
import type { JournalError, StreamConflict } from "../journal/Journal.js"
import type { CommandRejected, Execute } from "../journal/Projections.js"
import type { OwnerHostSettings } from "./Dispatcher.js"
import type { ExecutorService } from "./Executor.js"
import type { JobNotRunnable } from "./JobCatalog.js"
import { recordAgain } from "./RecordAgain.js"
import type { RunFilesService } from "./RunFiles.js"
import type { SlotWaits } from "./SlotWaits.js"
import { heldBy } from "./WorkerCalls.js"


/** What the owner's executions use of the dispatcher. */
export interface LocalRunsContext {
  readonly state: Effect.Effect<OwnerState>
  /** A command, then a round when a run waits to be placed. */
  readonly execute: Execute
  readonly host: OwnerHostSettings
  readonly executor: ExecutorService
  readonly files: RunFilesService
  /** Where the executions' fibers live: closing it (the owner stops) stops them. */
  readonly scope: Scope.Scope
  /** Where an attempt waiting for one of the machine's slots is noted, for the run's view. */
  readonly slotWaits: SlotWaits
}

export interface Outcome {
  readonly ok: boolean
  readonly result: unknown
  readonly error: string | null
  readonly exitCode: number | null
  /** How long the job ran, as its host measured it: a worker's report says it (its arrival can be much later). */
  readonly ranMs?: number
}

/** An owner's attempt ran to an outcome, or was declined (the bag its run pins is not installed here now). */
type Ran = Outcome | { readonly declined: string }

const messageOf = (defect: unknown) => (defect instanceof Error ? defect.message : String(defect))

export const makeLocalRuns = ({ state, execute, host, executor, files, scope, slotWaits }: LocalRunsContext) => {
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))
  const local = new Map<string, Fiber.RuntimeFiber<void>>()

  /** An attempt's outcome, from the owner or a worker: a result is checked against the job's output_schema (the owner's copy) first. */
  const recordReport = (hostId: string, scope: ReadonlyArray<string>, runId: string, n: number, outcome: Outcome) =>
    Effect.gen(function* () {
      const s = yield* state
      const run = runOf(s, runId)
      let { ok, result, error } = outcome
      if (ok && run !== undefined) {
        const resolved = yield* host.resolve(run.job.address).pipe(Effect.option)
        const problem = Option.isSome(resolved) ? resolved.value.outputProblem(result) : undefined
        if (problem !== undefined) [ok, result, error] = [false, null, problem]
      }
      const now = yield* Clock.currentTimeMillis
      const ranMs = outcome.ranMs
      return yield* execute((st) => RunDecide.decideReport({ host: hostId, scope, runId, attempt: n, ok, result, error, exitCode: outcome.exitCode, ...(ranMs === undefined ? {} : { ranMs }), now }, st.runs))
    })

  /** Runs attempt `n` of `runId` on the owner, in the background. */
  const startLocal = (runId: string, n: number) =>
    Effect.gen(function* () {
      const id = attemptId(runId, n)
      const s = yield* state
      const run = runOf(s, runId)
      if (run === undefined) return
      const paths = files.paths(id)
      const execution = Effect.gen(function* () {
        const found = yield* host.resolve(run.job.address).pipe(Effect.either)
        // The bag the run pins is no longer installed here (removed, or replaced by other content):
        // a job that may go to workers is declined, as a worker declines one it does not hold, and
        // placed again where that bag is (the runs audit saw such runs fail, a worker holding the
        // bag idle). A job that stays on the owner fails, saying why; a bag that cannot be read now
        // fails the attempt alone.
        const gone = Either.isLeft(found)
          ? found.left.unreadable === true
            ? undefined
            : found.left.message
          : found.right.job.digest !== run.job.digest
            ? `the installed bag ${run.job.bag} changed since the run was submitted (digest ${found.right.job.digest}, not ${run.job.digest})`
            : undefined
        if (gone !== undefined && run.job.remoteEligible) return { declined: `${gone}; a worker that holds the bag the run pins may run it` } as Ran
        if (gone !== undefined) return { ok: false, result: null, error: gone, exitCode: null } as Ran
        if (Either.isLeft(found)) return yield* found.left
        const resolved = found.right
        // Its slot may be held by other work (other owners' attempts on this machine, a worker's):
        // until it has one, the run's view says it waits for it, as a worker's attempt's does.
        slotWaits.begin("owner", id, yield* Clock.currentTimeMillis)
        const taken = Effect.sync(() => slotWaits.end("owner", id))
        const outcome = yield* host.withSlot(
          Effect.zipRight(taken, executor.run({
            attempt: id,
            runId,
            bagDir: resolved.bagDir,
            runs: resolved.runs,
            env: resolved.env,
            workingDirectory: resolved.workingDirectory,
            secrets: resolved.secrets,
            preflight: resolved.preflight,
            validate: resolved.validate,
            input: run.input,
            timeoutMs: run.job.timeoutMs,
            stdoutFile: paths.stdout,
            stderrFile: paths.stderr
          }))
        ).pipe(Effect.ensuring(taken))
        // How long it ran, not counting its wait for a slot.
        const ranMs = ranMsOf(outcome.durationMs)
        return { ok: outcome.ok, result: outcome.result, error: outcome.error, exitCode: outcome.exitCode, ...(ranMs === undefined ? {} : { ranMs }) } as Ran
      }).pipe(Effect.catchAll((e: JobNotRunnable) => Effect.succeed<Ran>({ ok: false, result: null as unknown, error: e.message, exitCode: null })))
      const fiber = yield* execution.pipe(
        // A defect (a bug of svc's) fails the attempt saying so: it must not stay running forever.
        Effect.catchAllDefect((defect) =>
          Effect.as(Effect.logError(`running attempt ${id} failed`, Cause.die(defect)), { ok: false, result: null as unknown, error: `svc failed running it: ${messageOf(defect)}`, exitCode: null } as Ran)
        ),
        Effect.flatMap((outcome) =>
          "declined" in outcome
            ? Effect.flatMap(Clock.currentTimeMillis, (now) => execute((st) => RunDecide.decideDecline({ workerId: "owner", scope: [], runId, attempt: n, reason: outcome.declined, now }, st.runs))).pipe(
                Effect.zipRight(Effect.logInfo(`declined attempt ${id} (${run.job.address}) on the owner: ${outcome.declined}`)),
                Effect.asVoid
              )
            : recordAgain(`the outcome of attempt ${id}`, recordReport("owner", [], runId, n, outcome)).pipe(
            Effect.catchAllDefect((defect) =>
              Effect.zipRight(
                Effect.logError(`recording the outcome of attempt ${id} failed`, Cause.die(defect)),
                recordReport("owner", [], runId, n, { ok: false, result: null, error: `svc could not record its outcome: ${messageOf(defect)}`, exitCode: outcome.exitCode })
              )
            )
          )
        ),
        Effect.onInterrupt(() =>
          // Stopped: the child has exited (the executor waits for it), so the slot is free.
          Effect.flatMap(Clock.currentTimeMillis, (now) => execute((st) => RunDecide.decideCease({ runId, attempt: n, reason: "stopped on the owner", now }, st.runs))).pipe(Effect.ignore)
        ),
        Effect.catchAll((e) => Effect.logError(`recording attempt ${id}: ${e.message}`)),
        Effect.asVoid,
        Effect.ensuring(Effect.sync(() => local.delete(id))),
        Effect.forkIn(scope)
      )
      local.set(id, fiber)
    })

  /** Stops an attempt running on the owner (none running: nothing to do); answers once it has stopped. */
  const stopLocal = (id: string) =>
    Effect.suspend(() => {
      const fiber = local.get(id)
      return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
    })

  /** Attempts the owner was running when it stopped did not survive it: superseded and freed. */
  const reconcileOwnerAtStart = Effect.gen(function* () {
    const s = yield* state
    const now = yield* Clock.currentTimeMillis
    // A command the state rejects (done already, by an earlier try) is nothing to record.
    const unlessRejected = (record: Effect.Effect<unknown, CommandRejected | StreamConflict | JournalError>) =>
      Effect.catchIf(record, (e) => e._tag === "CommandRejected", () => Effect.void)
    const cease = (runId: string, n: number) => unlessRejected(execute((st) => RunDecide.decideCease({ runId, attempt: n, reason: "the owner restarted", now }, st.runs)))
    /**
     * Recorded now, or else (the journal cannot take it: a full disk) tried again in the
     * background (RecordAgain.ts) while the runtime serves: the start does not wait for it, and
     * what it records is not said done before it is.
     */
    const nowOrLater = (what: string, record: Effect.Effect<void, StreamConflict | JournalError>) =>
      Effect.flatMap(Effect.either(record), (done) =>
        done._tag === "Right" ? Effect.succeed(true) : Effect.as(Effect.forkIn(Effect.ignore(recordAgain(what, record)), scope), false)
      )
    const again: Array<string> = []
    for (const [runId] of s.runs.open) {
      const last = lastAttempt(runOf(s, runId)!)
      if (last === undefined || last.host !== "owner" || !ACTIVE.has(last.state)) continue
      const id = attemptId(runId, last.n)
      const ended = Effect.zipRight(
        unlessRejected(execute((st) => RunDecide.decideSupersede({ runId, attempt: last.n, reason: "the owner restarted while running it", now }, st.runs))),
        cease(runId, last.n)
      )
      if (yield* nowOrLater(`the end of attempt ${id}, which the last runtime was running when it stopped,`, ended)) again.push(id)
    }
    // Said in the owner's log too (a worker's log says what it stops; the owner's said nothing).
    if (again.length > 0) {
      yield* Effect.logInfo(
        `${again.length === 1 ? "1 attempt" : `${again.length} attempts`} the last runtime was running on this owner when it stopped (${again.join(", ")}) ${again.length === 1 ? "is" : "are"} placed again`
      )
    }
    for (const { runId, a } of heldBy(s, "owner")) {
      if (!ACTIVE.has(a.state)) yield* nowOrLater(`the slot of attempt ${attemptId(runId, a.n)}, which the last runtime held,`, cease(runId, a.n))
    }
  })

  return { recordReport, startLocal, stopLocal, reconcileOwnerAtStart }
}
