/**
 * Whether a file is a store this svc can read, before anything is read from it: the read-only
 * commands read a file without its journal's tables as an empty journal and passed it as clean
 * (a dropped `events` table), and a store a newer svc had migrated was read, and written, as if
 * it were this one's. (A 0-byte file, never written to, is not opened: JournalReader.ts.)
 */
import { accessSync, closeSync, constants, existsSync, openSync, readSync } from "node:fs"
import { dirname } from "node:path"
import type Database from "better-sqlite3"
import { sizeOf } from "./StoreFile.js"
import { migrationTables, MIGRATIONS_TABLE, NEWEST_MIGRATION } from "./migrations.js"

/** The tables of the store `db`. */
export const tablesOf = (db: Database.Database): ReadonlySet<string> => new Set(db.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all())

/**
 * Why the store `db` (the file `filename`, with its `tables`) cannot be read as svc's journal, or
 * undefined. `walAlone`: the file is in WAL mode and had no `-wal` beside it when it was opened.
 */
export const storeProblem = (db: Database.Database, filename: string, tables: ReadonlySet<string>, walAlone = false): string | undefined => {
  if (tables.size === 0) {
    // A running owner's svc.sqlite copied alone: its tables were still in the -wal it was not copied with.
    return walAlone
      ? `${filename} holds no svc journal: it has no tables, and it is a WAL journal with no ${filename}-wal beside it (or an empty one): a copy of a running owner's svc.sqlite made without its -wal file, which held them? Copy svc.sqlite-wal with it (or use sqlite3's .backup: docs/operations.md, "Backups")`
      : `${filename} holds no svc journal: it has no tables (svc serve makes them when it first starts in this home)`
  }
  if (!tables.has(MIGRATIONS_TABLE)) return `${filename} is not an svc store: it has no record of svc's migrations (its tables: ${[...tables].sort().join(", ")})`
  const applied = db.prepare<[], { migration_id: number; name: string }>(`SELECT migration_id, name FROM ${MIGRATIONS_TABLE} ORDER BY migration_id`).all()
  const newest = applied[applied.length - 1]
  if (newest === undefined) return `${filename} holds no svc journal: no migration was recorded (svc serve makes the journal when it first starts in this home)`
  if (newest.migration_id > NEWEST_MIGRATION) return newerStore(filename, newest.migration_id, newest.name)
  for (const { migration_id } of applied) {
    for (const table of migrationTables[migration_id] ?? []) {
      if (!tables.has(table)) return `${filename} is damaged: its table ${table} is missing (migration ${migration_id} made it)`
    }
  }
  return undefined
}

/** What a store migrated by a newer svc is told. */
export const newerStore = (filename: string, id: number, name: string) =>
  `${filename} was written by a newer svc: its store has migration ${id} (${name}), this svc knows up to ${NEWEST_MIGRATION}; use that svc or a later one`

/**
 * Why SQLite could not open or read `filename`, in words: a store closed cleanly in a home that
 * cannot be written cannot be read in place (SQLite reads a WAL store through `-shm` beside it,
 * and a read-only connection cannot make it there).
 */
export const openProblem = (filename: string, cause: unknown): string => {
  const message = cause instanceof Error ? cause.message : String(cause)
  const code = (cause as { code?: unknown }).code
  const home = dirname(filename)
  let writable = true
  try {
    accessSync(home, constants.W_OK)
  } catch {
    writable = false
  }
  // SQLITE_READONLY_DIRECTORY where the directory is not writable to this user (SQLITE_CANTOPEN on a read-only mount).
  const readOnly = typeof code === "string" && (code.startsWith("SQLITE_READONLY") || code === "SQLITE_CANTOPEN")
  if (readOnly && !writable && !existsSync(`${filename}-shm`)) {
    return `cannot read ${filename}: ${home} cannot be written, and SQLite reads this store (a WAL journal) through ${filename}-shm, which it would have to create there; copy the home somewhere writable and read the copy (SVC_HOME=COPY)`
  }
  return `cannot read ${filename}: ${message}${damaged(message)}`
}

/** What to do about a store SQLite finds damaged (said after SQLite's own words), else "". */
export const damaged = (message: string): string =>
  /malformed|not a database/.test(message) ? ` (the file is damaged: restore it from a backup, docs/operations.md, "Backups"; sqlite3's PRAGMA integrity_check says where)` : ""

/**
 * Whether `filename` is a WAL journal (its header's read and write versions 2) with no `-wal`
 * beside it, or an empty one: looked at before it is opened, since opening it makes one (and a
 * reader leaves it there, empty).
 */
export const walAlone = (filename: string): boolean => {
  if ((sizeOf(`${filename}-wal`) ?? 0) > 0) return false
  try {
    const fd = openSync(filename, "r")
    try {
      const header = Buffer.alloc(20)
      return readSync(fd, header, 0, 20, 0) === 20 && header.subarray(0, 16).toString("latin1") === "SQLite format 3\0" && header[18] === 2 && header[19] === 2
    } finally {
      closeSync(fd)
    }
  } catch {
    return false
  }
}
