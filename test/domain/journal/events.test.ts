/** What an event refuses to be made with: nothing is journaled that the owner could not read and show again. */
import { describe, expect, it } from "vitest"
import * as Schema from "effect/Schema"
import { CURRENT_VERSION, Event, LATEST_MILLIS, WorkerInvited, WorkerRevoked } from "../../../src/domain/journal/Events.js"
import { upcast } from "../../../src/domain/journal/Upcasting.js"
import { hash } from "../../support/events.js"

const invite = (expiresAt: number | null, at = 0) => new WorkerInvited({ inviteId: "i", tokenHash: hash("t"), name: null, scope: [], expiresAt, actor: "op", at })

describe("times in events", () => {
  it("take whole milliseconds from 1970 to the latest instant a date can hold", () => {
    expect(invite(null, 0).at).toBe(0)
    expect(invite(LATEST_MILLIS).expiresAt).toBe(LATEST_MILLIS)
    expect(new Date(LATEST_MILLIS).toISOString()).toBe("+275760-09-13T00:00:00.000Z")
  })

  it("refuse a time no date can hold, a fraction, a negative time or no number at all, naming the field", () => {
    for (const bad of [LATEST_MILLIS + 1, 864_000_000_000_000_000, 1.5, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => invite(bad)).toThrow(/expiresAt[\s\S]*must be a whole number of milliseconds since 1970 that a date can hold/)
    }
    expect(() => new WorkerRevoked({ workerId: "w", actor: "op", at: -5 })).toThrow(/\["at"\][\s\S]*must be a whole number of milliseconds/)
  })
})

describe("RunSubmitted version 2", () => {
  const v1 = {
    runId: "rAAAAAAAAAA",
    job: { address: "demo:echo@1.0.0", bag: "demo", job: "echo", digest: "sha256:d", executor: "node", remoteEligible: true, ownerOnly: [], requiredLabels: [], requiredBins: [], bounds: [], timeoutMs: null },
    input: { text: "hi" },
    preferredLabels: [],
    actor: "operator root",
    at: 1_700_000_000_000
  }
  it("reads a version-1 submission as one without a key, and carries a key when one was given", () => {
    expect(upcast("RunSubmitted", 1, v1)).toEqual(v1)
    expect(CURRENT_VERSION.RunSubmitted).toBe(2)
    const read = Schema.decodeUnknownSync(Event)({ ...upcast("RunSubmitted", 1, v1), _tag: "RunSubmitted" })
    expect(read).not.toHaveProperty("key")
    const keyed = Schema.decodeUnknownSync(Event)({ ...v1, key: "build-1", _tag: "RunSubmitted" })
    expect(keyed).toMatchObject({ key: "build-1" })
    expect(() => upcast("RunSubmitted", 3, v1)).toThrow()
  })
})
