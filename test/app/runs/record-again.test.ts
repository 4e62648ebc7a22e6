/** Recording what already happened, again until the journal takes it (RecordAgain.ts), on the TestClock. */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { JournalError } from "../../../src/app/journal/Journal.js"
import { recordAgain } from "../../../src/app/runs/RecordAgain.js"
import { capturingLogs } from "../../support/logs.js"

const full = new JournalError({ reason: "Io", message: "appending to the journal: database or disk is full" })

describe("recording again", () => {
  it.effect("tries every 5 s until the journal takes it, saying so once, and once when it is recorded", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      let tries = 0
      const record = Effect.suspend(() => (++tries < 3 ? Effect.fail(full) : Effect.succeed("recorded")))
      const fiber = yield* Effect.fork(recordAgain("the outcome of attempt r1.1", record).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("4 seconds")
      expect(tries).toBe(1)
      yield* TestClock.adjust("6 seconds")
      expect(yield* Fiber.join(fiber)).toBe("recorded")
      expect(logs).toEqual([
        "ERROR the outcome of attempt r1.1 could not be recorded: appending to the journal: database or disk is full; svc tries again every 5 s",
        "INFO the outcome of attempt r1.1 is recorded (after 3 tries)"
      ])
    })
  )

  it.effect("stopped while it still tries (the runtime stops), says the run is placed again at the next start", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const fiber = yield* Effect.fork(recordAgain("the outcome of attempt r2.1", Effect.fail(full)).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("12 seconds")
      yield* Fiber.interrupt(fiber)
      expect(logs.at(-1)).toBe("WARN the outcome of attempt r2.1 was not recorded before the stop: the next start places its run again")
    })
  )
})
