/**
 * The Checkpoints port on the store, through @effect/sql: a checkpoint and its snapshot are
 * written in one transaction, so a snapshot never stands without the checkpoint it belongs to.
 * Apart from the journal's writer, which appends through its own connection.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { ioError } from "./IoError.js"
import { snapshotText, storedSnapshot } from "./SnapshotText.js"

export const makeCheckpoints = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return Checkpoints.of({
    write: (c, state) =>
      // Compressed before the transaction, off the owner's thread (SnapshotText.ts).
      Effect.flatMap(state === undefined ? Effect.succeed(undefined) : Effect.tryPromise({ try: () => storedSnapshot(state), catch: ioError("compressing a snapshot") }), (stored) =>
        Effect.gen(function* () {
          yield* sql`INSERT OR REPLACE INTO checkpoints (sequence, digest, written_at) VALUES (${c.sequence}, ${c.digest}, ${c.writtenAt})`
          if (stored === undefined) return
          yield* sql`DELETE FROM snapshots`
          yield* sql`INSERT INTO snapshots (sequence, digest, state) VALUES (${c.sequence}, ${c.digest}, ${stored})`
        }).pipe(sql.withTransaction, Effect.asVoid, Effect.mapError(ioError("writing a checkpoint")))
      ),
    snapshot: sql<{ sequence: number; digest: string; state: unknown }>`SELECT sequence, digest, state FROM snapshots ORDER BY sequence DESC LIMIT 1`.pipe(
      Effect.mapError(ioError("reading the snapshot")),
      Effect.flatMap((rows) =>
        Effect.try({
          try: () => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, state: snapshotText(rows[0].state) }),
          catch: ioError("reading the snapshot")
        })
      )
    ),
    latest: sql<{ sequence: number; digest: string; written_at: number }>`
      SELECT sequence, digest, written_at FROM checkpoints ORDER BY sequence DESC LIMIT 1`.pipe(
      Effect.map((rows) => (rows[0] === undefined ? undefined : { sequence: rows[0].sequence, digest: rows[0].digest, writtenAt: rows[0].written_at })),
      Effect.mapError(ioError("reading checkpoints"))
    )
  })
})
