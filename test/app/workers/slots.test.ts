/** The machine's slots (app/workers/Slots.ts): an arbiter that counts who waits for a slot, and lets claims wait for a free one without taking it. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { makeSlots } from "../../../src/app/workers/Slots.js"

describe("slots", () => {
  it.effect("counts the takers waiting for a slot, until they have one or give up", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      yield* slots.take
      expect(slots.waiting()).toBe(0)
      const a = yield* Effect.fork(slots.take)
      const b = yield* Effect.fork(slots.take)
      yield* Effect.yieldNow()
      expect(slots.waiting()).toBe(2)
      yield* Fiber.interrupt(b)
      expect(slots.waiting()).toBe(1)
      yield* slots.release
      yield* Fiber.join(a)
      expect(slots.waiting()).toBe(0)
    })
  )

  it.effect("withSlot gives the slot back however the effect ends, and its wait can be interrupted", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      expect(Exit.isFailure(yield* Effect.exit(slots.withSlot(Effect.fail("boom"))))).toBe(true)
      expect(yield* slots.withSlot(Effect.succeed(1))).toBe(1)
      yield* slots.take
      const waiting = yield* Effect.fork(slots.withSlot(Effect.succeed(2)))
      yield* Effect.yieldNow()
      expect(slots.waiting()).toBe(1)
      yield* Fiber.interrupt(waiting)
      expect(slots.waiting()).toBe(0)
      yield* slots.release
      // The one slot is free again: taken at once.
      expect(yield* slots.take.pipe(Effect.timeout("10 millis"), Effect.option)).toMatchObject({ _tag: "Some" })
    })
  )

  it.effect("a claim waits for a free slot without taking it, and a waiting taker is served first", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      // Free: a claim may be made at once, and nothing is taken by it.
      yield* slots.awaitFree
      expect(slots.taken()).toBe(0)
      yield* slots.take
      const claim = yield* Effect.fork(slots.awaitFree)
      yield* Effect.yieldNow()
      expect(slots.waiting()).toBe(1)
      const taker = yield* Effect.fork(slots.take)
      yield* Effect.yieldNow()
      expect(slots.waiting()).toBe(2)
      // The slot given back goes to the taker; the claim goes on waiting.
      yield* slots.release
      yield* Fiber.join(taker)
      expect(slots.taken()).toBe(1)
      yield* Effect.yieldNow()
      expect(claim.unsafePoll()).toBeNull()
      expect(slots.waiting()).toBe(1)
      yield* slots.release
      yield* Fiber.join(claim)
      expect(slots.waiting()).toBe(0)
      expect(slots.taken()).toBe(0)
    })
  )

  it.effect("tryTake takes only a free slot, never one a waiting taker is owed", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(2)
      expect(yield* slots.tryTake).toBe(true)
      yield* slots.take
      expect(yield* slots.tryTake).toBe(false)
      expect(slots.taken()).toBe(2)
      const taker = yield* Effect.fork(slots.take)
      yield* Effect.yieldNow()
      // The slot given back is the waiting taker's, not a claim's.
      yield* slots.release
      expect(yield* slots.tryTake).toBe(false)
      yield* Fiber.join(taker)
      expect(slots.taken()).toBe(2)
      // A link interrupted (its session ended) while it waited for a free slot is no longer counted.
      const claim = yield* Effect.fork(slots.awaitFree)
      yield* Effect.yieldNow()
      expect(slots.waiting()).toBe(1)
      yield* Fiber.interrupt(claim)
      expect(slots.waiting()).toBe(0)
    })
  )
})
