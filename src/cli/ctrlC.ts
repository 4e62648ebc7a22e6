/** Ctrl-C (and the other ways a command is told to stop) heard by a command that has something to say when it comes, instead of the process ending at once. */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** The signals that ask a waiting command to stop: Ctrl-C, `timeout`'s and a CI runner's SIGTERM, a closed terminal's SIGHUP. */
const STOPS = ["SIGINT", "SIGTERM", "SIGHUP"] as const
export type StopSignal = (typeof STOPS)[number]

/** How a shell reports a command a signal ended: 128 + its number. */
export const exitCodeOf = (signal: StopSignal): 129 | 130 | 143 => (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 129)

/**
 * From now until the command's scope closes, SIGINT, SIGTERM and SIGHUP are handled instead of
 * ending the process: answers an effect that completes with the first of them once it has come
 * (at once if it came already).
 */
export const stopLatch = Effect.gen(function* () {
  const stopped = yield* Deferred.make<StopSignal>()
  const handlers = STOPS.map((signal) => [signal, () => Deferred.unsafeDone(stopped, Exit.succeed(signal))] as const)
  yield* Effect.acquireRelease(
    Effect.sync(() => handlers.forEach(([signal, on]) => process.on(signal, on))),
    () => Effect.sync(() => handlers.forEach(([signal, on]) => process.off(signal, on)))
  )
  return Deferred.await(stopped)
})

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
