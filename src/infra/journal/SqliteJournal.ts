/**
 * The journal on SQLite (better-sqlite3 through @effect/sql): WAL, `synchronous=FULL`, one
 * writer. Appends go through a queue to one writer fiber that gathers whatever appends are
 * waiting into one transaction (group commit): one fsync serves them all, and each caller is
 * answered only after the commit that holds its events. Expected versions are checked in order
 * within the batch; a conflicting command writes nothing and does not stop the others.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Migrator from "@effect/sql/Migrator"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import { CURRENT_VERSION, Event, type Envelope, type EventType } from "../../domain/journal/Events.js"
import { upcast } from "../../domain/journal/Upcasting.js"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { Journal, JournalError, StreamConflict, type AppendCommand } from "../../app/journal/Journal.js"
import { migrations } from "./migrations.js"

/** Rows per INSERT statement: 7 parameters each stays under SQLite's 32,766-parameter limit. */
const ROWS_PER_STATEMENT = 4_000
/** Appends gathered into one transaction at most. */
const MAX_BATCH = 4_096

interface Pending {
  readonly command: AppendCommand
  readonly payloads: ReadonlyArray<string>
  readonly done: Deferred.Deferred<ReadonlyArray<Envelope>, StreamConflict | JournalError>
}

export type StoredRow = {
  readonly sequence: number
  readonly stream: string
  readonly stream_version: number
  readonly type: string
  readonly schema_version: number
  readonly payload: string
  readonly recorded_at: number
}

const encodeEvent = Schema.encodeSync(Event)
const decodeEvent = Schema.decodeUnknownSync(Event)

/** The stored payload: the encoded event without its tag (the `type` column holds it). */
export const payloadOf = (event: Event): string => {
  const { _tag, ...rest } = encodeEvent(event) as { _tag: string } & Record<string, unknown>
  return JSON.stringify(rest)
}

export const envelopeOfRow = (row: StoredRow): Envelope => {
  const type = row.type as EventType
  if (!(type in CURRENT_VERSION)) throw new Error(`unknown event type ${row.type}`)
  const payload = upcast(type, row.schema_version, JSON.parse(row.payload) as Record<string, unknown>)
  return {
    sequence: row.sequence,
    stream: row.stream,
    streamVersion: row.stream_version,
    type,
    schemaVersion: CURRENT_VERSION[type],
    recordedAt: row.recorded_at,
    event: decodeEvent({ ...payload, _tag: type })
  }
}

const yieldToEventLoop = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

