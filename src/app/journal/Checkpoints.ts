/**
 * Port: projection checkpoints. The owner writes one (the last sequence folded and a digest of
 * its projections) at a clean stop and periodically; `svc journal replay` folds the journal to
 * that sequence and reports a divergence when its digest differs. With it, the owner stores the
 * projections themselves (their canonical JSON, the text the digest is of): the snapshot it
 * starts from next time, folding only the journal after it (docs/journal.md).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { JournalError } from "./Journal.js"

export interface Checkpoint {
  readonly sequence: number
  readonly digest: string
  readonly writtenAt: number
}

/** The projections at `sequence` as canonical JSON (`state`), and the digest of that text. */
export interface Snapshot {
  readonly sequence: number
  readonly digest: string
  readonly state: string
}

export class Checkpoints extends Context.Tag("svc/Checkpoints")<
  Checkpoints,
  {
    /** With `state` (the canonical JSON the digest is of), the snapshot too, in place of the last one. */
    readonly write: (checkpoint: Checkpoint, state?: string) => Effect.Effect<void, JournalError>
    readonly latest: Effect.Effect<Checkpoint | undefined, JournalError>
    /** The last snapshot written, if any. */
    readonly snapshot: Effect.Effect<Snapshot | undefined, JournalError>
  }
>() {}
