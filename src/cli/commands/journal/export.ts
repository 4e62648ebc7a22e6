/** `svc journal export`: every event as JSON lines, damaged rows as stored and rows deleted from the journal said at the end. */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import { Journal } from "../../../app/journal/Journal.js"
import { gapText, type SequenceGap } from "../../../app/journal/Replay.js"
import { refused } from "../../CliFailure.js"
import { printLines } from "../../output.js"
import { readJson } from "./eventFormats.js"
import { journalFailure, ReadLayer } from "./readOnlyStore.js"
import { isUnreadable, readSalvaging, sequenceOf, unreadableText } from "./unreadable.js"

export const exportCommand = Command.make("export", {}, () =>
  journalFailure(
    Effect.gen(function* () {
      const journal = yield* Journal
      const unreadable: Array<number> = []
      const gaps: Array<SequenceGap> = []
      let after = 0
      // Sequences run without gaps (journal.md): a jump is rows deleted, said at the end.
      const noteGap = (sequence: number) => {
        if (sequence !== after + 1) gaps.push({ from: after + 1, to: sequence - 1 })
      }
      for (;;) {
        const page = yield* readSalvaging(journal, after, 10_000)
        if (page.length === 0) break
        yield* printLines(page.map((r) => JSON.stringify(readJson(r))))
        for (const r of page) {
          if (isUnreadable(r)) unreadable.push(r.row.sequence)
          noteGap(sequenceOf(r))
          after = sequenceOf(r)
        }
      }
      const problems = [
        ...(unreadable.length > 0
          ? [unreadableText(unreadable, `exported as stored, with "unreadable" saying why; every other event is exported whole`)]
          : []),
        ...(gaps.length > 0 ? [`the journal is not whole: ${gaps.map(gapText).join(", ")} (rows were deleted from it); every event it holds is exported`] : [])
      ]
      if (problems.length > 0) return yield* refused(problems.join("; and "))
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("Write every event as JSON lines (one envelope per line) to stdout"))
