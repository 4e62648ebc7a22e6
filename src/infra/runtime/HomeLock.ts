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
import * as Effect from "effect/Effect"
import { holdLock, releaseLock } from "../FileLock.js"

export const LOCK_FILE = "serve.lock"
/** How long a start tries for the home's lock before it says another process holds it. */
export const LOCK_WAIT_MS = 3_000
/** Locks let go without closing them (their home was taken): referenced until the process ends. */
const kept: Array<Database.Database> = []

/**
 * Holds the home's lock until the scope closes; fails with `busy` when another process holds it
 * (another `svc serve` on this home) after trying for `LOCK_WAIT_MS`, or with why the lock file
 * cannot be taken. `taken.value`: the home was taken from under the runtime (HomeWatch.ts); its
 * lock is then not closed, which would remove a file of the same name another runtime made since.
 */
export const holdHome = (home: string, taken: { readonly value: boolean } = { value: false }) =>
  Effect.acquireRelease(
    holdLock(nodePath.join(home, LOCK_FILE), LOCK_WAIT_MS),
    (db) =>
      Effect.sync(() => {
        // Closing removes serve.lock-journal by its path: when the home is no longer this
        // runtime's, that is another runtime's file. The process ends with the lock (serve.ts);
        // the connection is kept referenced till then (better-sqlite3 closes one collected).
        if (taken.value) return void kept.push(db)
        releaseLock(db)
      })
  )
