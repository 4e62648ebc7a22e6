/**
 * The events table read back: each row made into an envelope holding the current event, and the
 * queries that read pages and streams. Apart from the writer because the read-only reader
 * (JournalReader.ts) reads the same rows the same way, with no writer and no migration.
 */
import type Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CURRENT_VERSION, Event, RUN_STREAM_PREFIX, type Envelope, type EventType } from "../../domain/journal/Events.js"
import { decisionAsStored, isPackedVersion, upcast } from "../../domain/journal/Upcasting.js"
import { fastGuardOf } from "../schema/Guard.js"
import { issuesText } from "../schema/Issues.js"
import { JournalError } from "../../app/journal/Journal.js"
import { ioError } from "./IoError.js"
import { readPackedPlacement } from "./PackedPlacement.js"

export type StoredRow = {
  readonly sequence: number
  readonly stream: string
  readonly stream_version: number
  readonly type: string
  readonly schema_version: number
  readonly payload: string
  readonly recorded_at: number
}

/**
 * A payload the fast guard refused, decoded by its own event's schema (the row says which) for
 * what is wrong with it, in a sentence: decoded by the union, the message was the whole union's
 * tree, some twenty lines naming every other event.
 */
const memberDecoders = new Map(Event.members.map((member) => [member.identifier, Schema.decodeUnknownEither(member as Schema.Schema<Event, unknown>)] as const))
const decodeEvent = (payload: Record<string, unknown> & { readonly _tag: string }): Event => {
  const decoded = memberDecoders.get(payload._tag)!(payload)
  if (decoded._tag === "Right") return decoded.right
  throw new Error(issuesText(decoded.left.issue, 3))
}

/**
 * Reading is the hot path of replay: each payload is checked against its event's fields with a
 * guard compiled from the schema (no transformation, no intermediate copies), then its
 * declared fields are copied onto an instance of the event's class, as the constructor does
 * once validation is off. Only a payload that fails the guard goes through the full decoder,
 * for its precise error.
 */
const readers = new Map(
  Event.members.map((member) => {
    const { _tag, ...fields } = member.fields as Schema.Struct.Fields
    const names = Object.keys(fields)
    const is = fastGuardOf(Schema.Struct(fields).ast)
    const prototype = (member as unknown as { prototype: object }).prototype
    // Only the event's own fields are kept: a stray field in a stored payload is dropped, as the
    // full decoder would drop it. Generated, so that each field is read and set at its own place
    // in the code (one shape each for V8), the tag last, as on a constructed instance.
    const make = new Function(
      "prototype",
      "tag",
      `"use strict"; return function (p) { const o = Object.create(prototype); ${names
        .map((name) => `if (${JSON.stringify(name)} in p) o[${JSON.stringify(name)}] = p[${JSON.stringify(name)}];`)
        .join(" ")} o._tag = tag; return o }`
    )(prototype, member.identifier) as (payload: Record<string, unknown>) => Event
    return [member.identifier, { is, make }] as const
  })
)

const eventOf = (type: EventType, payload: Record<string, unknown>): Event => {
  const reader = readers.get(type)
  if (reader !== undefined && reader.is(payload)) return reader.make(payload)
  return decodeEvent({ ...payload, _tag: type })
}

/** A stored payload as the current event: a packed decision without making its candidates yet (PackedPlacement.ts). */
const readEvent = (type: EventType, version: number, text: string): Event => {
  const parsed = JSON.parse(text) as Record<string, unknown>
  const payload = type === "PlacementDecided" ? decisionAsStored(version, parsed) : parsed
  return (type === "PlacementDecided" && isPackedVersion(type, version) ? readPackedPlacement(payload) : undefined) ?? eventOf(type, upcast(type, version, payload))
}

/** A row's number as stored: SQLite keeps what is written (text in an INTEGER column too). */
const wholeNumber = (value: unknown, what: string, min: number, max = Number.MAX_SAFE_INTEGER): void => {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw new Error(`its ${what} is ${JSON.stringify(value)}, not a whole number from ${min}`)
}

