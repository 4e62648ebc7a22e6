/** `svc audit`: the audit rows of invites, joins, rotations, revocations, takeovers and certificate changes, read from the store file. */
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Journal } from "../../../app/journal/Journal.js"
import { auditRowOf, type AuditRow } from "../../../domain/workers/Audit.js"
import { refused } from "../../CliFailure.js"
import { json, printJson, printLines, table } from "../../output.js"
import { journalFailure, ReadLayer } from "./readOnlyStore.js"
import { isUnreadable, readSalvaging, sequenceOf, unreadableText } from "./unreadable.js"

/** Events per page of `svc audit`'s reading. */
const AUDIT_PAGE = 5_000

/**
 * The audit rows, each made from its own event (Audit.ts, `auditRowOf`), as the owner's projection
 * makes them: from the workers' and invites' streams only, so that its time does not grow with
 * the runs (it folded the whole journal: 1 s at 23,000 events, minutes at a million runs).
 */
const auditRows = Effect.gen(function* () {
  const journal = yield* Journal
  const rows: Array<AuditRow> = []
  // A damaged row of a worker or an invite costs its own row only (it cost them all).
  const unreadable: Array<number> = []
  for (let after = 0; ; ) {
    const page = yield* readSalvaging(journal, after, AUDIT_PAGE, journal.readOutsideRuns)
    if (page.length === 0) return { rows, unreadable }
    for (const r of page) {
      if (isUnreadable(r)) unreadable.push(r.row.sequence)
      else {
        const row = auditRowOf(r)
        if (row !== undefined) rows.push(row)
      }
    }
    after = sequenceOf(page[page.length - 1]!)
  }
})

export const auditCommand = Command.make("audit", { json }, ({ json }) =>
  journalFailure(
    Effect.gen(function* () {
      const { rows, unreadable } = yield* auditRows
      if (json) yield* printJson({ rows: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })) })
      else if (rows.length === 0 && unreadable.length === 0) yield* Console.log("no audit rows yet: no worker has been invited")
      else {
        yield* printLines(
          table(
            ["TIME", "KIND", "WORKER", "ACTOR", "DETAIL"],
            rows.map((r) => [new Date(r.at).toISOString(), r.kind, r.workerId ?? "-", r.actor, r.detail])
          )
        )
      }
      if (unreadable.length > 0) {
        return yield* refused(unreadableText(unreadable, "the audit rows of every other event are shown; svc journal export writes those events as stored, with why"))
      }
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("Audit rows for invites, joins, rotations, revocations, takeovers and the owner's certificate changes, with time, worker and actor"))
