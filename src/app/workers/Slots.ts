/**
 * The machine's slots (docs/runs.md, "On a worker"): one arbiter for its own runs and the work it
 * does for every owner it is linked to, so the total running never exceeds its capacity.
 *
 * A slot is taken by what runs: an attempt of this machine's own (`withSlot`), or an attempt a
 * claim brought (`tryTake`, else `take`: it waits for one). A claim waiting at its owner holds
 * none: a link waits until a slot is free (`awaitFree`), then claims. So an idle claim never
 * keeps this machine's own runs, or another owner's work, waiting for the slot it would
 * otherwise sit on.
 *
 * It also counts who waits for a slot: a worker that reports an attempt keeps the slot for the
 * next one of the same owner only when nobody else waits for it (WorkReports.ts, `claimNext`).
 */
import * as Effect from "effect/Effect"

export interface Slots {
  /** Waits for a slot and takes it (first come, first served among those waiting). */
  readonly take: Effect.Effect<void>
  /** Takes a slot if one is free now; answers whether it did. */
  readonly tryTake: Effect.Effect<boolean>
  readonly release: Effect.Effect<void>
  /** Runs the effect in a slot (taken first, given back after). */
  readonly withSlot: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Waits, without taking one, until a slot is free and no taker waits for it: when a claim may be made. */
  readonly awaitFree: Effect.Effect<void>
  /** How many wait for a slot now: takers, and claims waiting for one to be free. */
  readonly waiting: () => number
  /** How many slots are taken now. */
  readonly taken: () => number
}

interface Taker {
  /** Set when a released slot was handed to it (counted in `taken` from then on). */
  granted: boolean
  resume?: () => void
}

export const makeSlots = (capacity: number): Effect.Effect<Slots> =>
  Effect.sync(() => {
    let taken = 0
    const takers: Array<Taker> = []
    let awaitingFree = 0
    /** Those waiting for a condition on the slots; each looks again at every change. */
    const watchers = new Set<() => void>()
    const changed = () => {
      for (const watcher of [...watchers]) watcher()
    }
    /** Free slots go to waiting takers first, in order, before any claim is made for them. */
    const grant = () => {
      while (taken < capacity && takers.length > 0) {
        const taker = takers.shift()!
        taker.granted = true
        taken++
        taker.resume!()
      }
    }
    const freeForClaim = () => taken < capacity && takers.length === 0

    const take: Effect.Effect<void> = Effect.suspend(() => {
      if (freeForClaim()) {
        taken++
        changed()
        return Effect.void
      }
      const taker: Taker = { granted: false }
      return Effect.async<void>((resume) => {
        taker.resume = () => resume(Effect.void)
        takers.push(taker)
        changed()
      }).pipe(
        // Interrupted while waiting: it leaves the queue. Interrupted after a slot was handed to
        // it but before it went on: the slot goes back (to the next taker, or free again).
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (taker.granted) taken--
            else {
              const at = takers.indexOf(taker)
              if (at >= 0) takers.splice(at, 1)
            }
            grant()
            changed()
          })
        )
      )
    })

    const tryTake = Effect.sync(() => {
      if (!freeForClaim()) return false
      taken++
      changed()
      return true
    })

    const release = Effect.sync(() => {
      taken--
      grant()
      changed()
    })

    /** Waits until `holds`, counted among those `waiting` meanwhile. */
    const until = (holds: () => boolean): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (holds()) return Effect.void
        return Effect.async<void>((resume) => {
          awaitingFree++
          const watcher = () => {
            if (!holds()) return
            watchers.delete(watcher)
            awaitingFree--
            resume(Effect.void)
          }
          watchers.add(watcher)
          return Effect.sync(() => {
            if (watchers.delete(watcher)) awaitingFree--
          })
        })
      })

    return {
      take,
      tryTake,
      release,
      // As Semaphore.withPermits: only the wait for the slot can be interrupted before it is taken.
      withSlot: (self) => Effect.uninterruptibleMask((restore) => Effect.zipRight(restore(take), Effect.ensuring(restore(self), release))),
      awaitFree: until(freeForClaim),
      waiting: () => takers.length + awaitingFree,
      taken: () => taken
    }
  })
