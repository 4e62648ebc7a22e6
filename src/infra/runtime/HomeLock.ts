/**
 * One runtime per $SVC_HOME, held by the system rather than inferred: an exclusive SQLite lock
 * on `$SVC_HOME/serve.lock`, taken before anything else of the home is opened or written (the
 * journal, the certificate, the children a killed runtime left) and kept for the runtime's life.
 *
 * Asking whether an admin socket answers cannot tell two starts at one moment apart: both found
 * none, and the one that gave up later had written its own certificate over the one the other
 * served, and appended to the journal the other was writing (one writer's sequences then clashed
 * with the other's, and every later append of the live owner failed). A lock the kernel keeps on
 * an open file is taken by one process only, and goes with the process however it ends (SIGKILL
 * included), so no stale lock is ever left to clear (../FileLock.ts).
 */
import * as nodePath from "node:path"
import type Database from "better-sqlite3"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { isBusy, releaseLock, takeLock } from "../FileLock.js"

export const LOCK_FILE = "serve.lock"
/** How long a start tries for the home's lock before it says another process holds it. */
export const LOCK_WAIT_MS = 3_000
/** Between tries, give or take a random part, so that starts at one moment fall out of step. */
const BETWEEN_TRIES_MS = 40

/** Locks let go without closing them (their home was taken): referenced until the process ends. */
const kept: Array<Database.Database> = []

export type HomeLockProblem = { readonly busy: true } | { readonly busy: false; readonly message: string }

const tryTake = (file: string) =>
  Effect.try({
    try: () => takeLock(file),
    catch: (e): HomeLockProblem => (isBusy(e) ? { busy: true } : { busy: false, message: e instanceof Error ? e.message : String(e) })
  })

/**
 * Holds the home's lock until the scope closes; fails with `busy` when another process holds it
 * (another `svc serve` on this home), or with why the lock file cannot be taken.
 *
 * Taking the exclusive lock passes through a shared one, and SQLite gives up at once, without
 * its wait, when waiting could deadlock (one holding the shared lock, another the reserved one):
 * six starts at one moment all gave up with no wait, and some still did with a 0.5 s one on a
 * loaded machine (the one close to the lock waited out the others' shared locks). Each try
 * lets go of everything; tries are repeated, apart by a random interval, for up to
 * `LOCK_WAIT_MS`: a lock a running runtime holds is still an answer, given after it.
 */
/** `taken.value`: the home was taken from under the runtime (HomeWatch.ts); its lock is then not closed, which would remove a file of the same name another runtime made since. */
export const holdHome = (home: string, taken: { readonly value: boolean } = { value: false }) =>
  Effect.acquireRelease(
    tryTake(nodePath.join(home, LOCK_FILE)).pipe(
      Effect.retry({
        while: (p) => p.busy,
        schedule: Schedule.spaced(Duration.millis(BETWEEN_TRIES_MS)).pipe(Schedule.jitteredWith({ min: 0.25, max: 1.75 }), Schedule.upTo(Duration.millis(LOCK_WAIT_MS)))
      })
    ),
    (db) =>
      Effect.sync(() => {
        // Closing removes serve.lock-journal by its path: when the home is no longer this
        // runtime's, that is another runtime's file. The process ends with the lock (serve.ts);
        // the connection is kept referenced till then (better-sqlite3 closes one collected).
        if (taken.value) return void kept.push(db)
        releaseLock(db)
      })
  )
