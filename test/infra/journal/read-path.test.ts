/**
 * The journal's fast read path must agree with the schema exactly: the compiled guard accepts
 * what `Schema.is` accepts and nothing else, and an event read back is the event written.
 */
import * as Equal from "effect/Equal"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CURRENT_VERSION, Event, type Event as EventType } from "../../../src/domain/journal/Events.js"
import { fastGuard } from "../../../src/infra/schema/Guard.js"
import { envelopeOfRow } from "../../../src/infra/journal/EventRows.js"
import { payloadOf } from "../../../src/infra/journal/SqliteJournal.js"
import { advertised, hash, invited, joined, revoked, rotated, rotationRequested, session } from "../../support/events.js"

const samples: ReadonlyArray<EventType> = [
  invited("i1", 5, ["hasher:checksum@1.0.0"]),
  invited("i2", 6),
  joined("w1", "i1"),
  rotationRequested("w1"),
  rotated("w1", 2),
  revoked("w1"),
  session("w1", 3, true),
  advertised("w1", 100, ["gpu=true", "os=linux"])
]

const row = (e: EventType, i: number) => ({
  sequence: i + 1,
  stream: "s",
  stream_version: i + 1,
  type: e._tag,
  schema_version: CURRENT_VERSION[e._tag],
  payload: payloadOf(e),
  recorded_at: 0
})

describe("the journal's read path", () => {
  it("reads back every kind of event as the very event written (same class, equal)", () => {
    samples.forEach((e, i) => {
      const read = envelopeOfRow(row(e, i)).event
      expect(read).toBeInstanceOf(e.constructor)
      expect(read).toStrictEqual(e)
      if (e._tag === "WorkerRevoked" || e._tag === "SessionStarted" || e._tag === "CredentialRotationRequested") expect(Equal.equals(read, e)).toBe(true)
      expect(Schema.encodeSync(Event)(read)).toEqual(Schema.encodeSync(Event)(e))
    })
  })

  it("drops a stray stored field and refuses a wrong one, as the decoder does", () => {
    const r = row(revoked("w1"), 0)
    expect(envelopeOfRow({ ...r, payload: JSON.stringify({ ...JSON.parse(r.payload), extra: 1 }) }).event).toEqual(revoked("w1"))
    expect(() => envelopeOfRow({ ...r, payload: JSON.stringify({ ...JSON.parse(r.payload), workerId: 5 }) })).toThrow()
    const s = row(session("w1", 1), 0)
    expect(() => envelopeOfRow({ ...s, payload: JSON.stringify({ ...JSON.parse(s.payload), fence: 0 }) })).toThrow()
  })

  it("compiles guards that accept exactly what Schema.is accepts", () => {
    for (const member of Event.members) {
      const schema = Schema.Struct(member.fields)
      const fast = fastGuard(schema)
      const slow = Schema.is(schema)
      const valid = samples.filter((e) => e._tag === member.identifier).map((e) => JSON.parse(JSON.stringify(e)) as unknown)
      fc.assert(
        fc.property(
          fc.oneof(
            fc.anything(),
            fc.constantFrom(...valid, { _tag: member.identifier }),
            // Valid events with one field replaced by something arbitrary.
            fc.tuple(fc.constantFrom(...(valid.length > 0 ? valid : [{}])), fc.constantFrom(...Object.keys(member.fields)), fc.anything()).map(
              ([v, k, x]) => ({ ...(v as object), [k]: x })
            ),
            fc.record({ _tag: fc.constant(member.identifier), workerId: fc.string(), fence: fc.integer({ min: -2, max: 3 }), capacity: fc.integer({ min: -1, max: 101 }), at: fc.double(), tokenHash: fc.constantFrom(hash("x"), "nothex") })
          ),
          (u) => fast(u) === slow(u)
        ),
        { numRuns: 400 }
      )
    }
  })
})
