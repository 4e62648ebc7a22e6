/**
 * What `svc serve` does with `$SVC_HOME` before it opens anything of it: make it (0700), refuse
 * one it must not run in (every user may write to it, or another user owns it; it cannot be
 * written; its admin socket's path is too long), claim it (one runtime per home: HomeLock.ts) and make its journal owner-only.
 * Each refusal is one sentence naming the home (docs/operations.md, "$SVC_HOME").
 */
import { constants as fsConstants } from "node:fs"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { runtimeAnswering, socketPathProblem } from "../http/AdminApi.js"
import { storePath, walWithoutStore } from "../journal/StoreFile.js"
import { currentUid, modeText } from "../PrivateFiles.js"
import { holdHome, LOCK_FILE } from "./HomeLock.js"
import { makeDirectory } from "../MakeDirectory.js"

export class HomeProblem extends Data.TaggedError("HomeProblem")<{ readonly message: string }> {}

const attempt = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (e) => new HomeProblem({ message: `${what}: ${e instanceof Error ? e.message : String(e)}` }) })

/** `file` (created when missing) and its `-wal` and `-shm`, readable and writable by the owner only. */
const privateFiles = async (file: string) => {
  await (await fs.open(file, "a", 0o600)).close()
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    const mode = await fs.stat(path).then((s) => s.mode & 0o777, () => undefined)
    if (mode !== undefined && (mode & 0o077) !== 0) await fs.chmod(path, 0o600)
  }
}

/**
 * Why `home` (its stat) must not be used by user `uid`, or undefined. A home others may write to
 * is anyone's runtime: they could replace its admin socket (and read what the CLI sends it), its
 * journal, a link's credential or a job's secret; so is a home another user owns. Its special
 * bits are said: a sticky /tmp-like home (1777) was said to be 0777.
 */
export const unsafeHomeProblem = (home: string, stat: { readonly mode: number; readonly uid: number }, uid: number | undefined): string | undefined => {
  const mode = stat.mode & 0o7777
  if ((mode & 0o002) !== 0) {
    return `${home} (SVC_HOME) is writable by every user (mode ${modeText(mode)}), who could replace its admin socket, journal or secrets: chmod 700 ${home}`
  }
  if (uid !== undefined && stat.uid !== uid) {
    return `${home} (SVC_HOME) belongs to uid ${stat.uid}, not to this user (uid ${uid}), who could replace its admin socket, journal or secrets: run svc as the user it belongs to, or use a home of your own`
  }
  return undefined
}

/** Makes, checks and claims `home`; the claim (the lock) is held until the scope closes. */
export const claimHome = (home: string, taken?: { readonly value: boolean }) =>
  Effect.gen(function* () {
    // Before anything opens: a home whose admin socket the system cannot name is refused.
    const tooLong = socketPathProblem(home)
    if (tooLong !== null) return yield* new HomeProblem({ message: tooLong })
    yield* attempt("creating $SVC_HOME", () => makeDirectory(home, 0o700))
    const unsafe = unsafeHomeProblem(home, yield* attempt("reading $SVC_HOME", () => fs.stat(home)), currentUid())
    if (unsafe !== undefined) return yield* new HomeProblem({ message: unsafe })
    // A home it cannot write to is said so (on a read-only file system, each later step failed
    // with a bare ENOENT of the first directory it tried to make there).
    const unwritable = yield* Effect.promise(() => fs.access(home, fsConstants.W_OK).then(() => undefined, (e: NodeJS.ErrnoException) => e.code ?? String(e)))
    if (unwritable !== undefined) {
      return yield* new HomeProblem({
        message: `${home} (SVC_HOME) cannot be written (${unwritable === "EROFS" ? "a read-only file system" : unwritable}): svc serve keeps its journal, certificate and admin socket there`
      })
    }
    // One runtime per $SVC_HOME: a second one would be a second writer of the same journal.
    // The lock decides (HomeLock.ts), before anything of the home is touched; the socket is
    // asked first only to say "its admin socket answers" when that is how it is seen.
    if (yield* attempt("checking for a running runtime", () => runtimeAnswering(home))) {
      return yield* new HomeProblem({ message: `svc serve is already running for ${home} (its admin socket answers)` })
    }
    const lock = nodePath.join(home, LOCK_FILE)
    yield* holdHome(home, taken).pipe(
      Effect.mapError((p) =>
        p.busy
          ? new HomeProblem({ message: `svc serve is already running for ${home} (another process holds ${lock}; it is starting or stopping)` })
          : new HomeProblem({ message: `locking ${lock}: ${p.message}` })
      )
    )
    // A -wal with commits beside a missing or empty store: SQLite would discard it as it opens the
    // store, and the owner would start a new journal over the last commits of the old one.
    const orphan = walWithoutStore(storePath(home))
    if (orphan !== undefined) return yield* new HomeProblem({ message: `${orphan}; svc serve does not start a new journal over it (remove the -wal to start one)` })
    // The journal holds every run's input and result and the credentials' hashes: owner-only,
    // whatever mode the home was made with (a home made beforehand, 0755, left it readable by
    // every local user). SQLite gives -wal and -shm the mode of the file they belong to.
    yield* attempt("making the journal private", () => privateFiles(storePath(home)))
  })
