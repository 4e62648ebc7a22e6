/** The machine's slots (app/workers/Slots.ts): a semaphore that counts who waits for a slot. */
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
})