const ioError = (what: string) => (cause: unknown) =>
  new JournalError({ reason: "Io", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`PRAGMA synchronous = FULL`.pipe(Effect.mapError(ioError("setting synchronous=FULL")))

  const headRows = yield* sql<{ head: number }>`SELECT COALESCE(MAX(sequence), 0) AS head FROM events`.pipe(
    Effect.mapError(ioError("reading the journal head"))
  )
  let head = headRows[0]?.head ?? 0
  const versions = new Map<string, number>()
  const versionOf = (stream: string) =>
    versions.has(stream)
      ? Effect.succeed(versions.get(stream)!)
      : Effect.map(
          sql<{ v: number }>`SELECT COALESCE(MAX(stream_version), 0) AS v FROM events WHERE stream = ${stream}`,
          (rows) => {
            const v = rows[0]?.v ?? 0
            versions.set(stream, v)
            return v
          }
        )

  const queue = yield* Queue.unbounded<Pending>()

  const writeBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const local = new Map<string, number>()
      const accepted: Array<{ readonly pending: Pending; readonly envelopes: ReadonlyArray<Envelope> }> = []
      const rows: Array<StoredRow> = []
      let sequence = head
      for (const pending of batch) {
        const { stream, expectedVersion, events } = pending.command
        const actual = local.get(stream) ?? (yield* versionOf(stream))
        if (actual !== expectedVersion) {
          yield* Deferred.fail(pending.done, new StreamConflict({ stream, expected: expectedVersion, actual }))
          continue
        }
        const envelopes = events.map((event, i): Envelope => {
          const envelope: Envelope = {
            sequence: ++sequence,
            stream,
            streamVersion: actual + i + 1,
            type: event._tag,
            schemaVersion: CURRENT_VERSION[event._tag],
            recordedAt: now,
            event
          }
          rows.push({
            sequence: envelope.sequence,
            stream,
            stream_version: envelope.streamVersion,
            type: envelope.type,
            schema_version: envelope.schemaVersion,
            payload: pending.payloads[i]!,
            recorded_at: now
          })
          return envelope
        })
        local.set(stream, actual + events.length)
        accepted.push({ pending, envelopes })
      }
      if (rows.length > 0) {
        const committed = yield* Effect.either(
          sql.withTransaction(
            Effect.forEach(
              chunks(rows, ROWS_PER_STATEMENT),
              (chunk) => sql`INSERT INTO events ${sql.insert(chunk)}`,
              { discard: true }
            )
          )
        )
        if (committed._tag === "Left") {
          const error = ioError("appending to the journal")(committed.left)
          for (const a of accepted) yield* Deferred.fail(a.pending.done, error)
          return
        }
        head = sequence
        for (const [stream, v] of local) versions.set(stream, v)
      }
      for (const a of accepted) yield* Deferred.succeed(a.pending.done, a.envelopes)
    }).pipe(
      Effect.catchAll((cause) =>
        Effect.forEach(batch, (p) => Deferred.fail(p.done, ioError("appending to the journal")(cause)), { discard: true })
      )
    )

  yield* Effect.gen(function* () {
    const first = yield* Queue.take(queue)
    const rest = yield* Queue.takeUpTo(queue, MAX_BATCH - 1)
    yield* writeBatch([first, ...rest])
    // Give the event loop a turn between commits: every step of a batch is synchronous, so
    // without this a steady stream of appends keeps Node in microtasks and starves timers and
    // I/O (measured: a 2 s Effect.sleep took 45 s under 256 appenders). Appends that arrive
    // meanwhile join the next batch.
    yield* yieldToEventLoop
  }).pipe(Effect.forever, Effect.forkScoped)

  yield* Effect.addFinalizer(() =>
    Effect.flatMap(Queue.takeAll(queue), (left) =>
      Effect.forEach(left, (p) => Deferred.fail(p.done, new JournalError({ reason: "Closed", message: "the journal was closed" })), {
        discard: true
      })
    )
  )

  const append = (command: AppendCommand) =>
    Effect.gen(function* () {
      if (command.events.length === 0) return []
      const payloads = command.events.map(payloadOf)
      const done = yield* Deferred.make<ReadonlyArray<Envelope>, StreamConflict | JournalError>()
      yield* Queue.offer(queue, { command, payloads, done })
      return yield* Deferred.await(done)
    })

  const read = (after: number, limit: number) =>
    sql<StoredRow>`SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at
             FROM events WHERE sequence > ${after} ORDER BY sequence LIMIT ${limit}`.pipe(
      Effect.mapError(ioError("reading the journal")),
      Effect.flatMap((rows) =>
        Effect.try({
          try: () => rows.map(envelopeOfRow),
          catch: (cause) =>
            new JournalError({ reason: "Corrupt", message: `an event after sequence ${after} cannot be read: ${cause instanceof Error ? cause.message : String(cause)}` })
        })
      )
    )

  return Journal.of({ append, read, head: Effect.sync(() => head) })
})

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

export const makeCheckpoints = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return Checkpoints.of({
    write: (c) =>
      sql`INSERT OR REPLACE INTO checkpoints (sequence, digest, written_at) VALUES (${c.sequence}, ${c.digest}, ${c.writtenAt})`.pipe(
        Effect.asVoid,
        Effect.mapError(ioError("writing a checkpoint"))
      ),
    latest: sql<{ sequence: number; digest: string; written_at: number }>`
      SELECT sequence, digest, written_at FROM checkpoints ORDER BY sequence DESC LIMIT 1`.pipe(
      Effect.map((rows) => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, writtenAt: rows[0].written_at })),
      Effect.mapError(ioError("reading checkpoints"))
    )
  })
})

/** The SQLite client on `filename`, migrated. */
export const layerStore = (filename: string) =>
  SqliteMigrator.layer({ loader: Migrator.fromRecord(migrations) }).pipe(
    Layer.provideMerge(SqliteClient.layer({ filename })),
    // The migrator can dump the schema with the sqlite3 program; it needs these to exist.
    Layer.provide(NodeContext.layer)
  )

/** Journal and checkpoints on `filename` (created and migrated when new). */
export const layer = (filename: string) =>
  Layer.mergeAll(Layer.scoped(Journal, make), Layer.effect(Checkpoints, makeCheckpoints)).pipe(Layer.provideMerge(layerStore(filename)))
