/**
 * How `svc serve` is asked to stop: SIGINT (Ctrl-C) or SIGTERM (a process manager), heard from
 * the moment the command begins (Node has loaded the program: a signal in the few hundred
 * milliseconds before ends it by the default action, before anything of the home is touched),
 * not only once it is running. A start takes seconds (stopping a job a killed runtime left gives
 * it 5 s; folding a long journal), and a signal then used to end the process by the default
 * action without a word. Now the first signal is recorded (the start stops where it is, closing
 * what it opened) and a second one ends the process at once, saying so, exit 130; the same
 * signal again within 250 ms is taken as the first delivered twice. Ending at once kills the
 * jobs still running first (each runs in a process group of its own, so nothing else would): a
 * worker's job left running would run on beside the attempt its owner places again elsewhere.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"

const SIGNALS = ["SIGINT", "SIGTERM"] as const
export type StopSignal = (typeof SIGNALS)[number]

/** A second signal sooner than this after the first, and the same one, is that one delivered twice. */
export const SAME_REQUEST_MS = 250

/** What a second signal says before the process ends (exit 130), once `killed` jobs still running were killed. */
export const againText = (signal: StopSignal, killed: number) =>
  `svc serve: ${signal} again: stopping at once; no last checkpoint${killed === 0 ? "" : `; ${killed === 1 ? "1 job" : `${killed} jobs`} still running killed (SIGKILL)`}\n`

/**
 * Listens for the stop signals for as long as the scope is open: its release, the scope's last
 * when acquired first, removes the handlers once all else has closed, so that a second signal is
 * heard through the whole stop. Answers a deferred that completes with the first signal. A second
 * signal does `atOnce` (synchronous: it kills what must not outlive the process, and answers how
 * many jobs) before the process ends.
 */
export const listen = (atOnce: () => number) => Effect.acquireRelease(
  Effect.sync(() => {
    const stop = Deferred.unsafeMake<StopSignal>(FiberId.none)
    const handlers: Array<readonly [StopSignal, () => void]> = []
    const set = (make: (signal: StopSignal) => () => void) => {
      for (const [signal, handler] of handlers) process.off(signal, handler)
      handlers.length = 0
      for (const signal of SIGNALS) {
        const handler = make(signal)
        process.on(signal, handler)
        handlers.push([signal, handler])
      }
    }
    let first: { readonly signal: StopSignal; readonly at: number } | undefined
    const again = (signal: StopSignal) => () => {
      // The same signal within a moment is the same request delivered twice (`timeout` and some
      // supervisors send it to the process and to its group), not an operator asking again. By the
      // monotonic clock: a wall clock stepped back meanwhile would make a second Ctrl-C the first's echo.
      if (first !== undefined && first.signal === signal && performance.now() - first.at < SAME_REQUEST_MS) return
      process.stderr.write(againText(signal, atOnce()))
      process.exit(130)
    }
    set((signal) => () => {
      first = { signal, at: performance.now() }
      set(again)
      Deferred.unsafeDone(stop, Exit.succeed(signal))
    })
    return { stop, handlers }
  }),
  ({ handlers }) => Effect.sync(() => handlers.forEach(([signal, handler]) => process.off(signal, handler)))
).pipe(Effect.map(({ stop }) => stop))
