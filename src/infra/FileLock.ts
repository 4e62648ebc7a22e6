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
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/** SQLite's own wait, in one try. */
const TRY_WAIT_MS = 100
/** Between tries, give or take a random part, so that processes at one moment fall out of step. */
const BETWEEN_TRIES_MS = 40

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

/** Why `holdLock` did not take the lock: another process holds it, or the file cannot be locked. */
export type LockProblem = { readonly busy: true } | { readonly busy: false; readonly message: string }

/**
 * Takes the exclusive lock on `file`, trying for up to `waitMs`; fails with `busy` while another
 * process holds it, or with why the file cannot be locked.
 *
 * Taking the exclusive lock passes through a shared one, and SQLite gives up at once, without
 * its wait, when waiting could deadlock (one holding the shared lock, another the reserved one):
 * six starts at one moment all gave up with no wait, and some still did with a 0.5 s one on a
 * loaded machine (the one close to the lock waited out the others' shared locks). Each try
 * lets go of everything; tries are repeated, apart by a random interval, for up to `waitMs`: a
 * lock a running process holds is still an answer, given after it.
 */
export const holdLock = (file: string, waitMs: number): Effect.Effect<Database.Database, LockProblem> =>
  Effect.try({
    try: () => takeLock(file),
    catch: (e): LockProblem => (isBusy(e) ? { busy: true } : { busy: false, message: e instanceof Error ? e.message : String(e) })
  }).pipe(
    Effect.retry({
      while: (p) => p.busy,
      schedule: Schedule.spaced(Duration.millis(BETWEEN_TRIES_MS)).pipe(Schedule.jitteredWith({ min: 0.25, max: 1.75 }), Schedule.upTo(Duration.millis(waitMs)))
    })
  )
