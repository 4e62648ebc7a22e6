/**
 * Opening the owner's SQLite store: the @effect/sql client on it, migrated (refusing a store a
 * newer svc migrated), and the writer's own better-sqlite3 connection with the pragmas that
 * make every commit durable. Both open the same file; the journal (SqliteJournal.ts) uses both.
 */
import Database from "better-sqlite3"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Migrator from "@effect/sql/Migrator"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { JournalError } from "../../app/journal/Journal.js"
import { ioError } from "./IoError.js"
import { migrations, MIGRATIONS_TABLE, NEWEST_MIGRATION } from "./migrations.js"
import { newerStore } from "./StoreCheck.js"

/**
 * The writer's own connection: better-sqlite3 directly, prepared statements, one synchronous
 * transaction per batch. @effect/sql runs the migrations and the checkpoints; the hot path of
 * appending and reading goes straight to SQLite, where each statement through the Effect
 * client cost more than the row itself (bench/journal-append).
 */
export const openWriter = (filename: string) =>
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
