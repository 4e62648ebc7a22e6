/**
 * The worker side of runs, for one owner (docs/runs.md): claim while this machine has a free
 * slot (the claim long-polls), run what is handed over with the same executor the owner uses,
 * heartbeat while anything runs (with the output printed since), and report the outcome. The
 * slots are one machine-wide arbiter, shared by every owner this machine works for and by its
 * own owner runtime, so the total running never exceeds its capacity.
 *
 * An attempt outlives the session that claimed it: after a reconnect the hello lists it and the
 * report goes out with the new session's fence (one already on its way under the session before,
 * refused as fenced, goes again under the new one). An attempt the owner says to stop is stopped
 * and not reported; a report the owner refuses (superseded) is dropped: its activity runs
 * elsewhere. A job this worker does not hold is declined; one whose bag it cannot read now (too
 * many open files) fails, since a decline would keep it from that run for good.
 *
 * This module claims and runs attempts, and holds what the other parts share (`WorkState`):
 * the output they send is read by WorkOutput.ts, the heartbeats are WorkHeartbeats.ts, and the
 * report (with the slot it may hand over) is WorkReports.ts.
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { ExecutionOutcome, ExecutorService } from "../runs/Executor.js"
import type { JobNotRunnable, ResolvedJob } from "../runs/JobCatalog.js"
import type { RunFilesService } from "../runs/RunFiles.js"
import { PROTOCOL_REVISION, type Assignment, type Refusal, type WorkerRequest, type WorkerResponse } from "./Protocol.js"
import type { Slots } from "./Slots.js"
import type { Unreachable } from "./Link.js"
import { makeWorkHeartbeats } from "./WorkHeartbeats.js"
import { makeOutputDeltas, type Carriage } from "./WorkOutput.js"
import { makeWorkReports } from "./WorkReports.js"

export { MAX_REPORT_BYTES } from "./WorkOutput.js"
export { HAND_OVER_WITHIN } from "./WorkReports.js"


export interface WorkSide {
  /** The machine-wide slots: a claim is made while one is free, and an attempt holds one while it runs. */
  readonly slots: Slots
  readonly resolve: (address: string) => Effect.Effect<ResolvedJob, JobNotRunnable>
  readonly executor: ExecutorService
  readonly files: RunFilesService
  /** How long a claim may wait at the owner for work. */
  readonly claimWaitSeconds: number
  readonly heartbeatEvery: Duration.Duration
}

