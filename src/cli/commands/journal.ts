/**
 * `svc journal replay|tail|export|history` and `svc audit`: read-only over the store file, so they work
 * whether the owner runs or not (design.md, CLI contract).
 */
import { existsSync } from "node:fs"
import { dirname } from "node:path"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { Journal, type JournalError, type StoredRowText } from "../../app/journal/Journal.js"
import { auditPlacements, gapText, replay, type LiveOwnerState, type SequenceGap } from "../../app/journal/Replay.js"
import { parseRetainedRuns, RETAINED_RUNS_VARIABLE } from "../../app/runs/Retention.js"
import { initialStateRetaining } from "../../domain/journal/OwnerState.js"
import { explain, hostWords } from "../../domain/placement/Placement.js"
import { historyOf, type HistoryEntry } from "../../domain/runs/History.js"
import { auditRowOf, type AuditRow } from "../../domain/workers/Audit.js"
import { isRunId } from "../../domain/runs/Runs.js"
import type { CanonicalState } from "../../domain/journal/Snapshot.js"
import { runtimeEnv } from "../../infra/SvcConfig.js"
import { adminCall } from "../../infra/http/AdminApi.js"
import { Event, type Envelope, type PlacementDecided } from "../../domain/journal/Events.js"
import * as JournalReader from "../../infra/journal/JournalReader.js"
import * as NodeHashing from "../../infra/journal/NodeHashing.js"
import { storePath } from "../../infra/journal/StoreFile.js"
import { SvcHome } from "../../infra/SvcHome.js"
import { ANSWER_WITHIN, slowNotice } from "../admin.js"
import { exitQuietly, refused, usage } from "../CliFailure.js"
import { printJson, printLines, table } from "../output.js"

const json = Options.boolean("json").pipe(Options.withDescription("print one JSON document on stdout"))

/**
 * The store file under $SVC_HOME, opened read-only. One never written to reads as empty, said on
 * stderr: it is most likely a first start that failed, but a journal emptied by accident reads
 * the same, and must not pass unremarked.
 */
const ReadLayer = Layer.unwrapEffect(
  Effect.map(SvcHome, (home) => {
    const file = storePath(home.path)
    const reader = JournalReader.layer(file)
    if (!JournalReader.neverWritten(file)) return reader
    return Layer.merge(reader, Layer.effectDiscard(Console.error(`note: ${file} is an empty file (0 bytes; svc serve makes the journal when it first starts in this home): read as an empty journal`)))
  })
).pipe(Layer.merge(NodeHashing.layer))

const encodeEvent = Schema.encodeSync(Event)
const envelopeJson = (e: Envelope) => ({
  sequence: e.sequence,
  stream: e.stream,
  streamVersion: e.streamVersion,
  type: e.type,
  schemaVersion: e.schemaVersion,
  recordedAt: new Date(e.recordedAt).toISOString(),
  event: encodeEvent(e.event)
})
/**
 * A placement decision read as `runs show` explains it, at most three excluded hosts named: its
 * every input (activity, each candidate as seen, quotas) made lines of thousands of characters.
 * `--json` and `svc journal export` keep all of it.
 */
const placementText = (d: PlacementDecided): string =>
  `${d.runId}${d.attempt === null ? "" : ` attempt ${d.attempt}`}: ${explain(d, 3)} (${d.candidates.length} candidate${d.candidates.length === 1 ? "" : "s"}; every input: --json)`

const envelopeLine = (e: Envelope) => {
  const head = `${String(e.sequence).padStart(8)}  ${new Date(e.recordedAt).toISOString()}  ${e.stream}#${e.streamVersion}  ${e.type}`
  if (e.event._tag === "PlacementDecided") return `${head}  ${placementText(e.event)}`
  const { _tag, ...fields } = encodeEvent(e.event) as { _tag: string } & Record<string, unknown>
  return `${head}  ${JSON.stringify(fields)}`
}

const journalFailure = <A, R>(effect: Effect.Effect<A, { readonly message: string; readonly _tag: string }, R>) =>
  effect.pipe(Effect.catchIf((e) => e._tag === "JournalError", (e) => Effect.fail(refused(e.message))))

const audit = Options.boolean("audit").pipe(Options.withDescription("also re-run every recorded placement decision from its recorded inputs and report each as reproduced or diverged"))

/** Where replay took the number of settled runs it kept: svc serve reads the environment, then svc.yaml. */
export type RetainedFrom = "owner" | "environment" | "svc.yaml" | "default"

