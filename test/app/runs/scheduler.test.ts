/** When the owner's scheduler runs a round (Scheduler.ts): at once when asked, at a deadline when hinted. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as TestClock from "effect/TestClock"
import type { OwnerState } from "../../../src/domain/journal/OwnerState.js"
import { makeScheduler } from "../../../src/app/runs/Scheduler.js"

/** A state with one run open and pending: what `kick` and `kickToPlace` look at. */
const onePending = Effect.succeed({ runs: { open: HashMap.make(["r1", 1]), pending: HashMap.make(["r1", 1]) } } as unknown as OwnerState)

/** Lets the scheduler's fiber run up to its next wait. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

const counting = Effect.gen(function* () {
  const scheduler = yield* makeScheduler(onePending)
  let rounds = 0
  const fiber = yield* Effect.fork(scheduler.rounds(Effect.sync(() => (rounds++, null))))
  yield* settle
  return { ...scheduler, rounds: () => rounds, fiber }
})

describe("the run scheduler", () => {
  it.effect("runs a round asked for while a deadline is hinted at the same moment, at once (the round was lost, and waited for the deadline)", () =>
    Effect.gen(function* () {
      const s = yield* counting
      // A run submitted (its restart-grace deadline hinted) as a worker advertised (a round asked
      // for), with the scheduler's fiber anywhere between them.
      for (const between of [0, 1, 2, 3, 5, 8]) {
        const before = s.rounds()
        yield* s.hint(15_000)
        yield* Effect.repeatN(Effect.yieldNow(), between)
        yield* s.kick
        yield* settle
        expect([between, s.rounds() - before]).toEqual([between, 1])
      }
      yield* Fiber.interrupt(s.fiber)
    })
  )

  it.effect("runs a hinted deadline's round at the deadline, not before; two rounds asked for before it looks are one", () =>
    Effect.gen(function* () {
      const s = yield* counting
      yield* s.hint(10_000)
      yield* settle
      yield* TestClock.adjust("9999 millis")
      yield* settle
      expect(s.rounds()).toBe(0)
      yield* TestClock.adjust("1 millis")
      yield* settle
      expect(s.rounds()).toBe(1)
      yield* s.kickToPlace
      yield* s.kickToPlace
      yield* settle
      expect(s.rounds()).toBe(2)
      yield* Fiber.interrupt(s.fiber)
    })
  )
})
