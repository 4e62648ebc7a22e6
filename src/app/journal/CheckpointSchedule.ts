/**
 * The owner writes a projection checkpoint periodically (when something was appended since the
 * last one) and once more when it stops cleanly (its scope closes). `svc serve` mounts this.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { Projections } from "./Projections.js"

export const DEFAULT_INTERVAL = Duration.minutes(5)

export const run = (interval: Duration.DurationInput = DEFAULT_INTERVAL) =>
  Effect.gen(function* () {
    const projections = yield* Projections
    const last = yield* Ref.make(-1)
    const writeIfMoved = Effect.gen(function* () {
      const { sequence } = yield* projections.state
      if (sequence === (yield* Ref.get(last))) return
      const written = yield* projections.checkpoint
      yield* Ref.set(last, written.sequence)
    }).pipe(Effect.catchAll((e) => Effect.logWarning(`could not write a projection checkpoint: ${e.message}`)))
    yield* Effect.repeat(writeIfMoved, Schedule.spaced(interval)).pipe(Effect.delay(interval), Effect.forkScoped)
    // The last word of a clean stop: where the next start takes over from.
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        writeIfMoved,
        Effect.flatMap(Ref.get(last), (n) => (n < 0 ? Effect.void : Effect.logInfo(`checkpoint at sequence ${n} written: the next start folds only what comes after it`)))
      )
    )
  })

export const layer = (interval: Duration.DurationInput = DEFAULT_INTERVAL) => Layer.scopedDiscard(run(interval))
