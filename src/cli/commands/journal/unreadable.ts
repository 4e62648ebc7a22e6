/**
 * An event that cannot be read, and reading the journal past one: a damaged row is given as
 * stored, with why, in place of the events it would otherwise cost.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Journal, JournalError, StoredRowText } from "../../../app/journal/Journal.js"
import type { Envelope } from "../../../domain/journal/Events.js"

/**
 * An event that cannot be read is still shown: its row as stored (the payload as its text), with
 * why it cannot be read. An export is what an auditor keeps, a tail what an operator reads; one
 * damaged row must not cost every other event.
 */
export interface Unreadable {
  readonly unreadable: JournalError
  readonly row: StoredRowText
}
export type Read = Envelope | Unreadable
export const isUnreadable = (r: Read): r is Unreadable => "unreadable" in r
export const sequenceOf = (r: Read) => (isUnreadable(r) ? r.row.sequence : r.sequence)

/**
 * Up to `limit` events after `after`, as `journal.read` (or `reader`, `readOutsideRuns` say); a
 * row that cannot be read ends the page, given as stored (the events before it read one at a
 * time: the page failed as a whole).
 */
export const readSalvaging = (journal: Journal["Type"], after: number, limit: number, reader: (after: number, limit: number) => Effect.Effect<ReadonlyArray<Envelope>, JournalError> = journal.read) =>
  Effect.gen(function* () {
    const page = yield* Effect.either(reader(after, limit))
    if (Either.isRight(page)) return page.right as ReadonlyArray<Read>
    const e = page.left
    if (e.reason !== "Corrupt" || e.row === undefined) return yield* e
    const read: Array<Read> = []
    for (let from = after; ; ) {
      const one = yield* Effect.either(reader(from, 1))
      if (Either.isLeft(one)) {
        if (one.left.reason !== "Corrupt") return yield* one.left
        break
      }
      if (one.right.length === 0) break
      read.push(one.right[0]!)
      from = one.right[0]!.sequence
    }
    read.push({ unreadable: e, row: e.row })
    return read as ReadonlyArray<Read>
  })

/** `count` events after `after` (fewer at the journal's end), damaged rows among them as stored. */
export const readRange = (journal: Journal["Type"], after: number, count: number) =>
  Effect.gen(function* () {
    const read: Array<Read> = []
    for (let from = after; read.length < count; ) {
      const page = yield* readSalvaging(journal, from, count - read.length)
      if (page.length === 0) break
      read.push(...page)
      from = sequenceOf(page[page.length - 1]!)
    }
    return read
  })

/** What a reader says at its end of the rows it could not read (exit 1). */
export const unreadableText = (sequences: ReadonlyArray<number>, done: string) =>
  `${sequences.length === 1 ? "1 event" : `${sequences.length} events`} could not be read (sequence ${sequences.join(", ")}): ${done}`
