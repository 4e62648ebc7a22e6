/**
 * The worker side of runs (docs/runs.md, "On a worker"): what the dispatcher answers to a
 * worker's hello, claim, heartbeat, decline and report on the worker route, after the route
 * has authenticated the credential and checked the fence. Each call reconciles what the worker
 * says it runs with what the owner placed on it, or journals what it decided through the
 * dispatcher's commands.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { Envelope } from "../../domain/journal/Events.js"
import type { Outcome } from "./LocalRuns.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import { ACTIVE, attemptId, parseAttemptId } from "../../domain/runs/Runs.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import type { JournalError, StreamConflict } from "../journal/Journal.js"
import type { CommandRejected, Execute } from "../journal/Projections.js"
import { fenceRefusal, Refusal, revokedRefusal, type OutputDelta } from "../workers/Protocol.js"
import type { DispatcherService } from "./Dispatcher.js"
import { ownerPart } from "../../domain/runs/OutputLimit.js"
import { pieceProblem } from "../../domain/runs/OutputPieces.js"
import { OutputMarks } from "./OutputMarks.js"
import type { RunFilesService } from "./RunFiles.js"
import type { SlotWaits } from "./SlotWaits.js"
import type { makeWaitingClaims } from "./WaitingClaims.js"

export const refusal = (code: Refusal["code"], message: string) => new Refusal({ code, message })

/** The attempts holding one of a host's slots, with their runs. */
export const heldBy = (s: OwnerState, hostId: string) => {
  const held = HashMap.get(s.runs.held, hostId)
  if (Option.isNone(held)) return []
  return held.value.flatMap((id) => {
    const parsed = parseAttemptId(id)
    const run = parsed === undefined ? undefined : Option.getOrUndefined(HashMap.get(s.runs.runs, parsed.runId))
    const a = run?.attempts.find((x) => x.n === parsed!.attempt)
    return run === undefined || a === undefined ? [] : [{ id, runId: run.id, a }]
  })
}

/** The attempts a host holds that still count, or that a lapse superseded already: those placed again once it is gone. */
export const heldCount = (s: OwnerState, hostId: string): number => heldBy(s, hostId).filter(({ a }) => ACTIVE.has(a.state) || a.state === "superseded").length

/** Attempts of this worker that it may still be running but must stop, in this state. */
export const stopsIn = (s: OwnerState, workerId: string): ReadonlyArray<string> =>
  heldBy(s, workerId)
    .filter(({ a }) => a.state === "stopping" || a.state === "superseded")
    .map(({ id }) => id)

/** What the worker side uses of the dispatcher. */
export interface WorkerCallsContext {
  readonly state: Effect.Effect<OwnerState>
  /** A command, then a round when a run waits to be placed. */
  readonly execute: Execute
  readonly executeWithoutRound: Execute
  readonly toRefusal: (e: { readonly _tag: string; readonly message: string; readonly rejection?: { readonly code: string } }) => Refusal
  readonly claims: ReturnType<typeof makeWaitingClaims>
  readonly slotWaits: SlotWaits
  readonly files: RunFilesService
  /** A full scheduler round. */
  readonly kick: Effect.Effect<void>
  /** Asks for a scheduler round and completes once one is done. */
  readonly afterNextRound: Effect.Effect<void>
  /** A pending run that a freed slot may let be placed (not blocked: no slot makes a blocked run eligible). */
  readonly runWaiting: (s: OwnerState) => boolean
  readonly releaseHeld: (workerId: string, reason: string, keep: ReadonlySet<string>) => Effect.Effect<number>
  readonly recordReport: (
    hostId: string,
    scope: ReadonlyArray<string>,
    runId: string,
    n: number,
    outcome: Outcome
  ) => Effect.Effect<ReadonlyArray<Envelope>, CommandRejected | StreamConflict | JournalError>
}

