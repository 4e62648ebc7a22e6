/**
 * A worker's report of an attempt's outcome to its owner (docs/runs.md, "On a worker"), with the
 * rest of the attempt's output, retried while the owner cannot be reached. A report may ask for
 * the next attempt placed on this worker, which then takes the reported attempt's slot: while it
 * is in flight the slot is held for that attempt, within HAND_OVER_WITHIN, then given back.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import { ranMsOf } from "../../domain/journal/Events.js"
import type { ExecutionOutcome } from "../runs/Executor.js"
import type { Unreachable } from "./Link.js"
import { jsonBytes, MAX_BODY_BYTES, type OutputDelta, type Refusal, type WorkerRequest } from "./Protocol.js"
import type { Slots } from "./Slots.js"
import type { Call, Entry, Running, Stop, WorkState } from "./Work.js"
import { BODY_SLACK, MAX_REPORT_BYTES, notCarried, type Delta } from "./WorkOutput.js"

/** How long a report asking for the next attempt keeps its slot for it before giving it back. */
export const HAND_OVER_WITHIN = Duration.seconds(2)

/** What a report uses of the work for its owner. */
export interface WorkReportsContext {
  readonly slots: Slots
  readonly call: Call
  readonly state: WorkState
  readonly delta: Delta
  readonly stop: Stop
  /** What of the protocol the owner takes (its welcome's revision): what a later one added is not sent to it. */
  readonly revision: () => number
}

export const makeWorkReports = ({ slots, call, state, delta, stop, revision }: WorkReportsContext) => {
  const { running } = state
  /**
   * A report's call is sent again while the owner cannot be reached, and when refused as fenced:
   * it crossed this process's own new session (the link said hello again after a cut connection
   * while the call was on its way under the session before; the network audit saw the job's
   * result dropped and the job run again), or another process holds the session. Each time it
   * goes under the session the link has then: in the first case it is taken once the link's
   * hello is through (however long its backoff; a fixed wait of 5 s was not enough); in the
   * second the link ends, stopping its work, this report with it.
   */
  const sentAgain = (e: Refusal | Unreachable) => e._tag === "Unreachable" || e.code === "fenced"
  const whileSentAgain = {
    while: sentAgain,
    schedule: Schedule.exponential(Duration.seconds(1)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(10))))
  }

  /**
   * Report and claim the next (docs/protocol.md): a report may ask for the next attempt placed
   * on this worker, which then takes the reported attempt's slot. Asked only when the slot
   * would go to this owner's claims anyway: the claim loop waits for a slot and nobody else
   * does (another owner's claims, this machine's own runs). `asking` counts such reports until
   * the attempt handed back is among those running: while one is, a claim does not list what
   * this worker runs (the attempt its answer hands over could not be in the list, and the owner
   * would take it for one whose answer was lost), and only a report alone in asking does.
   */
  const mayAskForNext = () => state.loopWaitsForSlot && slots.waiting() === 1

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
        state.asking++
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
          state.asking--
          entry.asking = false
        }
        return entry.giveBack ?? Effect.void
      })
      // Not taken, and sent again: said once per report (a report retried through an owner's
      // 503s, its other calls answered, went unsaid).
      let said = false
      const letGo = (e: Refusal | Unreachable) => {
        if (!sentAgain(e)) return Effect.void
        if (said) return giveUp
        said = true
        return Effect.zipRight(Effect.logWarning(`the report of ${attempt} was not taken (${e.message}); it is sent again until it is`), giveUp)
      }
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
        fence: state.fence,
        attempt,
        outcome: sent,
        ...(output === undefined ? {} : { output }),
        // What it runs, listed as of this very call (a retry may list more).
        ...(claimNext ? { claimNext, ...(state.asking === 1 ? { running: [...running.keys()].filter((id) => id !== attempt) } : {}) } : {})
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
      yield* notCarried(state, attempt)
      return yield* Effect.gen(function* () {
        // The output first: what the report cannot carry goes in heartbeats ahead of it.
        for (;;) {
          const d = yield* delta(attempt, r, roomFor(body()))
          if (!d.more) {
            const answer = yield* Effect.suspend(() => call(body(d.delta))).pipe(Effect.tapError(letGo), Effect.retry(whileSentAgain))
            r.offsets = d.next
            return answer
          }
          const answer = yield* Effect.suspend(() => call({ kind: "heartbeat", fence: state.fence, running: [...running.keys()], output: [d.delta] })).pipe(
            Effect.tapError(letGo),
            Effect.retry(whileSentAgain)
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

  return { report }
}
