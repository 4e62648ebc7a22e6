/**
 * The store file the journal commands and `svc audit` read: opened read-only, so they work
 * whether the owner runs or not (design.md, CLI contract); a journal failure is a refusal (exit 1).
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as JournalReader from "../../../infra/journal/JournalReader.js"
import * as NodeHashing from "../../../infra/journal/NodeHashing.js"
import { storePath } from "../../../infra/journal/StoreFile.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { refused } from "../../CliFailure.js"

/**
 * The store file under $SVC_HOME, opened read-only. One never written to reads as empty, said on
 * stderr: it is most likely a first start that failed, but a journal emptied by accident reads
 * the same, and must not pass unremarked.
 */
export const ReadLayer = Layer.unwrapEffect(
  Effect.map(SvcHome, (home) => {
    const file = storePath(home.path)
    const reader = JournalReader.layer(file)
    if (!JournalReader.neverWritten(file)) return reader
    return Layer.merge(reader, Layer.effectDiscard(Console.error(`note: ${file} is an empty file (0 bytes; svc serve makes the journal when it first starts in this home): read as an empty journal`)))
  })
).pipe(Layer.merge(NodeHashing.layer))

export const journalFailure = <A, R>(effect: Effect.Effect<A, { readonly message: string; readonly _tag: string }, R>) =>
  effect.pipe(Effect.catchIf((e) => e._tag === "JournalError", (e) => Effect.fail(refused(e.message))))