export const makeWorkerCalls = ({ state, execute, executeWithoutRound, toRefusal, claims, slotWaits, files, kick, afterNextRound, runWaiting, releaseHeld, recordReport }: WorkerCallsContext) => {
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))
  /** An attempt by its id, in its run in memory. */
  const attemptIn = (s: OwnerState, id: string) => {
    const parsed = parseAttemptId(id)
    return parsed === undefined ? undefined : runOf(s, parsed.runId)?.attempts.find((x) => x.n === parsed.attempt)
  }

  const parse = (attempt: string) => {
    const parsed = parseAttemptId(attempt)
    return parsed === undefined ? Effect.fail(refusal("unknown-activity", `${JSON.stringify(attempt)} is not an activity attempt id`)) : Effect.succeed(parsed)
  }

  /** The attempts holding a slot of this host (from the ledger's index, not a scan of all runs). */
  const stopsFor: DispatcherService["stopsFor"] = (workerId) => Effect.map(state, (s) => stopsIn(s, workerId))

  /**
   * What the worker says it runs, against what the owner placed on it: a listed attempt the
   * owner no longer counts is to be stopped; a superseded or stopped one not listed has ceased
   * (its slot is free); with `lost` (a hello after a restart, a claim), a running attempt it
   * does not list never reached the worker or was lost with its restart: it is placed again,
   * with `lost` as the reason.
   */
  const reconcile = (worker: WorkerRecord, running: ReadonlyArray<string>, lost: string | null) =>
    Effect.gen(function* () {
      const listed = new Set(running)
      const s = yield* state
      const now = yield* Clock.currentTimeMillis
      const stop: Array<string> = []
      for (const id of listed) {
        const parsed = parseAttemptId(id)
        const run = parsed === undefined ? undefined : runOf(s, parsed.runId)
        const a = run?.attempts.find((x) => x.n === parsed!.attempt)
        if (run === undefined || a === undefined || a.host !== worker.id) {
          stop.push(id)
          continue
        }
        if (worker.scope.length > 0 && !worker.scope.includes(run.job.address)) {
          return yield* refusal("out-of-scope", `${run.job.address} (attempt ${id}) is outside this worker's scope`)
        }
        // Reported: its report is recorded and its answer on its way (or lost, and the report sent
        // again): nothing to stop, and a stop would end the report's retry saying the attempt is
        // no longer the worker's to run.
        if (a.state !== "running" && a.state !== "reported") stop.push(id)
      }
      for (const { id, runId, a } of heldBy(s, worker.id)) {
        if (listed.has(id)) continue
        if (a.state === "superseded" || a.state === "stopping") {
          yield* execute((st) => RunDecide.decideCease({ runId, attempt: a.n, reason: "its worker no longer runs it", now }, st.runs)).pipe(Effect.ignore)
        } else if (lost !== null && a.state === "running") {
          yield* execute((st) => RunDecide.decideSupersede({ runId, attempt: a.n, reason: lost, now }, st.runs)).pipe(Effect.ignore)
          yield* execute((st) => RunDecide.decideCease({ runId, attempt: a.n, reason: lost, now }, st.runs)).pipe(Effect.ignore)
        }
      }
      return stop
    })

  /**
   * A hello is also the cessation the identity this worker replaced at its join was waiting
   * for (docs/runs.md, "Revocation"): the same installation, starting a session under its new
   * identity, no longer runs what the old one held unless it lists it.
   */
  const hello: DispatcherService["hello"] = (worker, running, resumes = false) =>
    // The claims of the process this hello replaces are answered now (fenced), not at their wait's end.
    Effect.zipRight(claims.wake(worker.id), Effect.sync(() => slotWaits.forget(worker.id))).pipe(
      // The same process saying hello again (its link started again) lists all it runs: one it
      // leaves out never reached it.
      Effect.zipRight(reconcile(worker, running, resumes ? "its worker said hello again without it, resuming its session: its svc serve restarted (killed, and started again on the same boot), or its link started again and the answer that handed it out never arrived" : "its worker restarted without it")),
      Effect.tap(() => (worker.replaces === null ? Effect.void : releaseHeld(worker.replaces, `its installation joined again as ${worker.id} without it`, new Set(running)))),
      Effect.tap(() => kick)
    )

  /** What of each running attempt's output was written, or why it could not be (OutputMarks.ts). */
  const marks = new OutputMarks()

  const appendOutput = (worker: WorkerRecord, delta: OutputDelta) =>
    Effect.gen(function* () {
      const s = yield* state
      const a = attemptIn(s, delta.attempt)
      // Output is kept only for an attempt placed on this worker that still counts.
      if (a === undefined || a.host !== worker.id || a.state !== "running") {
        marks.forget(delta.attempt)
        return
      }
      const stillRuns = (attempt: string) => attemptIn(s, attempt)?.state === "running"
      for (const stream of ["stdout", "stderr"] as const) {
        const at = delta.at?.[stream]
        // Where the piece lies in the worker's copy (revision 4): its new part, under the owner's
        // output limit counted in the worker's bytes; without it (an older worker), as much as the
        // file has room for.
        const part = at === undefined ? undefined : marks.newText(delta.attempt, stream, at, delta[stream], stillRuns)
        const { write, cut, now } = part === undefined ? { write: delta[stream], cut: false, now: undefined } : ownerPart(part.text, part.start, at![1], files.outputLimit, marks.cutOf(delta.attempt, stream))
        if (now !== undefined) marks.setCut(delta.attempt, stream, now)
        if ((write === "" && !cut) || marks.lostWhy(delta.attempt) !== undefined) continue
        yield* files.append(delta.attempt, stream, write, part === undefined ? { within: true } : { cut }).pipe(
          Effect.catchAll((e) =>
            Effect.zipRight(
              Effect.sync(() => marks.lose(delta.attempt, e.message, stillRuns)),
              Effect.logError(`attempt ${delta.attempt} on ${worker.name}: ${e.message}; the rest of its output is not kept, and it fails when it reports`)
            )
          )
        )
      }
    })

  /**
   * Output may name only attempts placed on this worker: another host's, or one its run never had
   * (a bug, or a worker speaking for runs it never had), is refused, not answered as kept. That of
   * an attempt that no longer counts (superseded, stopped) is not kept, as documented; nor is that
   * of a run the owner no longer keeps in memory (settled and forgotten, docs/runs.md), which it
   * cannot tell from one it never had: a superseded job still running on its worker must not
   * have every heartbeat of that worker refused.
   */
  const outputProblem = (s: OwnerState, worker: WorkerRecord, deltas: ReadonlyArray<OutputDelta>): Refusal | undefined => {
    for (const delta of deltas) {
      const bad = pieceProblemOf(delta)
      if (bad !== undefined) return bad
      const parsed = parseAttemptId(delta.attempt)
      const run = parsed === undefined ? undefined : runOf(s, parsed.runId)
      if (parsed !== undefined && run === undefined) continue
      const a = run?.attempts.find((x) => x.n === parsed!.attempt)
      if (a === undefined || a.host !== worker.id) {
        return refusal("unknown-activity", `output names ${JSON.stringify(delta.attempt)}, which is not an attempt placed on this worker: nothing was recorded`)
      }
    }
    return undefined
  }

  /** A piece whose `at` does not cover its text (OutputPieces.ts): refused, so that nothing of it is written past the limit. */
  const pieceProblemOf = (delta: OutputDelta): Refusal | undefined => {
    for (const stream of ["stdout", "stderr"] as const) {
      const at = delta.at?.[stream]
      const problem = at === undefined ? undefined : pieceProblem(at, Buffer.byteLength(delta[stream], "utf8"))
      if (problem !== undefined) return refusal("bad-request", `the ${stream} of ${JSON.stringify(delta.attempt)}: ${problem}; nothing was recorded`)
    }
    return undefined
  }

  const heartbeat: DispatcherService["heartbeat"] = (worker, running, output, waiting = []) =>
    Effect.gen(function* () {
      const refused = outputProblem(yield* state, worker, output)
      if (refused !== undefined) return yield* refused
      slotWaits.note(worker.id, waiting.filter((id) => running.includes(id)), yield* Clock.currentTimeMillis)
      const stop = yield* reconcile(worker, running, null)
      for (const delta of output) yield* appendOutput(worker, delta)
      return [...new Set([...stop, ...(yield* stopsFor(worker.id))])].filter((id) => running.includes(id))
    })

  /** The earliest-submitted attempt placed on this worker and not claimed yet. */
  const nextAssigned = (s: OwnerState, workerId: string) => {
    let best: { runId: string; n: number; seq: number } | undefined
    for (const { runId, a } of heldBy(s, workerId)) {
      const seq = runOf(s, runId)!.submittedSequence
      if (a.state === "assigned" && (best === undefined || seq < best.seq)) best = { runId, n: a.n, seq }
    }
    return best
  }

  /**
   * A claim from a worker that lists what it runs (and so has no other claim in flight): every
   * answer to its earlier claims has arrived or is lost, so an attempt started for it and not
   * listed was handed out in an answer that never arrived (a dropped connection) and is placed
   * again, instead of counting as running there until the worker restarts.
   */
  const LOST_ANSWER = "its worker's next claim did not list it: the answer that handed it out never arrived"
  const claim: DispatcherService["claim"] = (worker, fence, waitMs, running, afterRound = false) =>
    Effect.gen(function* () {
      if (running !== undefined) {
        // Earlier claims of this worker still parked lost their caller: none is handed work now.
        yield* claims.withdraw(worker.id)
        yield* reconcile(worker, running, LOST_ANSWER)
      }
      // A report that claims the next freed a slot: a run waiting for one is placed first (on
      // this worker or another, as placement says), so that this answer can carry it.
      if (afterRound && runWaiting(yield* state)) yield* afterNextRound
      const deadline = (yield* Clock.currentTimeMillis) + waitMs
      // A claim that waited across a takeover or a revocation is answered as its next call would
      // be (both wake it: wakeClaims), not with no work at the end of its wait.
      const standing = (s: OwnerState): Effect.Effect<void, Refusal> => {
        const current = Option.getOrUndefined(HashMap.get(s.registry.workers, worker.id))
        if (current === undefined) return Effect.void
        if (current.revokedAt !== null) return revokedRefusal()
        return fenceRefusal(current, fence) ?? Effect.void
      }
      for (;;) {
        const s = yield* state
        yield* standing(s)
        const next = nextAssigned(s, worker.id)
        if (next !== undefined) {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* Effect.either(executeWithoutRound((st) => RunDecide.decideClaim({ workerId: worker.id, scope: worker.scope, fence, runId: next.runId, attempt: next.n, now }, st.runs)))
          if (claimed._tag === "Right") {
            const run = runOf(yield* state, next.runId)!
            return { kind: "work" as const, attempt: attemptId(run.id, next.n), runId: run.id, address: run.job.address, digest: run.job.digest, input: run.input, timeoutMs: run.job.timeoutMs, outputLimit: files.outputLimit }
          }
          const e = claimed.left
          // Taken by a concurrent claim, or superseded meanwhile: look again. Anything else is an answer.
          if (e._tag === "CommandRejected" && (e.rejection.code === "superseded" || e.rejection.code === "unknown-activity")) continue
          return yield* toRefusal(e)
        }
        const now = yield* Clock.currentTimeMillis
        if (now >= deadline) return null
        // Wait for a placement on this worker: it hands the attempt over (started in its own
        // commit), or wakes this claim to look again.
        const parked = yield* claims.park({ workerId: worker.id, scope: worker.scope, fence })
        // The wait's end answers "over", unless a placement took the claim meanwhile: that
        // placement's settle answers it, with its commit. A timer of its own, not a race: the
        // answer of a hand-off then resumes this fiber directly (bench/dispatch: a race's extra
        // fibers let the placing fiber's remaining work run first, 0.26 ms at p50).
        yield* Effect.fork(Effect.delay(Effect.suspend(() => (claims.leave(parked) ? Effect.void : Deferred.succeed(parked.answer, "over"))), Duration.millis(deadline - now)))
        const woke = yield* Deferred.await(parked.answer).pipe(Effect.onInterrupt(() => Effect.sync(() => claims.leave(parked))))
        const handed = woke === "over" ? null : woke
        if (handed !== null) {
          const run = runOf(yield* state, handed.runId)!
          return { kind: "work" as const, attempt: attemptId(run.id, handed.attempt), runId: run.id, address: run.job.address, digest: run.job.digest, input: run.input, timeoutMs: run.job.timeoutMs, outputLimit: files.outputLimit }
        }
        if (woke === "over") {
          yield* standing(yield* state)
          return null
        }
      }
    })

  const decline: DispatcherService["decline"] = (worker, attempt, reason) =>
    Effect.gen(function* () {
      const { runId, attempt: n } = yield* parse(attempt)
      const now = yield* Clock.currentTimeMillis
      const recorded = yield* execute((s) => RunDecide.decideDecline({ workerId: worker.id, scope: worker.scope, runId, attempt: n, reason, now }, s.runs)).pipe(Effect.mapError(toRefusal))
      // The last decline it is offered the run for (Decide.ts, MAX_DECLINES): said, with the way
      // out, since its explanation cannot tell this case from a decline it has not advertised since.
      const run = runOf(yield* state, runId)
      const declines = run === undefined ? 0 : RunDecide.declinesOf(run, worker.id).count
      if (recorded.length > 0 && declines === RunDecide.MAX_DECLINES) {
        yield* Effect.logWarning(
          `worker ${worker.name} (${worker.id}) declined run ${runId} ${declines} times (the last: ${reason}): it is not offered that run again; another host may take it, or svc runs stop ${runId} ends it`
        )
      }
    })

  const report: DispatcherService["report"] = (worker, attempt, outcome, output) =>
    Effect.gen(function* () {
      const { runId, attempt: n } = yield* parse(attempt)
      if (output !== undefined && output.attempt !== attempt) {
        return yield* refusal("bad-request", `output.attempt is ${JSON.stringify(output.attempt)}, but this report is for ${JSON.stringify(attempt)}: a report carries its own attempt's output (others go with a heartbeat)`)
      }
      const badPiece = output === undefined ? undefined : pieceProblemOf(output)
      if (badPiece !== undefined) return yield* badPiece
      // What the output files hold before this report's output: a report refused (the journal could
      // not take it) has its output taken back, so the same report sent again writes it once.
      const before = output === undefined ? undefined : yield* files.sizes(attempt)
      const marksBefore = marks.snapshot(attempt)
      if (output !== undefined) yield* appendOutput(worker, output)
      const lost = marks.lostWhy(attempt)
      const failed = lost !== undefined && outcome.ok
      yield* recordReport(worker.id, worker.scope, runId, n, {
        ok: outcome.ok && !failed,
        result: failed ? null : (outcome.result ?? null),
        error: failed ? lost : (outcome.error ?? (outcome.ok ? null : "failed")),
        exitCode: outcome.exitCode ?? null,
        ...(outcome.durationMs === undefined ? {} : { ranMs: outcome.durationMs })
      }).pipe(
        Effect.tapError(() =>
          before === undefined
            ? Effect.void
            : Effect.zipRight(
                // As it was before this report, what it found it could not write too: the report
                // sent again (the disk freed meanwhile) writes its output and is not failed for it.
                Effect.sync(() => marks.restore(attempt, marksBefore)),
                files.truncate(attempt, before)
              )
        ),
        Effect.tap(() => Effect.sync(() => marks.forget(attempt))),
        Effect.mapError(toRefusal)
      )
    })

  return { hello, claim, heartbeat, decline, report, stopsFor }
}
