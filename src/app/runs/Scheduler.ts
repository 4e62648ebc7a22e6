/**
 * When the owner's scheduler runs a round (docs/runs.md, "Placement, recorded"): one fiber, one
 * round at a time, whenever something changed that it must act on (`kick`), and at the next
 * deadline it knows of (an advertisement that lapses, an assignment not claimed in time). What a
 * round does (supersede what lapsed, place what is pending) is the Dispatcher's `tick`; this
 * module only wakes it, so that commands can ask for a round before the round itself is made.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as HashMap from "effect/HashMap"
import * as Queue from "effect/Queue"
import type { OwnerState } from "../../domain/journal/OwnerState.js"

export const makeScheduler = (state: Effect.Effect<OwnerState>) =>
  Effect.gen(function* () {
    /**
     * What the scheduler's fiber is asked to do is kept in `asked` (a round) and `hinted` (a
     * deadline); the bell only wakes the fiber to look at them. Two queues, one per kind, raced
     * against each other, lost one's item whenever both had one (a race interrupts its loser after
     * its take has completed): a round asked for as a deadline was hinted (a run submitted as a
     * worker advertised) was dropped, and waited for the next deadline, up to 15 s.
     */
    let asked = false
    const bell = yield* Queue.sliding<void>(1)
    const ask = Effect.suspend(() => {
      asked = true
      return Effect.asVoid(Queue.offer(bell, undefined))
    })
    /**
     * A deadline learned without a round (an attempt placed in its submission's commit): the
     * scheduler's sleep is shortened to it, no round is run now. Earlier than the true deadline
     * is harmless (that round finds nothing due and computes the next one).
     */
    let hinted: number | null = null
    const hint = (at: number) =>
      Effect.suspend(() => {
        hinted = hinted === null ? at : Math.min(hinted, at)
        return Effect.asVoid(Queue.offer(bell, undefined))
      })
    /**
     * Asks the scheduler for a round. A round only looks at open runs, so with none there is
     * nothing for it to do: a worker coming back from silence (its first refresh after 15 s)
     * then costs no round, which matters when thousands of them come back at once.
     */
    const kick = Effect.flatMap(state, (s) => (HashMap.size(s.runs.open) === 0 ? Effect.void : ask))
    /** A round only when a run waits to be placed. */
    const kickToPlace = Effect.flatMap(state, (s) => (HashMap.size(s.runs.pending) === 0 ? Effect.void : ask))
    /**
     * Completed when the scheduler's next round is done, for a report that claims the next: the
     * run waiting for the slot it freed is placed by that round. Made only when asked for.
     */
    let roundDone: Deferred.Deferred<void> | undefined
    const afterNextRound = Effect.suspend(() => {
      if (roundDone === undefined) roundDone = Deferred.unsafeMake<void>(FiberId.none)
      const d = roundDone
      // A round is asked for: the one the report's commit asked for may have run already.
      return Effect.zipRight(ask, Deferred.await(d))
    })
    /** Those waiting when a round starts are answered when it ends: a round already under way may not see their change. */
    const roundOf = <A, E>(round: Effect.Effect<A, E>) =>
      Effect.suspend(() => {
        const waiting = roundDone
        roundDone = undefined
        return waiting === undefined ? round : Effect.ensuring(round, Deferred.succeed(waiting, undefined))
      })

    /**
     * The scheduler fiber's loop: `tick` (one round, answering when the next deadline falls)
     * after each kick, or when that deadline, or an earlier one hinted, has come.
     */
    const rounds = <E>(tick: Effect.Effect<number | null, E>) =>
      Effect.iterate(null as number | null, {
        while: () => true,
        body: (next) =>
          Effect.gen(function* () {
            let deadline = next
            for (;;) {
              if (hinted !== null) {
                deadline = deadline === null ? hinted : Math.min(deadline, hinted)
                hinted = null
              }
              if (asked) {
                asked = false
                break
              }
              const now = yield* Clock.currentTimeMillis
              if (deadline !== null && now >= deadline) break
              // Woken by the bell or the deadline, it looks again (a bell lost to the timer's
              // win loses nothing: what it rang for is in the flags).
              const timer = deadline === null ? Effect.never : Effect.sleep(Duration.millis(deadline - now))
              yield* Effect.raceFirst(Queue.take(bell), timer)
            }
            return yield* roundOf(
              tick.pipe(Effect.catchAllCause((cause) => Effect.zipRight(Effect.logError("the run scheduler failed a round", cause), Effect.map(Clock.currentTimeMillis, (t) => t + 1000))))
            )
          })
      })

    return { hint, kick, kickToPlace, afterNextRound, rounds }
  })
