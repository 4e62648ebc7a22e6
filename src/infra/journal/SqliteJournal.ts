/**
 * The journal on SQLite: WAL, `synchronous=FULL`, one writer. @effect/sql runs the migrations
 * and the checkpoints; appends and reads go through the writer's own better-sqlite3
 * connection. Appends made in one event-loop turn share one transaction (group commit): one
 * fsync serves them all, and each caller resumes only after the commit that holds its events.
 * Expected versions are checked in arrival order within the batch; a conflicting command
 * writes nothing and does not stop the others; a caller interrupted while it still waits
 * leaves the batch and writes nothing.
 */
import Database from "better-sqlite3"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Migrator from "@effect/sql/Migrator"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as Schema from "effect/Schema"
import { CURRENT_VERSION, Event, RUN_STREAM_PREFIX, type Envelope, type EventType } from "../../domain/journal/Events.js"
import { isPackedVersion, storedPayload, upcast } from "../../domain/journal/Upcasting.js"
import { fastGuardOf } from "../schema/Guard.js"
import { issuesText } from "../schema/Issues.js"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { Journal, JournalError, StreamConflict, type AppendCommand } from "../../app/journal/Journal.js"
import { migrations, MIGRATIONS_TABLE, NEWEST_MIGRATION } from "./migrations.js"
import { newerStore } from "./StoreCheck.js"
import { readPackedPlacement } from "./PackedPlacement.js"
import { snapshotText, storedSnapshot } from "./SnapshotText.js"

const NONE: ReadonlyArray<Envelope> = []

/** Appends gathered into one transaction at most. */
const MAX_BATCH = 4_096

/**
 * An append waiting for its commit. It is a class instance, not an object literal, and keeps
 * the command's parts, not the caller's command object: V8 pretenures an object literal's
 * allocation site when it sees that site's objects survive scavenges, which appends waiting
 * for their commit do; pretenured appends then died in the old generation while holding young
 * payload strings, so every scavenge copied those and the heap grew until a full collection
 * (bench/journal-append: about a third of the journal's own time). The payloads come from
 * `map` for the same reason.
 */
class Pending {
  /** Set by the flush that accepts the command: its envelopes, in order. */
  envelopes: ReadonlyArray<Envelope> = NONE
  constructor(
    readonly stream: string,
    readonly expectedVersion: number,
    readonly events: ReadonlyArray<Event>,
    readonly payloads: ReadonlyArray<string>,
    readonly resume: (result: Effect.Effect<ReadonlyArray<Envelope>, StreamConflict | JournalError>) => void,
    /** The caller's fiber when it waits interruptibly (see `append`); undefined when it cannot be interrupted. */
    readonly fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  ) {}
}

/**
 * An interruptible caller that was interrupted while it waited has left: the fiber runtime
 * resumed it with the interruption, and its command is not written.
 */
const hasLeft = (pending: Pending): boolean =>
  pending.fiber !== undefined && !Cause.isEmpty(pending.fiber.getFiberRef(FiberRef.interruptedCause))

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

/** Each event type's own fields, without the tag, in declaration order. */
const payloadFields: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  Event.members.map((member) => [member.identifier, Object.keys(member.fields).filter((name) => name !== "_tag")] as const)
)

/**
 * The stored payload: the event without its tag (the `type` column holds it). Every event
 * schema's encoded form is its type form (plain JSON values, no transformations), and an event
 * is validated when constructed, so the instance's fields are the encoding.
 */
export const payloadOf = (event: Event): string => {
  const names = payloadFields.get(event._tag)
  if (names === undefined) {
    const { _tag, ...rest } = event as Event & Record<string, unknown>
    return JSON.stringify(storedPayload(event._tag, rest))
  }
  // The declared fields in their declared order (the order the constructor sets them in, so the
  // text is the same as the rest of the instance's own fields) on a plain object, which
  // JSON.stringify serializes faster than a rest copy of the instance.
  const source = event as unknown as Record<string, unknown>
  const plain: Record<string, unknown> = {}
  for (const name of names) plain[name] = source[name]
  return JSON.stringify(storedPayload(event._tag, plain))
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
  const payload = JSON.parse(text) as Record<string, unknown>
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

export const ioError = (what: string) => (cause: unknown) =>
  new JournalError({ reason: "Io", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

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

/**
 * The writer's own connection: better-sqlite3 directly, prepared statements, one synchronous
 * transaction per batch. @effect/sql runs the migrations and the checkpoints; the hot path of
 * appending and reading goes straight to SQLite, where each statement through the Effect
 * client cost more than the row itself (bench/journal-append).
 */
const openWriter = (filename: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const db = new Database(filename)
        db.pragma("journal_mode = WAL")
        db.pragma("synchronous = FULL")
        db.pragma("busy_timeout = 5000")
        return db
      },
      catch: ioError(`opening ${filename}`)
    }),
    (db) =>
      Effect.sync(() => {
        // Every commit into the file itself before it closes: SQLite merges the WAL at close only
        // when no other connection has the file open, and a reader (`svc journal tail --follow`)
        // left the last commits in `-wal`, where a backup of `svc.sqlite` alone missed them.
        // Waits for a reader mid-read up to the busy timeout; the close goes on either way.
        try {
          db.pragma("wal_checkpoint(TRUNCATE)")
        } catch {
          // The close below still keeps every commit (in -wal), as before.
        }
        db.close()
      })
  )

