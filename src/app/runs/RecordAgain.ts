/**
 * What already happened, recorded again until the journal takes it: the outcome of an attempt the
 * owner ran, the end of the attempts a restart found running. The journal may not take it now (its
 * disk full, an I/O error; or a conflict the command's own retries did not settle): it is tried
 * again every RECORD_AGAIN_EVERY, said in the log once, and again once recorded. Logged and
 * dropped, such an outcome left its run `running` with its slot held until the next start, which
 * ran the job again. A command the state now rejects (the run was stopped meanwhile) is not
 * tried again: its caller hears it.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { JournalError, StreamConflict } from "../journal/Journal.js"
import type { CommandRejected } from "../journal/Projections.js"

export const RECORD_AGAIN_EVERY = Duration.seconds(5)

export const recordAgain = <A>(what: string, record: Effect.Effect<A, CommandRejected | StreamConflict | JournalError>): Effect.Effect<A, CommandRejected> => {
  let failed = false
  return Effect.gen(function* () {
    for (let tries = 1; ; tries++) {
      const recorded = yield* Effect.either(record)
      if (recorded._tag === "Right") {
        if (tries > 1) yield* Effect.logInfo(`${what} is recorded (after ${tries} tries)`)
        return recorded.right
      }
      const e = recorded.left
      if (e._tag === "CommandRejected") return yield* Effect.fail(e)
      if (tries === 1) yield* Effect.logError(`${what} could not be recorded: ${e.message}; svc tries again every ${Duration.toSeconds(RECORD_AGAIN_EVERY)} s`)
      failed = true
      yield* Effect.sleep(RECORD_AGAIN_EVERY)
    }
  }).pipe(
    // Stopped while still trying (the runtime stops): said, since the next start places the run again.
    Effect.onInterrupt(() => (failed ? Effect.logWarning(`${what} was not recorded before the stop: the next start places its run again`) : Effect.void))
  )
}
