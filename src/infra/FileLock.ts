/**
 * A lock the kernel keeps on an open file, taken by one process only and gone with it however it
 * ends (SIGKILL included), so no stale lock is ever left to clear or mistaken for a live one (a
 * pid written in a file is neither: another process may carry it since). SQLite's own locking is
 * used (fcntl locks, through better-sqlite3, already a dependency): Node has no flock of its own.
 * Used for one runtime per home (runtime/HomeLock.ts) and one join per owner in a home
 * (workers/PendingJoin.ts).
 */
import * as fs from "node:fs"
import Database from "better-sqlite3"

/** SQLite's own wait, in one try. */
const TRY_WAIT_MS = 100

/**
 * Takes the exclusive lock on `file` (made owner-only when missing), or throws: `SQLITE_BUSY`
 * (`isBusy`) when another process holds it. Held until `releaseLock`, or the process ends.
 */
export const takeLock = (file: string): Database.Database => {
  // Created owner-only: SQLite keeps nothing in it, but a file others may open could be locked by them.
  fs.closeSync(fs.openSync(file, "a", 0o600))
  const db = new Database(file, { timeout: TRY_WAIT_MS })
  try {
    db.pragma("locking_mode = EXCLUSIVE")
    db.exec("BEGIN EXCLUSIVE")
    return db
  } catch (e) {
    db.close()
    throw e
  }
}

/** Whether `takeLock` failed because another process holds the lock. */
export const isBusy = (e: unknown): boolean => (e as { code?: unknown }).code === "SQLITE_BUSY"

/** Lets the lock go (and closes the file). */
export const releaseLock = (db: Database.Database): void => {
  try {
    db.exec("ROLLBACK")
  } finally {
    db.close()
  }
}
