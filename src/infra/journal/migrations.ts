/**
 * The journal's schema, as numbered migrations run by @effect/sql's SQLite migrator. A shipped
 * migration is never edited; a change is a new migration.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export const migrations = {
  "0001_events": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // One table: the global order is the sequence; (stream, stream_version) is unique, which
    // is what makes an expected-version append safe even if two writers ever raced.
    yield* sql`
      CREATE TABLE events (
        sequence INTEGER PRIMARY KEY,
        stream TEXT NOT NULL,
        stream_version INTEGER NOT NULL,
        type TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        payload TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        UNIQUE (stream, stream_version)
      )`
    yield* sql`
      CREATE TABLE checkpoints (
        sequence INTEGER PRIMARY KEY,
        digest TEXT NOT NULL,
        written_at INTEGER NOT NULL
      )`
  }),
  // The projections at a checkpoint, as the canonical JSON its digest is of: the owner starts
  // from the last one and folds the journal after it. One row: each write replaces it.
  "0002_snapshots": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      CREATE TABLE snapshots (
        sequence INTEGER PRIMARY KEY,
        digest TEXT NOT NULL,
        state TEXT NOT NULL
      )`
  })
}

/** The tables each migration makes, by its number: a store that recorded one and lacks its table is damaged. */
export const migrationTables: Readonly<Record<number, ReadonlyArray<string>>> = { 1: ["events", "checkpoints"], 2: ["snapshots"] }

/** The newest migration this svc knows: a store that recorded a later one was written by a newer svc. */
export const NEWEST_MIGRATION = Math.max(...Object.keys(migrations).map((key) => Number.parseInt(key, 10)))

/** @effect/sql's record of the migrations run on a store (its default table name). */
export const MIGRATIONS_TABLE = "effect_sql_migrations"