const envelopeOf = (sequence: number, stream: string, streamVersion: number, type: string, schemaVersion: number, payload: string, recordedAt: number): Envelope => {
  if (!(type in CURRENT_VERSION)) throw new Error(`unknown event type ${type}`)
  wholeNumber(streamVersion, "stream version", 1)
  wholeNumber(schemaVersion, "schema version", 1)
  // A time every reader can print (the largest a Date takes).
  wholeNumber(recordedAt, "recorded time (milliseconds since 1970)", 0, 8.64e15)
  const t = type as EventType
  return {
    sequence,
    stream,
    streamVersion,
    type: t,
    schemaVersion: CURRENT_VERSION[t],
    recordedAt,
    event: readEvent(t, schemaVersion, payload)
  }
}

export const envelopeOfRow = (row: StoredRow): Envelope =>
  envelopeOf(row.sequence, row.stream, row.stream_version, row.type, row.schema_version, row.payload, row.recorded_at)

/** A row of `PAGE_SQL` as an array (better-sqlite3's raw mode: cheaper to make than an object). */
export type RawRow = readonly [sequence: number, stream: string, streamVersion: number, type: string, schemaVersion: number, payload: string, recordedAt: number]

const envelopeOfRaw = (row: RawRow): Envelope => envelopeOf(row[0], row[1], row[2], row[3], row[4], row[5], row[6])


/** One page of the journal in order: the owner's adapter and the read-only commands share it. */
export const PAGE_SQL =
  "SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?"

/** One stream in stream order (the index of UNIQUE (stream, stream_version) serves it). */
export const STREAM_SQL =
  "SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at FROM events WHERE stream = ? ORDER BY stream_version"

/** The stream query on `db`, answering rows as arrays. */
export const prepareStream = (db: Database.Database): Database.Statement<[string], RawRow> => db.prepare<[string], RawRow>(STREAM_SQL).raw(true)

/**
 * Rows of a query as envelopes: a failing query is Io (`reading`), an event that cannot be read
 * is Corrupt, naming its sequence, type and stream, and carrying the row as stored.
 */
const envelopesOf = (query: () => ReadonlyArray<RawRow>, reading: string) =>
  Effect.try({ try: query, catch: ioError(reading) }).pipe(
    Effect.flatMap((rows) => {
      let i = 0
      return Effect.try({
        try: () => {
          const out = new Array<Envelope>(rows.length)
          for (; i < rows.length; i++) out[i] = envelopeOfRaw(rows[i]!)
          return out
        },
        catch: (cause) => {
          const [sequence, stream, streamVersion, type, schemaVersion, payload, recordedAt] = rows[i]!
          return new JournalError({
            reason: "Corrupt",
            message: `the event at sequence ${sequence} (${type}, stream ${stream}) cannot be read: ${cause instanceof Error ? cause.message : String(cause)}`,
            row: { sequence, stream, streamVersion, type, schemaVersion, recordedAt, payload }
          })
        }
      })
    })
  )

/** Reads one stream. */
export const readStreamOf = (query: Database.Statement<[string], RawRow>, stream: string) =>
  envelopesOf(() => query.all(stream), `reading stream ${stream}`)

/** The page query on `db`, answering rows as arrays. */
export const preparePage = (db: Database.Database): Database.Statement<[number, number], RawRow> =>
  db.prepare<[number, number], RawRow>(PAGE_SQL).raw(true)

/** A page of every stream but the runs': their rows are passed over without their payloads being read. */
export const OUTSIDE_RUNS_SQL = `SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at FROM events WHERE sequence > ? AND stream NOT LIKE '${RUN_STREAM_PREFIX}%' ORDER BY sequence LIMIT ?`

/** That query on `db`, answering rows as arrays. */
export const prepareOutsideRuns = (db: Database.Database): Database.Statement<[number, number], RawRow> =>
  db.prepare<[number, number], RawRow>(OUTSIDE_RUNS_SQL).raw(true)

/** Reads a page. */
export const readPage = (page: Database.Statement<[number, number], RawRow>, after: number, limit: number) =>
  envelopesOf(() => page.all(after, limit), `reading the journal after sequence ${after}`)
