/**
 * The owner writes a projection checkpoint periodically (when something was appended since the
 * last one) and once more when it stops cleanly (its scope closes). `svc serve` mounts this.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { reasonText } from "../FailureText.js"
import { Projections } from "./Projections.js"

export const DEFAULT_INTERVAL = Duration.minutes(5)

/**
 * `lastWanted`: asked at the stop; false when the store is no longer the home's (the runtime's
 * home was taken, HomeWatch.ts). `none`: asked at the stop; true when nothing is to be written in
 * the store, and nothing said (a start that refused the journal: the copy it refused is left as it was).
 */
export const run = (interval: Duration.DurationInput = DEFAULT_INTERVAL, lastWanted: () => boolean = () => true, none: () => boolean = () => false) =>
  Effect.gen(function* () {
    const projections = yield* Projections
    const last = yield* Ref.make(-1)
    // Where the next start begins: this process's last checkpoint, else the snapshot it started
    // from (a checkpoint of an earlier run), else the journal's start.
    const foldsFrom = (n: number) => {
      const from = n >= 0 ? n : projections.started.snapshot
      return from === null ? "its start" : `the checkpoint at sequence ${from}`
    }
    /** Writes one when the projections moved since the last; answers why it could not, if it could not. */
    const writeIfMoved = Effect.gen(function* () {
      const { sequence } = yield* projections.state
      // An empty journal (a machine that is only a worker) has nothing a checkpoint would save:
      // none is written, and a stop says nothing of one (the runs audit read "checkpoint at
      // sequence 0 written" as noise).
      if (sequence === 0 || sequence === (yield* Ref.get(last))) return undefined
      const written = yield* projections.checkpoint
      yield* Ref.set(last, written.sequence)
      return undefined
    }).pipe(
      // A failure of any kind (a full disk fails SQLite's rollback too, which surfaced as a
      // defect and ended the stop as an internal error) is said, and the runtime goes on or stops.
      Effect.catchAllCause((cause) => Effect.succeed(reasonText(Cause.squash(cause))))
    )
    yield* Effect.repeat(
      Effect.flatMap(writeIfMoved, (why) => (why === undefined ? Effect.void : Effect.logWarning(`could not write a projection checkpoint: ${why}`))),
      Schedule.spaced(interval)
    ).pipe(Effect.delay(interval), Effect.forkScoped)
    // The last word of a clean stop: where the next start takes over from.
    yield* Effect.addFinalizer(() =>
      none()
        ? Effect.void
        : !lastWanted()
        ? Effect.logInfo("no last checkpoint: the journal open is no longer the one in its home (it was removed or replaced)")
        : Effect.flatMap(writeIfMoved, (why) =>
        Effect.flatMap(Ref.get(last), (n) =>
          why !== undefined
            ? Effect.logError(`the last checkpoint could not be written: ${why}; the journal is whole, and the next start folds it from ${foldsFrom(n)}`)
            : n < 0
              ? Effect.void
              : Effect.logInfo(`checkpoint at sequence ${n} written: the next start folds only what comes after it`)
        )
      )
    )
  })

export const layer = (interval: Duration.DurationInput = DEFAULT_INTERVAL, lastWanted?: () => boolean, none?: () => boolean) => Layer.scopedDiscard(run(interval, lastWanted, none))
