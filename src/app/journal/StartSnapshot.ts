/**
 * Where the owner's projections start (docs/journal.md, "Start-up from a snapshot"): from the
 * snapshot its last checkpoint stored, when that snapshot is whole and of the current form, or
 * else from the empty state. Either way the journal after it is folded on top, so a snapshot
 * only saves folding what it already holds.
 *
 * A snapshot is used only if its text has its digest, it is of this svc's form of the
 * projections, it is not past the journal's end, it keeps settled runs as the empty state does,
 * and the state made from it gives back the very same text. Anything else is a reason, said
 * once, and the whole journal is folded instead: a snapshot never changes what the owner holds,
 * only how soon it holds it.
 */
import * as Effect from "effect/Effect"
import { canonicalState, type OwnerState } from "../../domain/journal/OwnerState.js"
import { stateFromCanonical, type CanonicalState } from "../../domain/journal/Snapshot.js"
import { Checkpoints, type Snapshot } from "./Checkpoints.js"
import { Hashing } from "./Hashing.js"
import { Journal } from "./Journal.js"
import { digestOfText, PROJECTION_FORM } from "./Replay.js"

export type Start = { readonly state: OwnerState; readonly snapshot: number | null; readonly note: string | null }

const restore = (snapshot: Snapshot, from: OwnerState, head: number, sha256Hex: (text: string) => string): OwnerState | string => {
  if (!snapshot.digest.startsWith(`${PROJECTION_FORM}:`)) return `the snapshot at sequence ${snapshot.sequence} is of an earlier form of the projections`
  if (snapshot.sequence > head) return `the snapshot is at sequence ${snapshot.sequence}, past the journal's end (${head})`
  if (digestOfText({ sha256Hex }, snapshot.state) !== snapshot.digest) return `the snapshot at sequence ${snapshot.sequence} does not match its digest`
  let state: OwnerState
  try {
    state = stateFromCanonical(JSON.parse(snapshot.state) as CanonicalState)
    if (JSON.stringify(canonicalState(state)) !== snapshot.state) return `the snapshot at sequence ${snapshot.sequence} does not read back as it was written`
  } catch (e) {
    return `the snapshot at sequence ${snapshot.sequence} cannot be read: ${e instanceof Error ? e.message : String(e)}`
  }
  if (state.sequence !== snapshot.sequence) return `the snapshot says sequence ${snapshot.sequence} but holds ${state.sequence}`
  if (state.runs.retain !== from.runs.retain) return `the snapshot keeps settled runs in generations of ${state.runs.retain}, not ${from.runs.retain}`
  return state
}

/** The state to fold the journal on top of: the last snapshot's, or `from` with the reason. */
export const startState = (from: OwnerState): Effect.Effect<Start, never, Checkpoints | Journal | Hashing> =>
  Effect.gen(function* () {
    const snapshot = yield* Effect.either((yield* Checkpoints).snapshot)
    if (snapshot._tag === "Left") return { state: from, snapshot: null, note: `the snapshot could not be read: ${snapshot.left.message}` }
    if (snapshot.right === undefined) return { state: from, snapshot: null, note: null }
    const head = yield* Effect.either((yield* Journal).head)
    if (head._tag === "Left") return { state: from, snapshot: null, note: `the journal's end could not be read: ${head.left.message}` }
    const hashing = yield* Hashing
    const restored = restore(snapshot.right, from, head.right, hashing.sha256Hex)
    return typeof restored === "string" ? { state: from, snapshot: null, note: restored } : { state: restored, snapshot: restored.sequence, note: null }
  })
