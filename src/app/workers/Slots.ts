/**
 * The machine's slots (docs/runs.md, "On a worker"): one arbiter for its own runs and the work it
 * does for every owner it is linked to, so the total running never exceeds its capacity. It
 * also counts who waits for a slot: a worker that reports an attempt keeps the slot for the next
 * one of the same owner only when nobody else waits for it (Work.ts, `claimNext`).
 */
import * as Effect from "effect/Effect"

export interface Slots {
  /** Waits for a slot and takes it. */
  readonly take: Effect.Effect<void>
  readonly release: Effect.Effect<void>
  /** Runs the effect in a slot (taken first, given back after). */
  readonly withSlot: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** How many takers wait for a slot now. */
  readonly waiting: () => number
}

export const makeSlots = (capacity: number): Effect.Effect<Slots> =>
  Effect.map(Effect.makeSemaphore(capacity), (semaphore) => {
    let waiting = 0
    const take = Effect.suspend(() => {
      waiting++
      return Effect.ensuring(
        semaphore.take(1),
        Effect.sync(() => {
          waiting--
        })
      )
    }).pipe(Effect.asVoid)
    const release = Effect.asVoid(semaphore.release(1))
    return {
      take,
      release,
      // As Semaphore.withPermits: only the wait for the slot can be interrupted before it is taken.
      withSlot: (self) => Effect.uninterruptibleMask((restore) => Effect.zipRight(restore(take), Effect.ensuring(restore(self), release))),
      waiting: () => waiting
    }
  })