/** Streams whose version the writer keeps in memory: the streams of the runs and workers in use, with room. */
export const STREAM_CACHE = 16_384

export const make = (filename: string, { streamCache = STREAM_CACHE }: { readonly streamCache?: number } = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Checkpoints are written through this connection: it is durable too.
    yield* sql`PRAGMA synchronous = FULL`.pipe(Effect.mapError(ioError("setting synchronous=FULL")))
    const db = yield* openWriter(filename)
    const insert = db.prepare<[number, string, number, string, number, string, number]>(
      "INSERT INTO events (sequence, stream, stream_version, type, schema_version, payload, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    // The rows straight from the accepted commands' envelopes and payloads.
    const writeRows = db.transaction((accepted: ReadonlyArray<Pending>) => {
      for (const p of accepted) {
        const envelopes = p.envelopes
        for (let i = 0; i < envelopes.length; i++) {
          const e = envelopes[i]!
          insert.run(e.sequence, e.stream, e.streamVersion, e.type, e.schemaVersion, p.payloads[i]!, e.recordedAt)
        }
      }
    })
    const streamHead = db.prepare<[string], number>("SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream = ?").pluck()
    const page = preparePage(db)
    const outsideRuns = prepareOutsideRuns(db)
    const streamQuery = prepareStream(db)

    let head = db.prepare<[], number>("SELECT COALESCE(MAX(sequence), 0) FROM events").pluck().get() ?? 0
    // The committed version of the streams seen lately, the one seen first dropped past
    // `streamCache` (every run is a stream of its own: kept for every stream, this map grew
    // with every run ever submitted). A stream not here is read from the table, which holds every
    // committed version, so the bound changes the cost of an append, never its answer.
    const versions = new Map<string, number>()
    const remember = (stream: string, v: number) => {
      const size = versions.size
      versions.set(stream, v)
      if (versions.size > size && versions.size > streamCache) versions.delete(versions.keys().next().value!)
    }
    const versionOf = (stream: string): number => {
      const v = versions.get(stream)
      if (v !== undefined) return v
      const stored = streamHead.get(stream) ?? 0
      remember(stream, stored)
      return stored
    }

    /** Decides each command of the batch against the stream versions, then commits them together. */
    const writeBatch = (batch: ReadonlyArray<Pending>, now: number) => {
      const local = new Map<string, number>()
      const accepted: Array<Pending> = []
      const conflicts: Array<{ readonly pending: Pending; readonly error: StreamConflict }> = []
      let sequence = head
      for (const pending of batch) {
        if (hasLeft(pending)) continue
        const { stream, expectedVersion, events } = pending
        const actual = local.get(stream) ?? versionOf(stream)
        if (actual !== expectedVersion) {
          conflicts.push({ pending, error: new StreamConflict({ stream, expected: expectedVersion, actual }) })
          continue
        }
        const envelopes: Array<Envelope> = []
        for (let i = 0; i < events.length; i++) {
          const event = events[i]!
          envelopes.push({
            sequence: ++sequence,
            stream,
            streamVersion: actual + i + 1,
            type: event._tag,
            schemaVersion: CURRENT_VERSION[event._tag],
            recordedAt: now,
            event
          })
        }
        pending.envelopes = envelopes
        local.set(stream, actual + events.length)
        accepted.push(pending)
      }
      let failure: JournalError | undefined
      if (accepted.length > 0) {
        try {
          writeRows(accepted)
          head = sequence
          for (const [stream, v] of local) remember(stream, v)
        } catch (cause) {
          failure = ioError("appending to the journal")(cause)
        }
      }
      return { accepted, conflicts, failure }
    }

    /**
     * Group commit without a writer fiber: an append parks its caller and joins `waiting`; the
     * first one of a turn schedules a flush with setImmediate, after the current microtasks and
     * I/O, so every append made in the meantime shares that transaction. Callers are resumed
     * once their commit is done (or refused), each with a ready `Exit`.
     */
    let waiting: Array<Pending> = []
    let scheduled = false
    let closed = false

    const flush = () => {
      scheduled = false
      const batch = waiting.length <= MAX_BATCH ? waiting : waiting.slice(0, MAX_BATCH)
      waiting = waiting.length <= MAX_BATCH ? [] : waiting.slice(MAX_BATCH)
      if (waiting.length > 0) schedule()
      const { accepted, conflicts, failure } = writeBatch(batch, Date.now())
      for (const c of conflicts) c.pending.resume(Effect.fail(c.error))
      if (failure === undefined) for (const p of accepted) p.resume(Exit.succeed(p.envelopes))
      else for (const p of accepted) p.resume(Exit.fail(failure))
    }
    const schedule = () => {
      if (scheduled) return
      scheduled = true
      setImmediate(flush)
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        const left = waiting
        waiting = []
        for (const p of left) p.resume(Effect.fail(new JournalError({ reason: "Closed", message: "the journal was closed" })))
      })
    )

    /**
     * One fiber suspension per append and nothing else: no canceler is registered (an
     * `Effect.async` canceler wraps every call in `onInterrupt`, an uninterruptible region and
     * its restore, which cost more than the rest of the append). Instead the pending append
     * remembers the caller's fiber when the caller waits interruptibly; an interrupted caller is
     * resumed with its interruption by the fiber runtime at once, and the flush skips it, so a
     * caller that is interrupted while still waiting writes nothing, as before. Once flushed,
     * its events are committed whatever happens to the caller.
     */
    const append = (command: AppendCommand): Effect.Effect<ReadonlyArray<Envelope>, StreamConflict | JournalError> => {
      if (command.events.length === 0) return Effect.succeed([])
      return Effect.withFiberRuntime<ReadonlyArray<Envelope>, StreamConflict | JournalError>((fiber, status) => {
        if (closed) return Effect.fail(new JournalError({ reason: "Closed", message: "the journal was closed" }))
        const payloads = command.events.map(payloadOf)
        const waiter = RuntimeFlags.interruptible(status.runtimeFlags) ? (fiber as Fiber.RuntimeFiber<unknown, unknown>) : undefined
        return Effect.async<ReadonlyArray<Envelope>, StreamConflict | JournalError>((resume) => {
          waiting.push(new Pending(command.stream, command.expectedVersion, command.events, payloads, resume, waiter))
          schedule()
        })
      })
    }

    const read = (after: number, limit: number) => readPage(page, after, limit)

    return Journal.of({
      append,
      read,
      readStream: (stream) => readStreamOf(streamQuery, stream),
      readOutsideRuns: (after, limit) => readPage(outsideRuns, after, limit),
      head: Effect.sync(() => head)
    })
  })

