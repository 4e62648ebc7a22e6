/**
 * Read-only access to a journal file for the commands that work whether the owner runs or not
 * (`svc journal *`, `svc audit`): a read-only better-sqlite3 connection, no migration, no
 * writer. A missing file in an existing home (an owner that never started there) reads as an
 * empty journal, as does a file nothing was ever written to (`neverWritten`); a missing or
 * unreadable home, a file SQLite cannot read (truncated, not a database), and one that is not a
 * whole svc store (StoreCheck.ts) fail, saying which and why.
 */
import { statSync } from "node:fs"
import { dirname } from "node:path"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { snapshotText } from "./SnapshotText.js"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { Journal, JournalError } from "../../app/journal/Journal.js"
import { prepareOutsideRuns, preparePage, prepareStream, readPage, readStreamOf } from "./EventRows.js"
import { ioError } from "./IoError.js"
import { damaged, openProblem, storeProblem, tablesOf, walAlone } from "./StoreCheck.js"
import { sizeOf, walWithoutStore } from "./StoreFile.js"

const readOnly = () => Effect.fail(new JournalError({ reason: "Closed", message: "this journal is open read-only" }))

const empty = Layer.mergeAll(
  Layer.succeed(Journal, Journal.of({ append: readOnly, read: () => Effect.succeed([]), readStream: () => Effect.succeed([]), readOutsideRuns: () => Effect.succeed([]), head: Effect.succeed(0), count: Effect.succeed(0) })),
  Layer.succeed(Checkpoints, Checkpoints.of({ write: readOnly, latest: Effect.succeed(undefined), snapshot: Effect.succeed(undefined) }))
)

const fromFile = (filename: string) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const unreadable = (cause: unknown) => new JournalError({ reason: "Io", message: openProblem(filename, cause) })
      const copiedAlone = walAlone(filename)
      const db = yield* Effect.acquireRelease(
        Effect.try({ try: () => new Database(filename, { readonly: true, fileMustExist: true }), catch: unreadable }),
        (d) => Effect.sync(() => d.close())
      )
      // Everything SQLite reads before the first page: a damaged file fails here (it crashed the
      // command as an internal error, with a stack trace).
      const prepared = yield* Effect.try({
        try: () => {
          const tables = tablesOf(db)
          const problem = storeProblem(db, filename, tables, copiedAlone)
          if (problem !== undefined) return problem
          return {
            tables,
            page: preparePage(db),
            outsideRuns: prepareOutsideRuns(db),
            stream: prepareStream(db),
            head: db.prepare<[], number>("SELECT COALESCE(MAX(sequence), 0) FROM events").pluck(),
            count: db.prepare<[], number>("SELECT COUNT(*) FROM events").pluck(),
            latest: db.prepare<[], { sequence: number; digest: string; written_at: number }>("SELECT sequence, digest, written_at FROM checkpoints ORDER BY sequence DESC LIMIT 1")
          }
        },
        catch: unreadable
      })
      if (typeof prepared === "string") return yield* new JournalError({ reason: "Io", message: prepared })
      const { count, head, latest, outsideRuns, page, stream, tables } = prepared
      // A page found damaged as it is read (SQLite checks each page when it reads it): said with the file's name.
      const named = <A>(effect: Effect.Effect<A, JournalError>) =>
        Effect.mapError(effect, (e) => (e.reason === "Io" && !e.message.includes(filename) ? new JournalError({ reason: "Io", message: `cannot read ${filename}: ${e.message}${damaged(e.message)}` }) : e))
      const journal = Journal.of({
        append: readOnly,
        read: (after, limit) => named(readPage(page, after, limit)),
        readStream: (name) => named(readStreamOf(stream, name)),
        readOutsideRuns: (after, limit) => named(readPage(outsideRuns, after, limit)),
        head: named(Effect.try({ try: () => head.get() ?? 0, catch: ioError("reading the journal head") })),
        count: named(Effect.try({ try: () => count.get() ?? 0, catch: ioError("counting the journal's events") }))
      })
      const lastSnapshot = tables.has("snapshots")
        ? db.prepare<[], { sequence: number; digest: string; state: unknown }>("SELECT sequence, digest, state FROM snapshots ORDER BY sequence DESC LIMIT 1")
        : undefined
      const checkpoints = Checkpoints.of({
        write: readOnly,
        // The read-only commands fold the whole journal (checking it is what they are for), never
        // from the snapshot; replay reads it for the settings the owner folded with.
        snapshot: Effect.try({
          try: () => {
            const row = lastSnapshot?.get()
            return row === undefined ? undefined : { sequence: row.sequence, digest: row.digest, state: snapshotText(row.state) }
          },
          catch: ioError("reading the snapshot")
        }),
        latest: Effect.try({
          try: () => {
            const row = latest.get()
            return row === undefined ? undefined : { sequence: row.sequence, digest: row.digest, writtenAt: row.written_at }
          },
          catch: ioError("reading checkpoints")
        })
      })
      return yield* Layer.build(Layer.mergeAll(Layer.succeed(Journal, journal), Layer.succeed(Checkpoints, checkpoints)))
    })
  )

/**
 * Whether `filename` is there with 0 bytes and no WAL content: a store nothing was ever written
 * to, as a first `svc serve` that stopped before making its tables leaves it (its port in use).
 * SQLite writes a store's first page before anything else (its WAL's too), so a journal made
 * is never 0 bytes; read as a damaged store, such a home failed every read-only command.
 */
export const neverWritten = (filename: string): boolean => sizeOf(filename) === 0 && (sizeOf(`${filename}-wal`) ?? 0) === 0

/**
 * Why `filename` cannot be read, or "none yet" when it is simply not there yet (an owner that
 * never started in that home) or was never written to, or undefined when it is there. A home that
 * does not exist or cannot be read is said so: read as empty, a mistyped SVC_HOME looked like an
 * empty journal.
 */
const absence = (filename: string): string | undefined => {
  const code = (path: string) => {
    try {
      statSync(path)
      return undefined
    } catch (e) {
      return String((e as NodeJS.ErrnoException).code ?? e)
    }
  }
  // Its -wal without it (or with it empty): the journal's last commits, which opening it would discard.
  const orphan = walWithoutStore(filename)
  if (orphan !== undefined) return orphan
  const file = code(filename)
  if (file === undefined) return neverWritten(filename) ? "none yet" : undefined
  if (file !== "ENOENT") return `cannot read ${filename} (${file})`
  const home = dirname(filename)
  const dir = code(home)
  if (dir === undefined) return "none yet"
  return dir === "ENOENT" ? `there is no svc home at ${home} (SVC_HOME): no journal to read` : `cannot read ${home} (${dir})`
}

export const layer = (filename: string) => {
  const why = absence(filename)
  return why === undefined ? fromFile(filename) : why === "none yet" ? empty : Layer.fail(new JournalError({ reason: "Io", message: why }))
}
