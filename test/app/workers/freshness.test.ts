/**
 * The owner's own pause is no worker's silence (Freshness.awake): a gap in the owner's beat moves
 * every recorded time on by it, so a worker that was calling when the owner stopped (SIGSTOP, a
 * suspended machine) is not lapsed, and its attempts not placed again, the moment the owner resumes.
 */
import { describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import { make, noteAwake, OWNER_BEAT_MS, OWNER_PAUSE_MS } from "../../../src/app/workers/Freshness.js"
import { capturingLogs } from "../../support/logs.js"
import { ADVERTISEMENT_LIFETIME_MS, advertisementAlive, heardAt, offerCurrent } from "../../../src/domain/workers/DisplayState.js"

/** A beat every second from `from` to `to`, as the owner's runs while it is not paused. */
const beatThrough = (f: ReturnType<typeof make>, from: number, to: number) => {
  let excused = 0
  for (let t = from; t <= to; t += OWNER_BEAT_MS) excused += f.awake(t, true)
  return excused
}

describe("the owner's pause", () => {
  it("is kept, for deadlines counted from a time the journal holds: deafSince sums the pauses after it", () => {
    const f = make()
    beatThrough(f, 0, 10_000)
    expect(f.awake(32_000, true)).toBe(21_000)
    beatThrough(f, 33_000, 40_000)
    expect(f.awake(50_000, true)).toBe(9_000)
    // By the middle of each gap (21 s, 45 s): a time before both, between them, after both.
    expect([f.deafSince(5_000), f.deafSince(30_000), f.deafSince(46_000)]).toEqual([30_000, 9_000, 0])
  })

  it("is not held against a worker: its silence is counted in the time the owner was there to hear it", () => {
    const f = make()
    beatThrough(f, 0, 10_000)
    f.touch("w1", 9_000, true)
    // Stopped at 10 s, resumed at 32 s: a 22 s pause; the beat finds it at its first tick.
    expect(f.awake(32_000)).toBe(22_000 - OWNER_BEAT_MS)
    expect(f.get("w1")).toMatchObject({ lastAdvertisedAt: 9_000 + 21_000, lastSeenAt: 9_000 + 21_000 })
    expect(advertisementAlive(f.get("w1"), 32_000)).toBe(true)
    // What is shown is when it was heard: 9 s, not a time the owner was not running (multi-owner
    // audit: a revoked worker was shown seen after its revocation, and "last advertisement 22 s
    // ago" of one unheard for 42 s).
    expect(f.get("w1")).toMatchObject({ heardAt: 9_000, advertisementHeardAt: 9_000 })
    expect(heardAt(f.get("w1"))).toBe(9_000)
    // Still silent after the pause: it lapses once the owner itself has listened for the rest of the 15 s.
    expect(beatThrough(f, 33_000, 60_000)).toBe(0)
    const lapses = 9_000 + 21_000 + ADVERTISEMENT_LIFETIME_MS
    expect(advertisementAlive(f.get("w1"), lapses - 1)).toBe(true)
    expect(advertisementAlive(f.get("w1"), lapses)).toBe(false)
  })

  it("counts a call between the last beat and the pause as before the pause", () => {
    const f = make()
    beatThrough(f, 0, 10_000)
    // Advertised 0.6 s after the last beat, then the owner stopped.
    f.touch("w1", 10_600, true)
    f.awake(32_000)
    expect(f.get("w1")?.lastAdvertisedAt).toBe(10_600 + 21_000)
    expect(advertisementAlive(f.get("w1"), 32_000)).toBe(true)
  })

  it("moves no time past now: a worker that called right after the resume keeps its own time", () => {
    const f = make()
    beatThrough(f, 0, 10_000)
    f.touch("w1", 5_000, true)
    // The worker's call is answered before the beat's first tick after the pause.
    f.touch("w2", 31_500, true)
    f.awake(32_000)
    expect(f.get("w2")?.lastAdvertisedAt).toBe(31_500)
    expect(f.get("w1")?.lastAdvertisedAt).toBe(5_000 + 21_000)
  })

  it("is not found in a beat that runs late under load, nor when none has run before", () => {
    const f = make()
    f.touch("w1", 100_000, true)
    // No beat yet: a gap says nothing (the owner's rounds alone may be far apart).
    expect(f.awake(200_000)).toBe(0)
    expect(f.awake(100_000, true)).toBe(0)
    expect(f.awake(100_000 + OWNER_PAUSE_MS)).toBe(0)
    expect(f.get("w1")?.lastAdvertisedAt).toBe(100_000)
    // A time from before the last beat (two callers' clocks read a moment apart) excuses nothing either.
    expect(f.awake(100_000 + OWNER_PAUSE_MS - 500)).toBe(0)
  })
})

describe("the owner's pause, in its log", () => {
  const logged = (f: ReturnType<typeof make>, now: number) => {
    const logs: Array<string> = []
    Effect.runSync(noteAwake(f, now, true).pipe(Effect.provide(capturingLogs(logs))))
    return logs
  }

  it("excuses its workers' silence when it has heard from any; on a machine no worker calls (only a worker itself) it says only that it did not run", () => {
    const alone = make()
    beatThrough(alone, 0, 10_000)
    expect(logged(alone, 32_000)).toEqual(["WARN this machine did not run for 21 s (its process was stopped, the machine suspended or overloaded, or its clock stepped forward)"])
    const owner = make()
    beatThrough(owner, 0, 10_000)
    owner.touch("w1", 9_000, true)
    expect(logged(owner, 32_000)).toEqual([
      "WARN this owner did not run for 21 s (its process was stopped, the machine suspended or overloaded, or its clock stepped forward): its workers' silence in that time is not held against them"
    ])
  })
})

describe("a new session", () => {
  it("awaits its first advertisement: alive from its hello, judged by what it offers only once it has advertised (its last advertisement was its previous process's)", () => {
    const f = make()
    f.touch("w1", 1_000, true)
    expect(offerCurrent(f.get("w1"), 2_000)).toBe(true)
    f.begin("w1", 3_000)
    expect(advertisementAlive(f.get("w1"), 3_500)).toBe(true)
    expect(offerCurrent(f.get("w1"), 3_500)).toBe(false)
    // A call that does not advertise does not end the wait.
    f.touch("w1", 3_600, false)
    expect(offerCurrent(f.get("w1"), 3_700)).toBe(false)
    f.touch("w1", 3_800, true)
    expect(offerCurrent(f.get("w1"), 3_900)).toBe(true)
  })
})
