/**
 * A running `svc serve` notices its home taken from under it: `$SVC_HOME` deleted or moved, or
 * its journal or lock file removed or replaced (a restore renamed into place over a running owner, an `rm -rf`
 * of the wrong directory). The open files live on, unlinked: every append would still succeed
 * and be lost at the stop, and a second `svc serve` could start on the same path, its lock file a
 * new one, as a second writer. PostgreSQL checks its `postmaster.pid` every minute for the same
 * reason; here the journal and the lock file are checked every `HOME_CHECK_EVERY`, by identity
 * (device, inode and birth time), and the runtime stops, saying what it found (docs/operations.md,
 * "$SVC_HOME"). A file written into in place (`cp` over it) is the same file: not noticed.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { storePath } from "../journal/StoreFile.js"
import { LOCK_FILE } from "./HomeLock.js"

/** How often the home is checked: two `stat` calls. */
export const HOME_CHECK_EVERY = Duration.seconds(10)

/**
 * A file's identity: device, inode and birth time. The inode alone is not enough: a file
 * removed and another made at once is often given the same inode number (ext4, tmpfs), as when
 * a home is deleted and another svc serve starts there.
 */
export interface FileIdentity {
  readonly dev: bigint
  readonly ino: bigint
  readonly birth: bigint
}

export const fileIdentityOf = (file: string): FileIdentity | NodeJS.ErrnoException => {
  try {
    const s = fs.statSync(file, { bigint: true })
    return { dev: s.dev, ino: s.ino, birth: s.birthtimeNs }
  } catch (e) {
    return e as NodeJS.ErrnoException
  }
}

export const sameFile = (a: FileIdentity, b: FileIdentity): boolean => a.dev === b.dev && a.ino === b.ino && a.birth === b.birth

/** What became of `file` since it was `was`, or undefined while it is still that file. */
const changed = (file: string, was: FileIdentity): string | undefined => {
  const now = fileIdentityOf(file)
  // Only what says the file is gone: a home made unreadable (chmod) still holds the files it has open.
  if (now instanceof Error) return now.code === "ENOENT" || now.code === "ENOTDIR" ? `${file} is no longer there (removed, or $SVC_HOME moved)` : undefined
  return sameFile(now, was) ? undefined : `${file} was replaced by another file`
}

/**
 * Notes what the home's journal and lock file are now; the effect it returns completes, with a
 * sentence, once either is no longer that file, checking every `HOME_CHECK_EVERY`. Fails when
 * they cannot be read at all now (the start has just made both).
 */
export const watchHome = (home: string) =>
  Effect.gen(function* () {
    const files = [storePath(home), nodePath.join(home, LOCK_FILE)]
    const noted = new Map<string, FileIdentity>()
    for (const file of files) {
      const identity = fileIdentityOf(file)
      if (identity instanceof Error) {
        const gone = identity.code === "ENOENT" || identity.code === "ENOTDIR"
        return yield* Effect.fail(gone ? `${file} is no longer there (removed, or $SVC_HOME moved) as svc serve starts for ${home}: put the home back, then start svc serve again` : `${file}: ${identity.message}`)
      }
      noted.set(file, identity)
    }
    const check = Effect.sync(() => files.map((file) => changed(file, noted.get(file)!)).find((what) => what !== undefined))
    const next: Effect.Effect<string> = Effect.sleep(HOME_CHECK_EVERY).pipe(
      Effect.zipRight(check),
      Effect.flatMap((what) => (what === undefined ? next : Effect.succeed(what)))
    )
    return next.pipe(
      Effect.map(
        (what) =>
          `${what} while svc serve ran for ${home}: it stops rather than journal into a file that home no longer holds, beside another svc serve that could start there (put the home back, then start svc serve again)`
      )
    )
  })