const runsText = (n: number) => `${n} settled run${n === 1 ? "" : "s"}`

/**
 * Why a checkpoint folded keeping another number of settled runs is not compared, and what to do.
 * A number set only in svc serve's environment is not this command's: it was said to have
 * "changed" when the owner had simply been started with it.
 */
export const retentionNotCompared = (written: number, kept: number, from: RetainedFrom): string => {
  const head = `written while the owner kept ${runsText(written)} per generation, this replay kept ${kept}`
  if (from === "owner") return `${head}, as the running owner does: ${RETAINED_RUNS_VARIABLE} changed since; it writes a current one within 5 minutes`
  const source = from === "environment" ? "from this command's environment" : from === "svc.yaml" ? "from svc.yaml" : "the default: set in neither this command's environment nor svc.yaml"
  return `${head} (${source}): if the owner was started with ${RETAINED_RUNS_VARIABLE}=${written}, set it for this command too (${RETAINED_RUNS_VARIABLE}=${written} svc journal replay) or in svc.yaml; if the setting changed since, a running owner writes a current one within 5 minutes`
}

/** The first line of replay's report. */
export const replayedLine = (events: number, head: number, seconds: number, perSecond: number): string =>
  `replayed ${events} event${events === 1 ? "" : "s"} (to sequence ${head}) in ${seconds.toFixed(2)} s, ${perSecond} events/s`

/** The first line of `replay --audit`'s report. */
export const placementAuditLine = (decisions: number, seconds: number, reproduced: number, diverged: number): string =>
  `placement audit: ${decisions} decision${decisions === 1 ? "" : "s"} re-run through the current placement code in ${seconds.toFixed(2)} s: ${reproduced} reproduced, ${diverged} diverged`

