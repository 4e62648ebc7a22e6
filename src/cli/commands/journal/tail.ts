/** `svc journal tail`: the last events of the journal, and with `--follow` each new one as it is appended. */
import { existsSync } from "node:fs"
import { dirname } from "node:path"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { Journal } from "../../../app/journal/Journal.js"
import * as JournalReader from "../../../infra/journal/JournalReader.js"
import { storePath, walWithoutStore } from "../../../infra/journal/StoreFile.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { refused, usage } from "../../CliFailure.js"
import { json, printJson, printLines } from "../../output.js"
import { readJson, readLine } from "./eventFormats.js"
import { journalFailure, ReadLayer } from "./readOnlyStore.js"
import { isUnreadable, readRange, readSalvaging, sequenceOf, unreadableText, type Read } from "./unreadable.js"

const lines = Options.integer("lines").pipe(Options.withAlias("n"), Options.withDefault(20), Options.withDescription("how many of the last events to show"))
const follow = Options.boolean("follow").pipe(Options.withAlias("f"), Options.withDescription("keep printing new events as they are appended (with --json: one JSON document per line)"))

/**
 * `{"events": [...]}` of the events after `after` up to `head`, as `printJson` writes it, byte for
 * byte, but page by page: built whole, tens of thousands of decisions held hundreds of megabytes
 * (695 MB for 40,000) before the first byte was written.
 */
const jsonDocumentOf = (journal: Journal["Type"], after: number, head: number, unreadable: Array<number>) =>
  Effect.gen(function* () {
    let from = after
    let written = 0
    let pending: string | undefined
    while (from < head) {
      const page = yield* readSalvaging(journal, from, Math.min(TAIL_PAGE, head - from))
      if (page.length === 0) break
      for (const r of page) {
        if (pending !== undefined) yield* Console.log(`${pending},`)
        else if (written === 0) yield* Console.log('{\n  "events": [')
        pending = JSON.stringify(readJson(r), null, 2).replace(/^/gm, "    ")
        if (isUnreadable(r)) unreadable.push(r.row.sequence)
        written++
      }
      from = sequenceOf(page[page.length - 1]!)
    }
    if (pending === undefined) return yield* printJson({ events: [] })
    yield* Console.log(`${pending}\n  ]\n}`)
  })

/** Events per page of a `tail --json` document. */
const TAIL_PAGE = 500

export const tailCommand = Command.make("tail", { json, lines, follow }, ({ follow, json, lines }) =>
  journalFailure(
    Effect.gen(function* () {
      if (lines < 0) return yield* usage(`-n (--lines) takes how many of the last events to show, 0 or more, not ${lines}`)
      const file = storePath((yield* SvcHome).path)
      // Following a home whose owner has not started yet: it waits for the store, and every event
      // in it is new (it read the empty journal of the missing file for ever, and showed nothing).
      // A home not made yet is waited for too, not made (svc serve makes it, private): on a fresh
      // machine, tail --follow in one terminal and svc serve in another exited 1 at once. A
      // store never written to (a first start that failed) is one not made yet.
      // A -wal with commits and no store beside it is not a store to come: said, as the other readers say it.
      const orphan = walWithoutStore(file)
      if (orphan !== undefined) return yield* refused(orphan)
      const notYet = () => !existsSync(file) || JournalReader.neverWritten(file)
      const fromStart = follow && notYet()
      if (fromStart) {
        if (!existsSync(dirname(file))) yield* Console.error(`note: there is no svc home at ${dirname(file)} (SVC_HOME) yet: waiting for svc serve to start there (Ctrl-C to stop)`)
        while (notYet()) yield* Effect.sleep("500 millis")
      }
      const unreadable: Array<number> = []
      const tail = Effect.gen(function* () {
        const journal = yield* Journal
        const head = fromStart ? 0 : yield* journal.head
        if (json && !follow) return yield* jsonDocumentOf(journal, Math.max(0, head - lines), head, unreadable)
        const print = (rs: ReadonlyArray<Read>) => {
          for (const r of rs) if (isUnreadable(r)) unreadable.push(r.row.sequence)
          return json ? printLines(rs.map((r) => JSON.stringify(readJson(r)))) : printLines(rs.map(readLine))
        }
        // Waited for: every event is new, and comes once, from the first, below (the last N of the
        // journal as it was, empty, were read here from the store as it is now, then again as new).
        if (!fromStart) yield* print(yield* readRange(journal, Math.max(0, head - Math.max(0, lines)), Math.max(0, lines)))
        if (!follow) return
        let after = head
        yield* Effect.gen(function* () {
          const fresh = yield* readRange(journal, after, 10_000)
          if (fresh.length > 0) after = sequenceOf(fresh[fresh.length - 1]!)
          yield* print(fresh)
        }).pipe(Effect.repeat(Schedule.spaced("500 millis")))
      }).pipe(Effect.provide(ReadLayer))
      // The store just made: its tables come a moment after the file.
      yield* fromStart ? tail.pipe(Effect.retry({ while: (e) => e._tag === "JournalError" && e.message.includes("holds no svc journal"), schedule: Schedule.spaced("200 millis") })) : tail
      if (unreadable.length > 0) return yield* refused(unreadableText(unreadable, `shown as stored, with why; every other event is shown whole (svc journal export writes them all)`))
    })
  )
).pipe(Command.withDescription("Print the last events of the journal (--follow keeps printing new ones)"))
