import * as Data from "effect/Data"

/** Why the owner refused a run operation (submit, list, show, stop, wait, release): a code and a sentence. */
export class RunRefused extends Data.TaggedError("RunRefused")<{ readonly code: string; readonly message: string }> {}
