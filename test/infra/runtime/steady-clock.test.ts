/** The clock svc serve tells time by: the wall clock, never going back (SteadyClock.ts). */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { carriedFrom, carriedNote, MAX_CARRIED_MS, makeSteadyClock, steadyReading, type SteadyState } from "../../../src/infra/runtime/SteadyClock.js"

/** Readings of (wall, monotonic) in turn: the times answered and the steps found. */
const readings = (pairs: ReadonlyArray<readonly [number, number]>) => {
  let s: SteadyState | undefined
  return pairs.map(([wall, mono]) => {
    const r = steadyReading(s, wall, mono)
    s = r.state
    return [r.now, r.stepBack] as const
  })
}

describe("the steady clock", () => {
  it("is the wall clock while it goes forward, a jump forward (a suspended machine) included", () => {
    expect(readings([[1_000_000, 50], [1_001_000, 1_050], [1_005_000, 5_050], [4_605_000, 6_050]])).toEqual([
      [1_000_000, 0],
      [1_001_000, 0],
      [1_005_000, 0],
      [4_605_000, 0]
    ])
  })

  it("goes on from where it was when the wall clock is stepped back, at the monotonic clock's pace, and stays ahead by the step", () => {
    // A step back of 10 minutes between two readings a second apart.
    expect(readings([[1_000_000, 0], [1_001_000, 1_000], [402_000, 2_000], [403_000, 3_000], [1_003_000, 603_000]])).toEqual([
      [1_000_000, 0],
      [1_001_000, 0],
      [1_002_000, 600_000],
      [1_003_000, 0],
      // The wall clock caught up: still the step ahead of it, as the monotonic clock measured.
      [1_603_000, 0]
    ])
    // Two steps back add up.
    const twice = readings([[10_000, 0], [9_000, 1_000], [5_000, 2_000]])
    expect(twice).toEqual([[10_000, 0], [11_000, 2_000], [12_000, 5_000]])
  })

  it("takes a few milliseconds of rounding between the two clocks for no step, and never answers less than before", () => {
    expect(readings([[1_000, 0.2], [1_000, 0.9], [1_001, 4.5], [1_000, 5.5], [1_003, 6]])).toEqual([
      [1_000, 0],
      [1_000, 0],
      [1_001, 0],
      [1_001, 0],
      [1_003, 0]
    ])
  })

  it("takes the tens of milliseconds two clocks read apart disagree by on a busy machine for no step (5 ms logged 'went back 0.0 s' every few minutes), and never answers less than before", () => {
    const jittery = readings([[1_000_000, 0], [999_960, 10], [1_000_020, 30], [999_990, 40], [1_000_100, 100]])
    expect(jittery).toEqual([
      [1_000_000, 0],
      [1_000_000, 0],
      [1_000_020, 0],
      [1_000_020, 0],
      [1_000_100, 0]
    ])
    // A second or more is a step.
    expect(readings([[1_000_000, 0], [999_000, 0]])[1]).toEqual([1_000_000, 1_000])
  })

  it("as Effect's clock: currentTimeMillis steady, each step back told once, nanoseconds Effect's own", async () => {
    let wall = 1_000_000
    let mono = 0
    const steps: Array<number> = []
    const clock = makeSteadyClock({ wall: () => wall, mono: () => mono, stepped: (ms) => steps.push(ms) })
    const now = Effect.runSync(Clock.currentTimeMillis.pipe(Effect.withClock(clock)))
    expect(now).toBe(1_000_000)
    wall -= 3_600_000
    mono += 1_000
    expect(Effect.runSync(Clock.currentTimeMillis.pipe(Effect.withClock(clock)))).toBe(1_001_000)
    mono += 500
    wall += 500
    expect(clock.unsafeCurrentTimeMillis()).toBe(1_001_500)
    expect(steps).toEqual([3_601_000])
    expect(typeof clock.unsafeCurrentTimeNanos()).toBe("bigint")
    await Effect.runPromise(Effect.sleep("1 millis").pipe(Effect.withClock(clock)))
  })

  describe("at a start, behind the journal's last event", () => {
    const at = Date.parse("2026-11-26T12:00:00.000Z")

    it("goes on from it at the monotonic clock's pace, ahead of the wall clock by the gap, with no step back found after (the journal's times went back once at a restart)", () => {
      let wall = at - 600_000
      let mono = 10
      const steps: Array<number> = []
      const clock = makeSteadyClock({ wall: () => wall, mono: () => mono, stepped: (ms) => steps.push(ms) })
      expect(clock.goOnFrom(at)).toEqual({ kind: "carried", behind: 600_000 })
      expect(clock.unsafeCurrentTimeMillis()).toBe(at)
      wall += 2_000
      mono += 2_000
      expect(clock.unsafeCurrentTimeMillis()).toBe(at + 2_000)
      // A step back later still adds up.
      wall -= 60_000
      mono += 1_000
      expect(clock.unsafeCurrentTimeMillis()).toBe(at + 3_000)
      expect(steps).toEqual([61_000])
    })

    it("does nothing when the clock is not behind it; carries a few milliseconds without a word", () => {
      const clock = makeSteadyClock({ wall: () => at, mono: () => 0 })
      expect(clock.goOnFrom(at - 60_000)).toEqual({ kind: "none" })
      expect(clock.unsafeCurrentTimeMillis()).toBe(at)
      expect(clock.goOnFrom(at + 5)).toEqual({ kind: "carried", behind: 5 })
      expect(clock.unsafeCurrentTimeMillis()).toBe(at + 5)
      expect(carriedNote({ kind: "carried", behind: 5 }, at)).toBeUndefined()
      expect(carriedNote({ kind: "carried", behind: 999 }, at)).toBeUndefined()
    })

    it("takes the clock as it is when it is more than a day behind (a clock a year ahead once would keep the runtime a year ahead)", () => {
      const state: SteadyState = { offset: 0, last: at, lastMono: 0 }
      expect(carriedFrom(state, at + MAX_CARRIED_MS)).toEqual({ state: { offset: MAX_CARRIED_MS, last: at + MAX_CARRIED_MS, lastMono: 0 }, carried: { kind: "carried", behind: MAX_CARRIED_MS } })
      expect(carriedFrom(state, at + MAX_CARRIED_MS + 1)).toEqual({ state, carried: { kind: "too-far", behind: MAX_CARRIED_MS + 1 } })
      const clock = makeSteadyClock({ wall: () => at, mono: () => 0 })
      expect(clock.goOnFrom(at + 3 * 86_400_000).kind).toBe("too-far")
      expect(clock.unsafeCurrentTimeMillis()).toBe(at)
    })

    it("is said, with the gap and the journal's time", () => {
      expect(carriedNote({ kind: "none" }, at)).toBeUndefined()
      expect(carriedNote({ kind: "carried", behind: 600_000 }, at)).toBe(
          "this machine's clock is 10 min behind the journal's last event (recorded at 2026-11-26T12:00:00.000Z): svc serve goes on from that time (10 min ahead of the clock until it stops), so that the journal's times do not go back and no time rule lasts longer for it (docs/operations.md, \"The machine's clock\")"
      )
      expect(carriedNote({ kind: "carried", behind: 42_300 }, at)).toContain("clock is 42.3 s behind")
      expect(carriedNote({ kind: "too-far", behind: 3 * 86_400_000 }, at)).toBe(
        "this machine's clock is 3 days behind the journal's last event (recorded at 2026-11-26T12:00:00.000Z), more than a day: svc serve takes the clock as it is, so the journal's times go back here, and time rules measured from a time journaled before (an old credential's 5 minutes after a rotation, an invite's expiry) last that much longer; check this machine's clock (docs/operations.md, \"The machine's clock\")"
      )
    })
  })
})
