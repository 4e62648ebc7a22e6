/**
 * Read-only access to a journal file for the commands that work whether the owner runs or not
 * (`svc journal *`, `svc audit`): no migration, no writer; a missing file or a file without
 * the journal's tables reads as an empty journal.
 */
import { existsSync } from "node:fs"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { Journal, JournalError } from "../../app/journal/Journal.js"
import { envelopeOfRow, type StoredRow } from "./SqliteJournal.js"

const ioError = (what: string) => (cause: unknown) =>
  new JournalError({ reason: "Io", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const readOnly = () => Effect.fail(new JournalError({ reason: "Closed", message: "this journal is open read-only" }))

const empty = Layer.mergeAll(
  Layer.succeed(Journal, Journal.of({ append: readOnly, read: () => Effect.succeed([]), head: Effect.succeed(0) })),
  Layer.succeed(Checkpoints, Checkpoints.of({ write: readOnly, latest: Effect.succeed(undefined) }))
)

const fromFile = Layer.scopedContext(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.pipe(Effect.mapError(ioError("opening the journal")))
    const names = new Set(tables.map((t) => t.name))
    if (!names.has("events")) return yield* Layer.build(empty)
    const journal = Journal.of({
      append: readOnly,
      read: (after, limit) =>
        sql<StoredRow>`SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at
                       FROM events WHERE sequence > ${after} ORDER BY sequence LIMIT ${limit}`.pipe(
          Effect.mapError(ioError("reading the journal")),
          Effect.flatMap((rows) =>
            Effect.try({
              try: () => rows.map(envelopeOfRow),
              catch: (cause) => new JournalError({ reason: "Corrupt", message: `an event after sequence ${after} cannot be read: ${cause instanceof Error ? cause.message : String(cause)}` })
            })
          )
        ),
      head: sql<{ head: number }>`SELECT COALESCE(MAX(sequence), 0) AS head FROM events`.pipe(
        Effect.map((rows) => rows[0]?.head ?? 0),
        Effect.mapError(ioError("reading the journal head"))
      )
    })
    const checkpoints = Checkpoints.of({
      write: readOnly,
      latest: names.has("checkpoints")
        ? sql<{ sequence: number; digest: string; written_at: number }>`SELECT sequence, digest, written_at FROM checkpoints ORDER BY sequence DESC LIMIT 1`.pipe(
            Effect.map((rows) => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, writtenAt: rows[0].written_at })),
            Effect.mapError(ioError("reading checkpoints"))
          )
        : Effect.succeed(undefined)
    })
    return yield* Layer.build(Layer.mergeAll(Layer.succeed(Journal, journal), Layer.succeed(Checkpoints, checkpoints)))
  })
)

export const layer = (filename: string) =>
  existsSync(filename) ? fromFile.pipe(Layer.provide(SqliteClient.layer({ filename, readonly: true, disableWAL: true }))) : empty