export type Call = (request: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal | Unreachable>

export interface Running {
  readonly fiber: Fiber.RuntimeFiber<void>
  stopped: boolean
  offsets: { stdout: number; stderr: number }
  /** Its report has begun: the report sends the rest of its output, heartbeats no longer do. */
  reporting: boolean
  /** Whether it holds a slot yet (an attempt that arrived with none free waits for one). */
  readonly holdsSlot: () => boolean
}

/** What a link does for its owner at one moment (Work's `counts`). */
export interface WorkCounts {
  readonly running: number
  readonly waiting: number
  readonly reporting: number
  readonly busy: number
}

/**
 * What the claims, the heartbeats and the reports for one owner share, made once by `makeWork`:
 * the attempts running here, the session's fence, and what tells each part what the others do.
 */
export interface WorkState extends Carriage {
  readonly running: Map<string, Running>
  fence: number
  /**
   * Changes to the set of running attempts (a start, an end): the heartbeats count how many of
   * them the last one told the owner of. The owner counts an attempt from its claim, so an
   * attempt that started and was stopped between two heartbeats still owes one heartbeat without it.
   */
  changes: number
  /** The claim loop waits for a slot (a report may then ask for the next attempt: WorkReports.ts). */
  loopWaitsForSlot: boolean
  /** Reports asking for the next attempt, until the attempt handed back runs (WorkReports.ts, `mayAskForNext`). */
  asking: number
}

/** Stops the attempts named that run here (`makeWork`'s `stop`). */
export type Stop = (ids: ReadonlyArray<string>, why?: string) => Effect.Effect<void>

/** What an attempt's fiber and its report share: the attempt running, the one handed over, the slot. */
export type Entry = { r?: Running; next?: Assignment; asking?: boolean; giveBack?: Effect.Effect<void> }

/**
 * `owner`: how this machine's log names the owner the work is for (`the owner at URL`): a person
 * looking after a worker sees in its log what ran on it, for whom, and how it ended.
 */
export const makeWork = (
  side: WorkSide,
  call: Call,
  owner = "the owner",
  /** What of the protocol the owner takes (its welcome's revision): what a later one added is not sent to it. */
  revision: () => number = () => PROTOCOL_REVISION
) =>
  Effect.gen(function* () {
    const running = new Map<string, Running>()
    // Nothing runs yet for this owner in this process: output files here are left from a process
    // that ended while running (its attempts are placed again, their output is not wanted).
    for (const attempt of yield* side.files.attempts) yield* side.files.remove(attempt).pipe(Effect.catchAll((e) => Effect.logWarning(e.message)))
    const state: WorkState = {
      running,
      fence: 0,
      changes: 0,
      loopWaitsForSlot: false,
      asking: 0,
      carrying: new Set<string>(),
      carried: yield* Deferred.make<void>()
    }

    /** Stops the attempts named that run here (the owner listed them: stopped, superseded or unknown to it), saying so once each. */
    const stop = (ids: ReadonlyArray<string>, why = "the owner says it is no longer this worker's to run (stopped, or placed again)") =>
      Effect.forEach(
        ids,
        (id) => {
          const r = running.get(id)
          if (r === undefined) return Effect.void
          // Stopped already: wait for it all the same (a link that ends waits for its work), without saying it twice.
          if (r.stopped) return Fiber.interrupt(r.fiber)
          r.stopped = true
          return Effect.zipRight(Effect.logInfo(`stopping attempt ${id}: ${why}`), Fiber.interrupt(r.fiber))
        },
        // Each is given its grace at the same time: one after the other, two jobs that ignore
        // SIGTERM held a stop 10 s.
        { discard: true, concurrency: "unbounded" }
      )

    /**
     * The machine's slots other work holds now (other owners' attempts, this machine's own runs):
     * what the claims and advertisements tell the owner as `busy` (docs/runs.md, "What an owner
     * sees of a shared worker"), at most 100 as the protocol allows.
     */
    const busyElsewhere = () => {
      let holding = 0
      for (const r of running.values()) if (r.holdsSlot()) holding++
      return Math.min(100, Math.max(0, side.slots.taken() - holding))
    }

    const { delta } = makeOutputDeltas(side.files, revision)
    const { report } = makeWorkReports({ slots: side.slots, call, state, delta, stop, revision })
    const { heartbeating } = makeWorkHeartbeats({ heartbeatEvery: side.heartbeatEvery, call, state, delta, stop })

    const execute = (work: Assignment, entry: Entry) =>
      Effect.gen(function* () {
        const resolved = yield* Effect.either(side.resolve(work.address))
        // Its bag could not be read here (too many open files, an I/O error): the attempt fails,
        // saying so. A decline would keep this worker from the run for good.
        const unreadable = resolved._tag === "Left" && resolved.left.unreadable === true ? resolved.left.message : undefined
        const problem =
          resolved._tag === "Left"
            ? unreadable === undefined ? resolved.left.message : undefined
            : resolved.right.job.digest !== work.digest
              ? `this worker holds ${work.address} with digest ${resolved.right.job.digest}, not ${work.digest}`
              : undefined
        if (problem !== undefined) {
          yield* Effect.logWarning(`declined attempt ${work.attempt} (${work.address}) for ${owner}: ${problem}`)
          yield* call({ kind: "decline", fence: state.fence, attempt: work.attempt, reason: problem }).pipe(Effect.ignore)
          return
        }
        const paths = side.files.paths(work.attempt)
        const run = (job: ResolvedJob) =>
          Effect.zipRight(
            Effect.logInfo(`running attempt ${work.attempt} (${work.address}) for ${owner}`),
            side.executor.run({
              attempt: work.attempt,
              runId: work.runId,
              bagDir: job.bagDir,
              runs: job.runs,
              env: job.env,
              workingDirectory: job.workingDirectory,
              secrets: job.secrets,
              preflight: job.preflight,
              validate: job.validate,
              input: work.input,
              timeoutMs: work.timeoutMs,
              outputLimit: work.outputLimit,
              stdoutFile: paths.stdout,
              stderrFile: paths.stderr
            })
          )
        const outcome: ExecutionOutcome =
          resolved._tag === "Right"
            ? yield* run(resolved.right)
            : { ok: false, result: null, error: `its bag could not be read on this worker: ${unreadable}`, exitCode: null, signal: null, durationMs: 0 }
        const r = entry.r!
        if (!r.stopped) {
          // The job's own error text stays out of this log (it may quote what the job was given); the owner keeps it.
          const took = `${(outcome.durationMs / 1000).toFixed(1)} s`
          yield* Effect.logInfo(
            outcome.ok
              ? `attempt ${work.attempt} (${work.address}) succeeded in ${took}; reporting it to ${owner}`
              : `attempt ${work.attempt} (${work.address}) failed in ${took}${outcome.exitCode === null ? "" : ` (exit code ${outcome.exitCode})`}; reporting it to ${owner}, where svc runs show ${work.runId} tells why`
          )
          const next = yield* report(work.attempt, outcome, r, entry)
          if (next !== undefined) entry.next = next
        }
      })

    /**
     * Runs an attempt in a slot: the one taken for it (`holding`), or else the next one free,
     * waited for first. From here it counts among those this worker runs (heartbeats list it, a
     * stop reaches it) while it waits too. When it ends, its slot goes to the attempt its report
     * was handed, or back.
     */
    const start = (work: Assignment, holding: boolean): Effect.Effect<void> =>
      Effect.gen(function* () {
        const entry: Entry = {}
        let holds = holding
        // Its job is over and its report no longer hands the slot on: it goes back (see `report`).
        entry.giveBack = Effect.suspend(() => {
          if (!holds) return Effect.void
          holds = false
          state.changes++
          return side.slots.release
        })
        // Only the wait can be interrupted before the slot is taken; once taken it is held.
        const slot = holds ? Effect.void : Effect.uninterruptibleMask((restore) => Effect.tap(restore(side.slots.take), () => void (holds = true)))
        // Interruptible even when started from the claim's protected region: a stop must reach it.
        const fiber = yield* Effect.interruptible(Effect.zipRight(slot, execute(work, entry))).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              running.delete(work.attempt)
              state.changes++
              const next = entry.next
              // Handed over after its slot went back (the answer came late): it waits for one.
              if (!holds) return next === undefined ? Effect.void : start(next, false)
              return next === undefined ? side.slots.release : start(next, true)
            }).pipe(
              // Counted as asking until the attempt handed back runs (see `WorkState.asking`).
              Effect.ensuring(
                Effect.sync(() => {
                  if (entry.asking === true) state.asking--
                })
              ),
              // Its output went to the owner with the heartbeats and the report; a stopped or
              // superseded attempt's is not wanted. The copy here goes (docs/runs.md, "Output").
              Effect.andThen(side.files.remove(work.attempt).pipe(Effect.catchAll((e) => Effect.logWarning(e.message))))
            )
          ),
          Effect.forkDaemon
        )
        entry.r = { fiber, stopped: false, offsets: { stdout: 0, stderr: 0 }, reporting: false, holdsSlot: () => holds }
        running.set(work.attempt, entry.r)
        state.changes++
      })

    /**
     * Wait for a free slot, then claim; work takes the slot, no work leaves it free. The claim
     * holds no slot while it waits at the owner (up to `claimWaitSeconds`), so an idle claim keeps
     * nothing waiting: this machine's own runs and other owners' work take the slots meanwhile.
     * Work that arrives when none is free is not given back: it waits for the next free slot, as
     * an attempt this worker runs (docs/runs.md, "On a worker"), and the loop claims again only
     * once a slot is free and that attempt has one. So each owner's link has at most one attempt
     * waiting for a slot, and no answer is ever dropped. Only the waits are interruptible (a
     * session ending stops a claim).
     */
    const claiming = Effect.forever(
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          state.loopWaitsForSlot = true
          yield* restore(side.slots.awaitFree).pipe(Effect.ensuring(Effect.sync(() => (state.loopWaitsForSlot = false))))
          // What it runs, unless a report asking for the next attempt is in flight (see `WorkState.asking`).
          const listing = state.asking === 0 ? { running: [...running.keys()] } : {}
          const busy = busyElsewhere()
          const answer = yield* restore(call({ kind: "claim", fence: state.fence, waitSeconds: side.claimWaitSeconds, ...listing, ...(busy > 0 ? { busy } : {}) }))
          if (answer.kind === "work") yield* start(answer, yield* side.slots.tryTake)
        })
      )
    )

    return {
      running: () => [...running.keys()],
      busyElsewhere,
      /**
       * What it does for this owner now, told apart: attempts running (a slot held, the job not
       * over), waiting for a slot, and over with their report not answered yet; and the slots
       * other work holds. Read when asked (`svc workers status`), so every owner's line is of one moment.
       */
      counts: (): WorkCounts => {
        let runningNow = 0
        let waiting = 0
        let reporting = 0
        for (const r of running.values()) {
          if (r.reporting) reporting++
          else if (r.holdsSlot()) runningNow++
          else waiting++
        }
        return { running: runningNow, waiting, reporting, busy: busyElsewhere() }
      },
      stop,
      stopAll: Effect.suspend(() => stop([...running.keys()], "its link to the owner has ended")),
      /** Claims and heartbeats under this session's fence, until one of them fails. */
      session: (f: number) =>
        Effect.suspend(() => {
          state.fence = f
          return Effect.raceFirst(claiming, heartbeating)
        })
    }
  })
