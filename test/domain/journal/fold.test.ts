/** `fold` (maps mutated in place within one fold) is `evolve` event by event, and pure. */
import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { CURRENT_VERSION, type Envelope, type Event } from "../../../src/domain/journal/Events.js"
import { canonicalState, evolve, fold, initialState } from "../../../src/domain/journal/OwnerState.js"
import { stateFromCanonical, type CanonicalState } from "../../../src/domain/journal/Snapshot.js"
import { advertised, invited, joined, revoked, rotated, rotationRequested, session } from "../../support/events.js"

const event: fc.Arbitrary<Event> = fc.oneof(
  fc.nat(5).map((i) => invited(`i${i}`)),
  fc.tuple(fc.nat(5), fc.nat(5)).map(([w, i]) => joined(`w${w}`, `i${i}`)),
  fc.nat(5).map((w) => rotationRequested(`w${w}`)),
  fc.tuple(fc.nat(5), fc.integer({ min: 1, max: 9 })).map(([w, n]) => rotated(`w${w}`, n)),
  fc.nat(5).map((w) => revoked(`w${w}`)),
  fc.tuple(fc.nat(5), fc.integer({ min: 1, max: 50 }), fc.boolean()).map(([w, f, t]) => session(`w${w}`, f, t)),
  fc.tuple(fc.nat(5), fc.integer({ min: 1, max: 100 }), fc.boolean()).map(([w, c, gpu]) => advertised(`w${w}`, c, gpu ? ["gpu=true", "os=linux"] : ["os=linux"]))
)

const envelopes = (events: ReadonlyArray<Event>): Array<Envelope> =>
  events.map((e, i) => ({ sequence: i + 1, stream: "s", streamVersion: i + 1, type: e._tag, schemaVersion: CURRENT_VERSION[e._tag], recordedAt: 0, event: e }))

const text = (s: Parameters<typeof canonicalState>[0]) => JSON.stringify(canonicalState(s))

describe("fold", () => {
  it("equals evolve applied event by event, in any split, and leaves its input unchanged", () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 80 }), fc.nat(80), (events, cut) => {
        const es = envelopes(events)
        const stepwise = es.reduce(evolve, initialState)
        expect(text(fold(initialState, es))).toBe(text(stepwise))
        const first = fold(initialState, es.slice(0, cut))
        const before = text(first)
        const whole = fold(first, es.slice(cut))
        expect(text(whole)).toBe(text(stepwise))
        expect(text(first)).toBe(before)
        // From the snapshot of the state at the cut (its canonical JSON, as text), the same.
        const restored = stateFromCanonical(JSON.parse(before) as CanonicalState)
        expect(text(restored)).toBe(before)
        expect(text(fold(restored, es.slice(cut)))).toBe(text(stepwise))
      }),
      { numRuns: 300 }
    )
  })
})
