/** `svc journal history RUN`: a run's story from the journal, each placement decision re-run through the current code. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import { Checkpoints } from "../../../app/journal/Checkpoints.js"
import { Journal } from "../../../app/journal/Journal.js"
import type { SequenceGap } from "../../../app/journal/Replay.js"
import { hostWords, PLACEMENT_RULES } from "../../../domain/placement/Placement.js"
import { historyOf, type HistoryEntry } from "../../../domain/runs/History.js"
import { isRunId } from "../../../domain/runs/Runs.js"
import { exitQuietly, refused, usage } from "../../CliFailure.js"
import { json, printJson, printLines } from "../../output.js"
import { encodeEvent } from "./eventFormats.js"
import { journalFailure, ReadLayer } from "./readOnlyStore.js"

/** `svc journal history RUN` as text: one line per event, a decision's verdicts, selection and notes under it. */
export const historyLines = (runId: string, entries: ReadonlyArray<HistoryEntry>): ReadonlyArray<string> => {
  const decisions = entries.filter((e) => e.decision !== undefined)
  const diverged = decisions.filter((e) => e.decision!.reproduced === false).length
  const lines = [
    `run ${runId}: ${entries.length} event${entries.length === 1 ? "" : "s"} in the journal; ${decisions.length} placement decision${decisions.length === 1 ? "" : "s"}, re-run through the current placement code: ${
      diverged === 0 ? "every one reproduced" : `${diverged} DIVERGE${diverged === 1 ? "S" : ""}`
    }`
  ]
  for (const e of entries) {
    const d = e.decision
    lines.push(`#${e.sequence}  ${new Date(e.at).toISOString()}  ${e.text}${d === undefined ? "" : d.reproduced ? " (reproduced)" : " (DIVERGES)"}`)
    if (d === undefined) continue
    for (const v of d.verdicts) lines.push(`    ${hostWords(v.candidate, v.name)}${v.candidate === "owner" ? "" : ` (${v.candidate})`}: ${v.verdict}`)
    lines.push(`    selection: ${d.selection}`)
    // Said when it is not the current one: the decision is judged by the rules it was made by.
    if (d.rules !== PLACEMENT_RULES) {
      lines.push(`    rules: revision ${d.rules} of the placement rules (this svc's: ${PLACEMENT_RULES})${d.rules < PLACEMENT_RULES ? ", and judged by it" : ", newer than this svc knows"}`)
    }
    for (const note of d.notes) lines.push(`    note: ${note}`)
    for (const difference of d.differences) lines.push(`    differs now: ${difference}`)
  }
  return lines
}

export const historyCommand = Command.make("history", { run: Args.text({ name: "RUN" }).pipe(Args.withDescription("the run id")), json }, ({ json, run }) =>
  journalFailure(
    Effect.gen(function* () {
      if (!isRunId(run)) return yield* usage(`${JSON.stringify(run)} is not a run id (r and letters or digits, as svc run prints)`)
      const journal = yield* Journal
      const envelopes = yield* journal.readStream(`run-${run}`)
      // The journal's own last events deleted leave no gap in its sequences: its latest checkpoint
      // then saw events it no longer holds (the run's last ones, or its whole story).
      const head = yield* journal.head
      const checkpoint = yield* (yield* Checkpoints).latest
      const cutShort = checkpoint !== undefined && checkpoint.sequence > head ? checkpoint.sequence : undefined
      const pastEnd = cutShort === undefined ? "" : `its latest checkpoint is at sequence ${cutShort.toLocaleString("en-US")}, past its last event ${head.toLocaleString("en-US")} (its last events were deleted, or it is a copy made without its -wal file)`
      if (envelopes.length === 0) return yield* refused(`the journal holds no run ${run}${cutShort === undefined ? "" : `; it is not whole, though: ${pastEnd}, and the run may have been among them`}`)
      const entries = historyOf(envelopes)
      // A run's stream is versioned 1, 2, 3, ...: a version missing is an event deleted from its story.
      const missing: Array<SequenceGap> = []
      envelopes.forEach((e, i) => {
        const expected = i === 0 ? 1 : envelopes[i - 1]!.streamVersion + 1
        if (e.streamVersion !== expected) missing.push({ from: expected, to: e.streamVersion - 1 })
      })
      // Its last events deleted leave its versions whole: the journal's sequences then have a gap (or the checkpoint says so, above).
      const held = yield* journal.count
      const problems = [
        ...(missing.length === 0
          ? []
          : [`the run's stream is not whole: ${missing.map((g) => (g.from === g.to ? `its event ${g.from} is missing` : `its events ${g.from}-${g.to} are missing`)).join(", ")} (stream versions), deleted from the journal`]),
        ...(held < head ? [`the journal is not whole: ${(head - held).toLocaleString("en-US")} of its ${head.toLocaleString("en-US")} events ${head - held === 1 ? "is" : "are"} missing (rows were deleted from it; svc journal replay names them), so this run's story may lack some`] : []),
        ...(cutShort !== undefined ? [`the journal is not whole: ${pastEnd}, so this run's story may lack some`] : [])
      ]
      const missingText = problems.length === 0 ? undefined : problems.join("; ")
      // Each event's own fields beside its sentence (a host's id, an exit code, a fence: scripts had
      // only the prose); a decision's are in `decision`, as it is re-run.
      const bySequence = new Map(envelopes.map((e) => [e.sequence, e] as const))
      const fieldsOf = (sequence: number) => {
        const envelope = bySequence.get(sequence)
        return envelope === undefined || envelope.event._tag === "PlacementDecided" ? {} : { event: encodeEvent(envelope.event) }
      }
      if (json) {
        yield* printJson({
          run,
          events: entries.map((e) => ({ ...e, at: new Date(e.at).toISOString(), ...fieldsOf(e.sequence) })),
          ...(missing.length > 0 ? { missingStreamVersions: missing } : {}),
          ...(held < head ? { missingEvents: head - held } : {}),
          ...(cutShort !== undefined ? { checkpointPastEnd: cutShort } : {})
        })
      }
      else yield* printLines(historyLines(run, entries))
      if (missingText !== undefined) return yield* refused(missingText)
      // As replay --audit: a decision the current code decides otherwise is a finding.
      if (entries.some((e) => e.decision?.reproduced === false)) return yield* exitQuietly(1)
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("A run's story from the journal: every event, each placement decision with every candidate's verdict, re-run through the current code"))
