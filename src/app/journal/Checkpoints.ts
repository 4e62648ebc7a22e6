/**
 * Port: projection checkpoints. The owner writes one (the last sequence folded and a digest of
 * its projections) at a clean stop and periodically; `svc journal replay` folds the journal to
 * that sequence and reports a divergence when its digest differs.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { JournalError } from "./Journal.js"

export interface Checkpoint {
  readonly sequence: number
  readonly digest: string
  readonly writtenAt: number
}

export class Checkpoints extends Context.Tag("svc/Checkpoints")<
  Checkpoints,
  {
    readonly write: (checkpoint: Checkpoint) => Effect.Effect<void, JournalError>
    readonly latest: Effect.Effect<Checkpoint | undefined, JournalError>
  }
>() {}
