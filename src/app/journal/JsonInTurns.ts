/**
 * `JSON.stringify(value)` for a large value on the owner's thread, without holding it: the text
 * is made in pieces (domain/journal/JsonPieces.ts) and the event loop gets a turn after every
 * 256 KiB, so the worker route's calls and the journal's commits go on meanwhile. For values
 * that do not change while they are written out (the projections are immutable values).
 */
import * as Effect from "effect/Effect"
import { jsonPieces } from "../../domain/journal/JsonPieces.js"

/** Elements of a long array (runs, workers, audit rows) written in one piece. */
const SLICE = 64
/** Text written between two turns given back to the event loop. */
const TURN = 256 * 1024

/** A turn of the event loop for whatever else waits. */
const nextTurn = Effect.async<void>((resume) => {
  const t = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(t))
})

/** The text, and `each` told every piece of it in order (to hash it as it is made, say). */
export const jsonInTurns = (value: unknown, each?: (piece: string) => void): Effect.Effect<string> =>
  Effect.gen(function* () {
    const pieces: Array<string> = []
    let sinceTurn = 0
    for (const piece of jsonPieces(value, SLICE)) {
      pieces.push(piece)
      each?.(piece)
      sinceTurn += piece.length
      if (sinceTurn >= TURN) {
        sinceTurn = 0
        yield* nextTurn
      }
    }
    return pieces.join("")
  })