const replayCommand = Command.make("replay", { json, audit }, ({ audit, json }) =>
  journalFailure(
    Effect.gen(function* () {
      const home = (yield* SvcHome).path
      // The running owner's projections, when one runs on this machine (admin API).
      // One that is there and does not answer (stopped with SIGSTOP) is said so, not waited for.
      const asked = Effect.tryPromise((signal) => adminCall(home, "GET", "/state", undefined, signal)).pipe(
        Effect.map((r) => (r.status === 200 ? (r.body as LiveOwnerState) : undefined))
      )
      const live = slowNotice(asked, home, `waiting up to ${Duration.toSeconds(ANSWER_WITHIN)} s in all, then replaying without comparing with it`).pipe(
        Effect.timeoutTo({
          duration: ANSWER_WITHIN,
          onSuccess: (state): LiveOwnerState | string | undefined => state,
          onTimeout: () => `svc serve for ${home} did not answer within ${Duration.toSeconds(ANSWER_WITHIN)} s (its process stopped, or stuck?)`
        }),
        Effect.orElseSucceed(() => undefined)
      )
      // Folded keeping as many settled runs as the owner does: the running one's, else this
      // command's environment's, else svc.yaml's (as svc serve reads it).
      const running = yield* live
      const liveRetain = typeof running === "object" ? (running.state as Partial<CanonicalState> | undefined)?.runs?.retain : undefined
      const setting = typeof liveRetain === "number" ? undefined : (yield* Effect.tryPromise({ try: () => runtimeEnv(home), catch: (e) => refused(e instanceof Error ? e.message : String(e)) }))[RETAINED_RUNS_VARIABLE]
      const retain = typeof liveRetain === "number" ? liveRetain : yield* Effect.mapError(parseRetainedRuns(setting), refused)
      const retainedFrom: RetainedFrom =
        typeof liveRetain === "number" ? "owner" : process.env[RETAINED_RUNS_VARIABLE] !== undefined ? "environment" : setting !== undefined ? "svc.yaml" : "default"
      // Compared after the fold with the owner's state at the journal's end: the answer already
      // fetched when the owner has not moved since (a large state costs the owner its writing),
      // else asked again.
      const journal = yield* Journal
      const atEnd = Effect.flatMap(Effect.orElseSucceed(journal.head, () => -1), (head) => (typeof running !== "object" || running.sequence === head ? Effect.succeed(running) : live))
      const report = yield* replay({ state: atEnd }, initialStateRetaining(retain))
      const auditStarted = Date.now()
      const placements = audit ? yield* auditPlacements : undefined
      const auditSeconds = (Date.now() - auditStarted) / 1000
      if (json) yield* printJson(placements === undefined ? report : { ...report, placements })
      else {
        yield* printLines([
          replayedLine(report.events, report.head, report.seconds, report.eventsPerSecond),
          report.checkpoint === null
            ? "checkpoint: none written yet"
            : report.checkpoint.matches === null
              ? report.checkpoint.form === "retention"
                ? `checkpoint at sequence ${report.checkpoint.sequence}: not compared (${retentionNotCompared(report.checkpoint.retained ?? 0, report.retained, retainedFrom)})`
                : report.checkpoint.form === "later"
                  ? `checkpoint at sequence ${report.checkpoint.sequence}: not compared (written by a newer svc, whose projections have a later form)`
                  : `checkpoint at sequence ${report.checkpoint.sequence}: not compared (written by an earlier svc, whose projections had another form; a running owner writes a current one within 5 minutes)`
              : `checkpoint at sequence ${report.checkpoint.sequence}: ${report.checkpoint.matches ? "matches" : "DIVERGES"}`,
          report.owner.compared ? `running owner: ${report.owner.matches ? "matches" : "DIVERGES"}` : `running owner: not compared (${report.owner.reason})`,
          ...report.divergences.map((d) => `divergence (${d.against}, sequence ${d.sequence}): ${d.message}`)
        ])
        if (placements !== undefined) {
          yield* printLines([
            placementAuditLine(placements.decisions, auditSeconds, placements.reproduced, placements.diverged.length),
            ...placements.diverged.map((d) => `diverged (sequence ${d.sequence}, run ${d.runId}): ${d.differences.join("; ")}`)
          ])
        }
      }
      if (report.divergences.length > 0 || (placements !== undefined && placements.diverged.length > 0)) return yield* exitQuietly(1)
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("Rebuild every projection from the journal and report any divergence (exit 1 when one is found)"))

const lines = Options.integer("lines").pipe(Options.withAlias("n"), Options.withDefault(20), Options.withDescription("how many of the last events to show"))
const follow = Options.boolean("follow").pipe(Options.withAlias("f"), Options.withDescription("keep printing new events as they are appended (with --json: one JSON document per line)"))

/**
 * An event that cannot be read is still shown: its row as stored (the payload as its text), with
 * why it cannot be read. An export is what an auditor keeps, a tail what an operator reads; one
 * damaged row must not cost every other event.
 */
interface Unreadable {
  readonly unreadable: JournalError
  readonly row: StoredRowText
}
type Read = Envelope | Unreadable
const isUnreadable = (r: Read): r is Unreadable => "unreadable" in r
const sequenceOf = (r: Read) => (isUnreadable(r) ? r.row.sequence : r.sequence)
const timeOf = (at: number) => (Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? new Date(at).toISOString() : at)
/** A row that cannot be read, as stored (the payload as its text), with why. */
const unreadableJson = ({ row, unreadable: e }: Unreadable) => ({
  sequence: row.sequence,
  stream: row.stream,
  streamVersion: row.streamVersion,
  type: row.type,
  schemaVersion: row.schemaVersion,
  recordedAt: timeOf(row.recordedAt),
  payload: row.payload,
  unreadable: e.message
})
const readJson = (r: Read) => (isUnreadable(r) ? unreadableJson(r) : envelopeJson(r))
/** As `envelopeLine`, why in place of the fields (`--json` and `svc journal export` give the payload as stored). */
const readLine = (r: Read) => {
  if (!isUnreadable(r)) return envelopeLine(r)
  const { row } = r
  const why = r.unreadable.message.replace(/^the event at sequence \d+ \([^)]*\) cannot be read: /, "")
  return `${String(row.sequence).padStart(8)}  ${timeOf(row.recordedAt)}  ${row.stream}#${row.streamVersion}  ${row.type}  cannot be read: ${why}`
}

/**
 * Up to `limit` events after `after`, as `journal.read` (or `reader`, `readOutsideRuns` say); a
 * row that cannot be read ends the page, given as stored (the events before it read one at a
 * time: the page failed as a whole).
 */
const readSalvaging = (journal: Journal["Type"], after: number, limit: number, reader: (after: number, limit: number) => Effect.Effect<ReadonlyArray<Envelope>, JournalError> = journal.read) =>
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
const readRange = (journal: Journal["Type"], after: number, count: number) =>
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
const unreadableText = (sequences: ReadonlyArray<number>, done: string) =>
  `${sequences.length === 1 ? "1 event" : `${sequences.length} events`} could not be read (sequence ${sequences.join(", ")}): ${done}`

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

const tailCommand = Command.make("tail", { json, lines, follow }, ({ follow, json, lines }) =>
  journalFailure(
    Effect.gen(function* () {
      if (lines < 0) return yield* usage(`--lines takes how many of the last events to show, 0 or more, not ${lines}`)
      const file = storePath((yield* SvcHome).path)
      // Following a home whose owner has not started yet: it waits for the store, and every event
      // in it is new (it read the empty journal of the missing file for ever, and showed nothing).
      // A home not made yet is waited for too, not made (svc serve makes it, private): on a fresh
      // machine, tail --follow in one terminal and svc serve in another exited 1 at once. A
      // store never written to (a first start that failed) is one not made yet.
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
        yield* print(yield* readRange(journal, Math.max(0, head - Math.max(0, lines)), Math.max(0, lines)))
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

const exportCommand = Command.make("export", {}, () =>
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

/** `svc journal history RUN` as text: one line per event, a decision's verdicts, selection and notes under it. */
export const historyLines = (runId: string, entries: ReadonlyArray<HistoryEntry>): ReadonlyArray<string> => {
  const decisions = entries.filter((e) => e.decision !== undefined)
  const diverged = decisions.filter((e) => e.decision!.reproduced === false).length
  const lines = [
    `run ${runId}: ${entries.length} events in the journal; ${decisions.length} placement decision${decisions.length === 1 ? "" : "s"}, re-run through the current placement code: ${
      diverged === 0 ? "every one reproduced" : `${diverged} DIVERGE${diverged === 1 ? "S" : ""}`
    }`
  ]
  for (const e of entries) {
    const d = e.decision
    lines.push(`#${e.sequence}  ${new Date(e.at).toISOString()}  ${e.text}${d === undefined ? "" : d.reproduced ? " (reproduced)" : " (DIVERGES)"}`)
    if (d === undefined) continue
    for (const v of d.verdicts) lines.push(`    ${hostWords(v.candidate, v.name)}${v.candidate === "owner" ? "" : ` (${v.candidate})`}: ${v.verdict}`)
    lines.push(`    selection: ${d.selection}`)
    for (const note of d.notes) lines.push(`    note: ${note}`)
    for (const difference of d.differences) lines.push(`    differs now: ${difference}`)
  }
  return lines
}

const historyCommand = Command.make("history", { run: Args.text({ name: "RUN" }).pipe(Args.withDescription("the run id")), json }, ({ json, run }) =>
  journalFailure(
    Effect.gen(function* () {
      if (!isRunId(run)) return yield* usage(`${JSON.stringify(run)} is not a run id (r and letters or digits, as svc run prints)`)
      const envelopes = yield* (yield* Journal).readStream(`run-${run}`)
      if (envelopes.length === 0) return yield* refused(`the journal holds no run ${run}`)
      const entries = historyOf(envelopes)
      // A run's stream is versioned 1, 2, 3, ...: a version missing is an event deleted from its story.
      const missing: Array<SequenceGap> = []
      envelopes.forEach((e, i) => {
        const expected = i === 0 ? 1 : envelopes[i - 1]!.streamVersion + 1
        if (e.streamVersion !== expected) missing.push({ from: expected, to: e.streamVersion - 1 })
      })
      const missingText =
        missing.length === 0
          ? undefined
          : `the run's stream is not whole: ${missing.map((g) => (g.from === g.to ? `its event ${g.from} is missing` : `its events ${g.from}-${g.to} are missing`)).join(", ")} (stream versions), deleted from the journal`
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
          ...(missing.length > 0 ? { missingStreamVersions: missing } : {})
        })
      }
      else yield* printLines(historyLines(run, entries))
      if (missingText !== undefined) return yield* refused(missingText)
      // As replay --audit: a decision the current code decides otherwise is a finding.
      if (entries.some((e) => e.decision?.reproduced === false)) return yield* exitQuietly(1)
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("A run's story from the journal: every event, each placement decision with every candidate's verdict, re-run through the current code"))

export const journalCommand = Command.make("journal").pipe(
  Command.withDescription("The owner's event journal: replay, tail, export, history (read-only)"),
  Command.withSubcommands([replayCommand, tailCommand, exportCommand, historyCommand])
)

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
).pipe(Command.withDescription("Audit rows for invites, joins, rotations, revocations and takeovers, with time, worker and actor"))
