/**
 * The store file the journal commands and `svc audit` read: opened read-only, so they work
 * whether the owner runs or not (design.md, CLI contract); a journal failure is a refusal (exit 1).
 */
import { statSync } from "node:fs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as JournalReader from "../../../infra/journal/JournalReader.js"
import * as NodeHashing from "../../../infra/journal/NodeHashing.js"
import { storePath } from "../../../infra/journal/StoreFile.js"
import { modeText } from "../../../infra/PrivateFiles.js"
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
    const notes = [
      ...(JournalReader.neverWritten(file) ? [`note: ${file} is an empty file (0 bytes; svc serve makes the journal when it first starts in this home): read as an empty journal`] : []),
      ...[worldWritable(home.path)].flatMap((problem) => (problem === undefined ? [] : [`note: ${problem}; it is read as it is`]))
    ]
    const reader = JournalReader.layer(file)
    return notes.length === 0 ? reader : Layer.merge(reader, Layer.effectDiscard(Effect.forEach(notes, (note) => Console.error(note), { discard: true })))
  })
).pipe(Layer.merge(NodeHashing.layer))

/**
 * Why a reader should know that every user may write to `home`, or undefined: svc serve refuses
 * such a home; a reader (an auditor's replay) reads it, saying that anyone could have replaced
 * its journal.
 */
const worldWritable = (home: string): string | undefined => {
  let mode: number
  try {
    mode = statSync(home).mode & 0o7777
  } catch {
    return undefined
  }
  return (mode & 0o002) === 0 ? undefined : `${home} (SVC_HOME) is writable by every user (mode ${modeText(mode)}), who could have replaced its journal`
}

export const journalFailure = <A, R>(effect: Effect.Effect<A, { readonly message: string; readonly _tag: string }, R>) =>
  effect.pipe(Effect.catchIf((e) => e._tag === "JournalError", (e) => Effect.fail(refused(e.message))))
