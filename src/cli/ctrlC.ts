/** Ctrl-C heard by a command that has something to say when it comes, instead of the process ending at once. */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/**
 * From now until the command's scope closes, SIGINT (Ctrl-C) is handled instead of ending the
 * process: answers an effect that completes once it has come (at once if it came already).
 */
export const ctrlCLatch = Effect.gen(function* () {
  const pressed = yield* Deferred.make<void>()
  const on = () => Deferred.unsafeDone(pressed, Exit.void)
  yield* Effect.acquireRelease(
    Effect.sync(() => void process.on("SIGINT", on)),
    () => Effect.sync(() => void process.off("SIGINT", on))
  )
  return Deferred.await(pressed)
})