export const makeCheckpoints = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return Checkpoints.of({
    write: (c, state) =>
      // Compressed before the transaction, off the owner's thread (SnapshotText.ts).
      Effect.flatMap(state === undefined ? Effect.succeed(undefined) : Effect.tryPromise({ try: () => storedSnapshot(state), catch: ioError("compressing a snapshot") }), (stored) =>
        Effect.gen(function* () {
          yield* sql`INSERT OR REPLACE INTO checkpoints (sequence, digest, written_at) VALUES (${c.sequence}, ${c.digest}, ${c.writtenAt})`
          if (stored === undefined) return
          yield* sql`DELETE FROM snapshots`
          yield* sql`INSERT INTO snapshots (sequence, digest, state) VALUES (${c.sequence}, ${c.digest}, ${stored})`
        }).pipe(sql.withTransaction, Effect.asVoid, Effect.mapError(ioError("writing a checkpoint")))
      ),
    snapshot: sql<{ sequence: number; digest: string; state: unknown }>`SELECT sequence, digest, state FROM snapshots ORDER BY sequence DESC LIMIT 1`.pipe(
      Effect.mapError(ioError("reading the snapshot")),
      Effect.flatMap((rows) =>
        Effect.try({
          try: () => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, state: snapshotText(rows[0].state) }),
          catch: ioError("reading the snapshot")
        })
      )
    ),
    latest: sql<{ sequence: number; digest: string; written_at: number }>`
      SELECT sequence, digest, written_at FROM checkpoints ORDER BY sequence DESC LIMIT 1`.pipe(
      Effect.map((rows) => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, writtenAt: rows[0].written_at })),
      Effect.mapError(ioError("reading checkpoints"))
    )
  })
})

/**
 * A store a newer svc migrated is not written by this one: its events and tables may carry what
 * this code does not know (the migrator itself runs only the migrations past the store's last,
 * so it found nothing to do and said nothing).
 */
const refuseNewer = (filename: string) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ id: number; name: string }>`SELECT migration_id AS id, name FROM ${sql(MIGRATIONS_TABLE)} ORDER BY migration_id DESC LIMIT 1`.pipe(
        Effect.mapError(ioError(`reading the migrations of ${filename}`))
      )
      const newest = rows[0]
      if (newest !== undefined && newest.id > NEWEST_MIGRATION) return yield* new JournalError({ reason: "Io", message: newerStore(filename, newest.id, newest.name) })
    })
  )

/** The SQLite client on `filename`, migrated. */
export const layerStore = (filename: string) =>
  refuseNewer(filename).pipe(
    Layer.provideMerge(SqliteMigrator.layer({ loader: Migrator.fromRecord(migrations) })),
    Layer.provideMerge(SqliteClient.layer({ filename })),
    // The migrator can dump the schema with the sqlite3 program; it needs these to exist.
    Layer.provide(NodeContext.layer)
  )

/** Journal and checkpoints on `filename` (created and migrated when new). */
export const layer = (filename: string, options: { readonly streamCache?: number } = {}) =>
  Layer.mergeAll(Layer.scoped(Journal, make(filename, options)), Layer.effect(Checkpoints, makeCheckpoints)).pipe(Layer.provideMerge(layerStore(filename)))
