/**
 * The worker side of runs, for one owner (docs/runs.md): claim while this machine has a free
 * slot (the claim long-polls), run what is handed over with the same executor the owner uses,
 * heartbeat while anything runs (with the output printed since), and report the outcome. The
 * slots are one machine-wide arbiter, shared by every owner this machine works for and by its
 * own owner runtime, so the total running never exceeds its capacity.
 *
 * An attempt outlives the session that claimed it: after a reconnect the hello lists it and the
 * report goes out with the new session's fence. An attempt the owner says to stop is stopped and
 * not reported; a report the owner refuses (superseded) is dropped: its activity runs elsewhere.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import { ranMsOf } from "../../domain/journal/Events.js"
import type { ExecutionOutcome, ExecutorService } from "../runs/Executor.js"
import type { JobNotRunnable, ResolvedJob } from "../runs/JobCatalog.js"
import type { RunFilesService } from "../runs/RunFiles.js"
import { jsonBytes, MAX_BODY_BYTES, PROTOCOL_REVISION, type Assignment, type OutputDelta, type Refusal, type WorkerRequest, type WorkerResponse } from "./Protocol.js"
import type { Slots } from "./Slots.js"
import type { Unreachable } from "./Link.js"

/** What the protocol takes as a run time (the same schema checks the report on the owner). */

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

