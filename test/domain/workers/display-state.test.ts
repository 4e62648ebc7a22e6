/** Worker display states as the owner computes them at query time (docs/protocol.md, "Display states"). */
import { describe, expect, it } from "vitest"
import { advertisementAlive, displayState, offerCurrent, silenceOf, waitingThere, type Freshness } from "../../../src/domain/workers/DisplayState.js"
import type { WorkerRecord } from "../../../src/domain/workers/Registry.js"

const worker: WorkerRecord = {
  id: "w1",
  name: "lab-1",
  inviteId: "i1",
  scope: [],
  joinedAt: 0,
  replaces: null,
  credentials: [],
  rotationPending: false,
  revokedAt: null,
  fence: 1,
  sessionStartedAt: 0,
  advertisement: { capacity: 2, labels: [], capabilities: ["node"], artifacts: [{ address: "hasher:checksum@1.0.0", digest: "sha256:aa" }], at: 0 },
  streamVersion: 1
}
const fresh = (busy: number): Freshness => ({ lastAdvertisedAt: 1_000, lastSeenAt: 1_000, busy })

describe("a shared worker's slots, as this owner sees them", () => {
  it("counts this owner's attempts and other work's slots together up to its capacity", () => {
    expect(displayState(worker, fresh(0), 1, 2_000)).toEqual({ state: "Ready", reason: "1 of 2 slots free" })
    expect(displayState(worker, fresh(1), 1, 2_000)).toEqual({ state: "Ready", reason: "1 of 2 slots free; 1 in use by other work" })
    expect(displayState(worker, fresh(1), 2, 2_000)).toEqual({ state: "Busy", reason: "2 of 2 slots in use, 1 of them by other work" })
  })

  it("says this owner's attempts wait there when other work took the slots after they were placed (never '4 of 2 slots in use')", () => {
    // Two attempts of this owner placed there, then other work took both slots.
    expect(displayState(worker, fresh(2), 4, 2_000)).toEqual({
      state: "Busy",
      reason: "all 2 slots in use, 2 of them by other work; 2 attempts of this owner placed there wait for a slot"
    })
    expect(displayState(worker, fresh(2), 3, 2_000).reason).toBe("all 2 slots in use, 2 of them by other work; 1 attempt of this owner placed there waits for a slot")
  })

  it("finds how many of this owner's attempts wait: never more than it has there, none while they fit", () => {
    expect(waitingThere(2, 2, 2)).toBe(2)
    expect(waitingThere(1, 1, 2)).toBe(0)
    expect(waitingThere(3, 1, 2)).toBe(2)
    // Other work said to hold more than the capacity (it advertised a smaller one since): at most this owner's attempts.
    expect(waitingThere(1, 5, 2)).toBe(1)
    expect(waitingThere(0, 3, 2)).toBe(0)
  })
})

describe("a silent worker, told the same way by workers status and by a placement's exclusion", () => {
  const said = (f: Freshness | undefined, w: WorkerRecord = worker) => ({ silence: silenceOf(w, f), shown: displayState(w, f, 0, 20_000) })

  it("a worker that said hello, then bye before it advertised in this owner's lifetime, stopped cleanly (not 'unheard')", () => {
    const { silence, shown } = said({ lastAdvertisedAt: null, lastSeenAt: 18_000, busy: 0, sessionEnded: true })
    expect(silence).toBe("ended")
    expect(shown.state).toBe("Offline")
    expect(shown.reason).toBe("its svc serve stopped cleanly 2 s ago (it said so): back when it says hello again")
  })

  it("a worker whose goodbye said it leaves (its leave call never arrived) is not said to come back: revoke it", () => {
    const { silence, shown } = said({ lastAdvertisedAt: null, lastSeenAt: 18_000, busy: 0, sessionEnded: true, leaving: true })
    expect(silence).toBe("ended")
    expect(shown).toEqual({
      state: "Offline",
      reason: `its installation left this owner 2 s ago (svc workers leave on its machine; its goodbye arrived, not its leave): it will not call again; revoke it (svc workers revoke ${worker.id})`
    })
  })

  it("nothing heard since the owner started; never advertised; or simply lapsed", () => {
    expect(said(undefined)).toEqual({ silence: "unheard", shown: { state: "Offline", reason: "no advertisement since the owner started" } })
    expect(said({ lastAdvertisedAt: null, lastSeenAt: 19_000, busy: 0 }).silence).toBe("unheard")
    const never = said(fresh(0), { ...worker, advertisement: null })
    expect(never.silence).toBe("never")
    expect(never.shown.state).toBe("Needs setup")
    expect(said(fresh(0))).toEqual({ silence: undefined, shown: { state: "Offline", reason: "last advertisement 19 s ago (expires after 15 s)" } })
  })

  it("said hello and has not advertised since: placement waits for it (its last advertisement was its previous process's); past its lapse, shown so", () => {
    const hello: Freshness = { lastAdvertisedAt: 14_000, lastSeenAt: 19_000, busy: 0, awaitingOffer: true, helloAt: 17_000 }
    expect(silenceOf(worker, hello)).toBe("hello")
    expect(advertisementAlive(hello, 20_000)).toBe(true)
    expect(offerCurrent(hello, 20_000)).toBe(false)
    expect(offerCurrent({ ...hello, awaitingOffer: false }, 20_000)).toBe(true)
    expect(offerCurrent(undefined, 20_000)).toBe(false)
    // Shown as placement sees it: not by its previous process's offer, counted from its hello (not its latest call).
    const said = { state: "Offline", reason: "it said hello 3 s ago (a new session) and has not advertised in it yet: what it offers is not known until it does" }
    expect(displayState(worker, hello, 0, 20_000)).toEqual(said)
    // Its previous advertisement lapsed too: the same.
    expect(displayState(worker, { ...hello, lastAdvertisedAt: 1_000 }, 0, 20_000)).toEqual(said)
    expect(displayState(worker, { ...hello, awaitingOffer: false }, 0, 20_000).state).toBe("Ready")
  })

  it("says how long ago it was heard, not the time moved on past the owner's own pause (by which it is judged)", () => {
    // Heard at 0 and 2 s; the owner then did not run for 3 s: judged as if heard at 3 and 5 s.
    const excused: Freshness = { lastAdvertisedAt: 3_000, lastSeenAt: 5_000, busy: 0, advertisementHeardAt: 0, heardAt: 2_000 }
    expect(said(excused).shown.reason).toBe("last advertisement 20 s ago (expires after 15 s)")
    expect(said({ ...excused, sessionEnded: true }).shown.reason).toBe("its svc serve stopped cleanly 18 s ago (it said so): back when it says hello again")
  })
})