type Call = (request: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal | Unreachable>

interface Running {
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

/** How long a report asking for the next attempt keeps its slot for it before giving it back. */
export const HAND_OVER_WITHIN = Duration.seconds(2)

/** At most this many bytes of one stream in one delta (the protocol's limit on its characters). */
const MAX_DELTA = 65_536
/** Room kept in every body for what the estimate of the rest may miss. */
const BODY_SLACK = 1_024
/** A report's body without output at most, so that a quarter of a body is left for output. */
export const MAX_REPORT_BYTES = (MAX_BODY_BYTES / 4) * 3 - BODY_SLACK
/** What one delta adds to a body besides its text: the field names, the attempt id, the quotes. */
const deltaOverhead = (attempt: string) => jsonBytes({ attempt, stdout: "", stderr: "" }) + 1

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
    for (const attempt of yield* side.files.attempts) yield* side.files.remove(attempt)
    let fence = 0
    /**
     * Changes to the set of running attempts (a start, an end), and how many of them the last
     * heartbeat told the owner of. The owner counts an attempt from its claim, so an attempt
     * that started and was stopped between two heartbeats still owes one heartbeat without it.
     */
    let changes = 0
    let told = 0

    /**
     * One stream's output from `offset`, as much as `budget` bytes of JSON can carry (escapes and
     * UTF-8 included); `more` when the read was cut short, by the budget or the delta's limit,
     * so output may be left.
     */
    const readWithin = (attempt: string, stream: "stdout" | "stderr", offset: number, budget: number, ended: boolean) =>
      Effect.gen(function* () {
        let max = Math.min(MAX_DELTA, budget - 2)
        while (max > 0) {
          const read = yield* side.files.readFrom(attempt, stream, offset, max, ended)
          const bytes = jsonBytes(read.text)
          // A read that filled what was asked (but for a character cut at its end) may have left some.
          if (bytes <= budget) return { text: read.text, next: read.next, bytes, more: read.next - offset > max - 4 }
          // Escapes made it heavier than its bytes: ask for proportionally fewer.
          max = Math.floor((max * budget) / bytes) - 8
        }
        return { text: "", next: offset, bytes: 2, more: true }
      })

    /**
     * An attempt's output since the owner last had it, as much as `budget` bytes of a body can
     * carry, and where the next delta starts; `more` when some may be left.
     */
    const delta = (attempt: string, r: Running, budget: number) =>
      Effect.gen(function* () {
        const room = budget - deltaOverhead(attempt)
        // Reporting, the job has exited: its streams are whole, a character it left incomplete included.
        const out = yield* readWithin(attempt, "stdout", r.offsets.stdout, room, r.reporting)
        const err = yield* readWithin(attempt, "stderr", r.offsets.stderr, room - out.bytes + 2, r.reporting)
        return {
          delta: { attempt, stdout: out.text, stderr: err.text } satisfies OutputDelta,
          next: { stdout: out.next, stderr: err.next },
          bytes: deltaOverhead(attempt) + out.bytes + err.bytes - 4,
          more: out.more || err.more
        }
      })

    /**
     * An attempt's output goes in one call at a time, so that no piece goes twice: the
     * heartbeats carry it until its report begins (`Running.reporting`); from then on the report
     * does, once the heartbeat that may be carrying some of it is answered (`carrying`, `carried`).
     */
    const carrying = new Set<string>()
    let carried = yield* Deferred.make<void>()
    const notCarried = (attempt: string): Effect.Effect<void> =>
      carrying.has(attempt) ? Effect.zipRight(Deferred.await(carried), Effect.suspend(() => notCarried(attempt))) : Effect.void
    const whileUnreachable = {
      while: (e: Refusal | Unreachable) => e._tag === "Unreachable",
      schedule: Schedule.exponential(Duration.seconds(1)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(10))))
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
     * Report and claim the next (docs/protocol.md): a report may ask for the next attempt placed
     * on this worker, which then takes the reported attempt's slot. Asked only when the slot
     * would go to this owner's claims anyway: the claim loop waits for a slot and nobody else
     * does (another owner's claims, this machine's own runs). `asking` counts such reports until
     * the attempt handed back is among those running: while one is, a claim does not list what
     * this worker runs (the attempt its answer hands over could not be in the list, and the owner
     * would take it for one whose answer was lost), and only a report alone in asking does.
     */
    let loopWaitsForSlot = false
    let asking = 0
    const mayAskForNext = () => loopWaitsForSlot && side.slots.waiting() === 1

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

    /**
     * The report, retried while the owner cannot be reached; a refusal ends it (logged).
     * Answers the attempt handed over with it, if it asked for one (decided once, `entry.asking`).
     * A body is at most 64 KiB: output the report cannot carry goes ahead of it in heartbeats,
     * and a result it cannot carry fails the attempt, saying so (docs/runs.md, "Output").
     */
    const report = (attempt: string, outcome: ExecutionOutcome, r: Running, entry: Entry) =>
      Effect.gen(function* () {
        let claimNext = mayAskForNext()
        if (claimNext) {
          asking++
          entry.asking = true
        }
        /**
         * The job is over: its slot goes back, for other owners and this machine's own runs; the
         * report, retried until it lands, no longer asks for the next attempt (it has no slot to
         * hand over). At once when the report does not ask for the next; else when the owner
         * cannot be reached, or has not answered in HAND_OVER_WITHIN (an owner stopped with
         * SIGSTOP answers nothing, and its reports held the machine's slots from every other
         * owner for as long as it was stopped).
         */
        const giveUp = Effect.suspend(() => {
          if (claimNext) {
            claimNext = false
            asking--
            entry.asking = false
          }
          return entry.giveBack ?? Effect.void
        })
        const letGo = (e: Refusal | Unreachable) => (e._tag !== "Unreachable" ? Effect.void : giveUp)
        // How long it ran, said in whole milliseconds: its report may arrive much later.
        const ran = ranMsOf(outcome.durationMs)
        // Revision 2: an owner before it refuses the field, and with it every report.
        const durationMs = ran !== undefined && revision() >= 2 ? { durationMs: ran } : {}
        let sent: Extract<WorkerRequest, { kind: "report" }>["outcome"] = {
          ok: outcome.ok,
          ...(outcome.ok ? { result: outcome.result } : {}),
          ...(outcome.error === null ? {} : { error: outcome.error.slice(0, 2000) }),
          exitCode: outcome.exitCode,
          ...durationMs
        }
        const body = (output?: OutputDelta): WorkerRequest => ({
          kind: "report",
          fence,
          attempt,
          outcome: sent,
          ...(output === undefined ? {} : { output }),
          // What it runs, listed as of this very call (a retry may list more).
          ...(claimNext ? { claimNext, ...(asking === 1 ? { running: [...running.keys()].filter((id) => id !== attempt) } : {}) } : {})
        })
        const roomFor = (request: WorkerRequest) => MAX_BODY_BYTES - BODY_SLACK - jsonBytes(request)
        // Room for some output too, or the result is more than a report can carry.
        if (jsonBytes(body()) > MAX_REPORT_BYTES) {
          const size = jsonBytes(sent.result)
          // What the result may weigh: the report's limit less the rest of this report.
          const room = MAX_REPORT_BYTES - (jsonBytes(body()) - size)
          sent = {
            ok: false,
            error: `its result is ${size} bytes of JSON, more than the ${room} a report from a worker can carry beside the rest; a bigger result belongs in a file`,
            exitCode: outcome.exitCode
          }
        }
        r.reporting = true
        // Reporting, it holds a slot only to hand it to the next attempt the report asks for.
        if (!claimNext) yield* giveUp
        const handOver = claimNext ? yield* Effect.fork(Effect.zipRight(Effect.sleep(HAND_OVER_WITHIN), giveUp)) : undefined
        yield* notCarried(attempt)
        return yield* Effect.gen(function* () {
          // The output first: what the report cannot carry goes in heartbeats ahead of it.
          for (;;) {
            const d = yield* delta(attempt, r, roomFor(body()))
            if (!d.more) {
              const answer = yield* Effect.suspend(() => call(body(d.delta))).pipe(Effect.tapError(letGo), Effect.retry(whileUnreachable))
              r.offsets = d.next
              return answer
            }
            const answer = yield* Effect.suspend(() => call({ kind: "heartbeat", fence, running: [...running.keys()], output: [d.delta] })).pipe(
              Effect.tapError(letGo),
              Effect.retry(whileUnreachable)
            )
            r.offsets = d.next
            if (answer.kind === "ack") yield* stop(answer.stop.filter((id) => id !== attempt))
          }
        }).pipe(
          Effect.map((answer) => (answer.kind === "ack" ? (answer.next ?? undefined) : undefined)),
          Effect.catchAll((e) => Effect.as(Effect.logWarning(`the owner refused the report of ${attempt}: ${e.message}`), undefined)),
          Effect.ensuring(handOver === undefined ? Effect.void : Fiber.interrupt(handOver))
        )
      })

    type Entry = { r?: Running; next?: Assignment; asking?: boolean; giveBack?: Effect.Effect<void> }
    const execute = (work: Assignment, entry: Entry) =>
      Effect.gen(function* () {
        const resolved = yield* Effect.either(side.resolve(work.address))
        const problem =
          resolved._tag === "Left"
            ? resolved.left.message
            : resolved.right.job.digest !== work.digest
              ? `this worker holds ${work.address} with digest ${resolved.right.job.digest}, not ${work.digest}`
              : undefined
        if (problem !== undefined || resolved._tag === "Left") {
          yield* Effect.logWarning(`declined attempt ${work.attempt} (${work.address}) for ${owner}: ${problem ?? "cannot run it"}`)
          yield* call({ kind: "decline", fence, attempt: work.attempt, reason: problem ?? "cannot run it" }).pipe(Effect.ignore)
          return
        }
        const job = resolved.right
        const paths = side.files.paths(work.attempt)
        yield* Effect.logInfo(`running attempt ${work.attempt} (${work.address}) for ${owner}`)
        const outcome = yield* side.executor.run({
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
          stdoutFile: paths.stdout,
          stderrFile: paths.stderr
        })
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
          changes++
          return side.slots.release
        })
        // Only the wait can be interrupted before the slot is taken; once taken it is held.
        const slot = holds ? Effect.void : Effect.uninterruptibleMask((restore) => Effect.tap(restore(side.slots.take), () => void (holds = true)))
        // Interruptible even when started from the claim's protected region: a stop must reach it.
        const fiber = yield* Effect.interruptible(Effect.zipRight(slot, execute(work, entry))).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              running.delete(work.attempt)
              changes++
              const next = entry.next
              // Handed over after its slot went back (the answer came late): it waits for one.
              if (!holds) return next === undefined ? Effect.void : start(next, false)
              return next === undefined ? side.slots.release : start(next, true)
            }).pipe(
              // Counted as asking until the attempt handed back runs (see `asking`).
              Effect.ensuring(
                Effect.sync(() => {
                  if (entry.asking === true) asking--
                })
              ),
              // Its output went to the owner with the heartbeats and the report; a stopped or
              // superseded attempt's is not wanted. The copy here goes (docs/runs.md, "Output").
              Effect.andThen(side.files.remove(work.attempt))
            )
          ),
          Effect.forkDaemon
        )
        entry.r = { fiber, stopped: false, offsets: { stdout: 0, stderr: 0 }, reporting: false, holdsSlot: () => holds }
        running.set(work.attempt, entry.r)
        changes++
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
          loopWaitsForSlot = true
          yield* restore(side.slots.awaitFree).pipe(Effect.ensuring(Effect.sync(() => (loopWaitsForSlot = false))))
          // What it runs, unless a report asking for the next attempt is in flight (see `asking`).
          const listing = asking === 0 ? { running: [...running.keys()] } : {}
          const busy = busyElsewhere()
          const answer = yield* restore(call({ kind: "claim", fence, waitSeconds: side.claimWaitSeconds, ...listing, ...(busy > 0 ? { busy } : {}) }))
          if (answer.kind === "work") yield* start(answer, yield* side.slots.tryTake)
        })
      )
    )

    /**
     * Every `heartbeatEvery` while anything runs, with the output printed since, as much as one
     * body carries (the attempts take turns to go first); with output left over, the next one
     * goes at once.
     */
    let backlog = false
    let turn = 0
    const heartbeating = Effect.forever(
      Effect.gen(function* () {
        if (!backlog) yield* Effect.sleep(side.heartbeatEvery)
        backlog = false
        // While anything runs, and once more after the set last changed: that heartbeat, listing
        // nothing, tells the owner a stopped or superseded attempt has ceased (its slot is freed).
        if (running.size === 0 && told === changes) return
        const done = (carried = yield* Deferred.make<void>())
        yield* Effect.gen(function* () {
          const telling = changes
          // Those still waiting for a slot here: the owner shows them so (docs/runs.md).
          const waiting = [...running].filter(([, r]) => !r.holdsSlot() && !r.reporting).map(([id]) => id)
          const base = { kind: "heartbeat" as const, fence, running: [...running.keys()], ...(waiting.length > 0 ? { waiting } : {}) }
          let room = MAX_BODY_BYTES - BODY_SLACK - jsonBytes({ ...base, output: [] })
          const output: Array<OutputDelta> = []
          const next = new Map<string, Running["offsets"]>()
          const order = [...running]
          turn = order.length === 0 ? 0 : (turn + 1) % order.length
          for (const [id, r] of [...order.slice(turn), ...order.slice(0, turn)]) {
            // Its report carries the rest.
            if (r.reporting) continue
            if (room <= deltaOverhead(id) + 16) {
              backlog = true
              continue
            }
            carrying.add(id)
            const d = yield* delta(id, r, room)
            backlog ||= d.more
            next.set(id, d.next)
            if (d.delta.stdout !== "" || d.delta.stderr !== "") {
              output.push(d.delta)
              room -= d.bytes
            }
          }
          const answer = yield* call({ ...base, output })
          told = telling
          // Sent: the next heartbeat starts after what this one carried.
          for (const [id, offsets] of next) {
            const r = running.get(id)
            if (r !== undefined) r.offsets = offsets
          }
          if (answer.kind === "ack") yield* stop(answer.stop)
        }).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              carrying.clear()
              return Deferred.succeed(done, undefined)
            })
          )
        )
      })
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
          fence = f
          return Effect.raceFirst(claiming, heartbeating)
        })
    }
  })
