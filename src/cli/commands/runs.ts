/** `svc run` (submit) and `svc runs list|show|stop` (docs/runs.md), through the owner's admin API. */
import * as fs from "node:fs/promises"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { progressOf, type RunDetail, type RunList, type RunView } from "../../app/runs/Dispatcher.js"
import { sharedNames } from "../../domain/placement/Placement.js"
import { RUN_STATES, TERMINAL } from "../../domain/runs/Runs.js"
import { depthProblem, idempotencyKeyProblem, inputSecretProblem, jobAddressProblem, preferenceProblem } from "../../domain/runs/Values.js"
import { withoutSecrets } from "../../domain/workers/Secrets.js"
import { duplicateKeyIn } from "../../domain/workers/StrictJson.js"
import { admin } from "../admin.js"
import { exitCodeOf, stopLatch } from "../ctrlC.js"
import type { SvcHome } from "../../infra/SvcHome.js"
import { CliFailure, exitQuietly, refused, usage } from "../CliFailure.js"
import { json, printJson, printLines, table } from "../output.js"

/** A run's host as texts say it: its name, with its id when another worker carries the name (a machine that joined again). */
const hostText = (r: RunView): string | null => (r.host !== null && r.hostNameShared === true && typeof r.hostId === "string" ? `${r.host} (${r.hostId})` : r.host)


/** Control characters as \uXXXX escapes: a message is printed to a terminal. */
const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** `--input '{"a":1}'` or `--input @file.json`. */
const readInput = (raw: Option.Option<string>) =>
  Effect.gen(function* () {
    if (Option.isNone(raw)) return {}
    const text = raw.value.startsWith("@")
      ? yield* Effect.tryPromise({ try: () => fs.readFile(raw.value.slice(1), "utf8"), catch: (e) => usage(`--input ${raw.value}: cannot read the file: ${e instanceof Error ? e.message : String(e)}`) })
      : raw.value
    const given = `--input${raw.value.startsWith("@") ? ` ${raw.value}` : ""}`
    // A byte order mark before the JSON (an editor's UTF-8 "with BOM") is not part of it (RFC 8259, 8.1).
    const json = text.replace(/^\uFEFF/, "")
    const value = yield* Effect.try({
      try: () => JSON.parse(json) as unknown,
      // JSON.parse's message quotes the text: a secret in it cut to its prefix, control characters (a binary file's) escaped.
      catch: (e) => usage(`${given} is not JSON: ${printable(withoutSecrets(e instanceof Error ? e.message : String(e)))}`)
    })
    // The last of a key given twice would win without a word (the worker route refuses it too).
    const twice = duplicateKeyIn(json)
    if (twice !== undefined) return yield* usage(`${given} names ${twice} twice: a key may appear once in an object`)
    // Refused here, before it is sent: too deep to be written as JSON again.
    const tooDeep = depthProblem(value, given)
    if (tooDeep !== undefined) return yield* usage(tooDeep)
    const secret = inputSecretProblem(value, given)
    return secret === undefined ? value : yield* usage(secret)
  })

/** How a run `--wait` follows is getting on, while it is not finished. */
/** A run in line behind the first of its kind, said with how far along it is (docs/runs.md, "A backlog"). */
export const inLineWords = (r: RunView, line: NonNullable<RunView["inLine"]>): string =>
  `in line: ${line.ahead.toLocaleString("en-US")} earlier run${line.ahead === 1 ? "" : "s"} of ${r.address} with the same requirements ${line.ahead === 1 ? "is" : "are"} pending before it and placed first; the first, ${line.behind}: ${line.behindExplanation ?? "not decided yet"}`

export const progressLine = (r: RunView) =>
  r.state === "pending"
    ? // Pending again, its last decision (which placed it) is not what happens now.
      r.attempts > 0 && r.explanation?.startsWith("placed on ") === true
      ? `run ${r.id} pending: its attempt ${r.attempts} ended (svc runs show ${r.id} says how); it is placed again`
      : r.inLine !== undefined
        ? `run ${r.id} pending: ${inLineWords(r, r.inLine)}`
        : `run ${r.id} pending: ${r.explanation ?? "not placed yet"}`
    : `run ${r.id} ${r.state}${r.host === null ? "" : ` on ${hostText(r)}`}${r.attempts > 1 ? ` (attempt ${r.attempts})` : ""}`

/**
 * Whether `--wait` says so on stderr: a run that is not going as it should (not placed, placed
 * again) and what happens to it next; not the ordinary start of a run placed at once.
 */
export const worthSaying = (r: RunView, saidBefore: boolean) => saidBefore || r.state === "pending" || r.attempts > 1

const outcomeLine = (r: RunView) =>
  r.state === "succeeded" ? `run ${r.id} succeeded on ${hostText(r) ?? "?"}` : `run ${r.id} ${r.state}${r.host === null ? "" : ` on ${hostText(r)}`}: ${r.error ?? r.explanation ?? ""}`

/** How long `--wait` waits for an owner that stopped answering (a restart) before it gives up. */
const RESTART_PATIENCE = Duration.seconds(60)
/** How long the owner holds one wait before it answers with the run as it is. */
const WAIT_MS = 25_000
/** A wait not answered this long after it ends is an owner that does not answer (stopped with SIGSTOP, stuck). */
const WAIT_MARGIN = Duration.seconds(10)
/** How long one question asked while the owner does not answer may take. */
const PROBE_WITHIN = Duration.seconds(5)

/** One wait for run `runId` on the owner: answered when its progress differs from `seen`, it ends, or after `ms`. */
const waitCall = (runId: string, seen: string, ms: number, within: Duration.Duration) =>
  admin("POST", "/runs/wait", { run: runId, ms, seen }, { answerWithin: within, notice: false }) as unknown as Effect.Effect<RunView, CliFailure, SvcHome>

/**
 * A wait asked again while the owner does not answer at all (not there, or there and silent),
 * every half second for up to RESTART_PATIENCE, each question one the owner answers at once: a
 * restarted owner keeps the run (a worker's attempt goes on; its own is placed again), so the
 * caller waiting on it need not fail with it. Said once on stderr.
 */
export const followThroughRestarts = <A, R>(first: Effect.Effect<A, CliFailure, R>, probe: (within: Duration.Duration) => Effect.Effect<A, CliFailure, R>, runId: string) =>
  Effect.catchAll(first, (e) =>
    e.unreachable !== true
      ? Effect.fail(e)
      : Effect.gen(function* () {
          yield* Console.error(`the owner does not answer (${e.message}); still waiting for run ${runId}, for up to ${Duration.toSeconds(RESTART_PATIENCE)} seconds until it is back`)
          const since = yield* Clock.currentTimeMillis
          let last = e
          for (;;) {
            yield* Effect.sleep("500 millis")
            const left = Duration.toMillis(RESTART_PATIENCE) - ((yield* Clock.currentTimeMillis) - since)
            // Given up: what the owner's absence was, and that the run is kept (the runs audit's
            // last words were "svc serve is not running", the run forgotten).
            if (left <= 0) {
              return yield* Effect.fail(
                new CliFailure({
                  ...last,
                  message: `${last.message}; stopped waiting for run ${runId} after ${Duration.toSeconds(RESTART_PATIENCE)} seconds: the owner keeps it, and once it is back svc runs show ${runId} follows it`
                })
              )
            }
            const answer = yield* Effect.either(probe(Duration.min(PROBE_WITHIN, Duration.millis(left))))
            if (Either.isRight(answer)) return answer.right
            if (answer.left.unreachable !== true) return yield* Effect.fail(answer.left)
            last = answer.left
          }
        })
  )

export const runCommand = Command.make(
  "run",
  {
    address: Args.text({ name: "BAG:JOB@VERSION" }).pipe(Args.withDescription("the job to run: a bag installed on the owner, one of its jobs, and that job's own version (not the bag's; svc bag show BAG lists the addresses)")),
    input: Options.text("input").pipe(Options.optional, Options.withDescription("the job's input: JSON, or @FILE holding JSON (default {})")),
    prefer: Options.text("prefer").pipe(Options.repeated, Options.withDescription("KEY=VALUE label a host should have, weighed among the workers that can run it (the owner keeps what it can run; repeatable)")),
    wait: Options.boolean("wait").pipe(Options.withDescription("wait for the outcome: print the result (exit 0) or why it failed (exit 1)")),
    key: Options.text("idempotency-key").pipe(
      Options.optional,
      Options.withDescription("name this submission (a UUID, a build's id and step): the same key sent again answers the run it made, never a second one (safe to retry)")
    ),
    json
  },
  ({ address, input, json, key, prefer, wait }) =>
    Effect.gen(function* () {
      // Malformed words are usage errors (exit 2), said before the owner is asked, as --input's are.
      const malformed = jobAddressProblem(address) ?? preferenceProblem(prefer) ?? (Option.isSome(key) ? idempotencyKeyProblem(key.value) : undefined)
      if (malformed !== undefined) return yield* usage(malformed)
      const value = yield* readInput(input)
      // Waiting, Ctrl-C (and SIGTERM, SIGHUP) is this command's from before the submission:
      // pressed while the owner answers it, the run's id is still said (the default action ended
      // the CLI, the run submitted and unnamed).
      const stopped = wait ? yield* stopLatch : undefined
      let run = (yield* admin("POST", "/runs/submit", { address, input: value, prefer, ...(Option.isSome(key) ? { key: key.value } : {}) })) as unknown as RunView & { readonly existing?: true }
      // Submitted before under this key: that run, not a second one (a script's retry).
      const existing = run.existing === true
      // What --json prints of the run, however it ends: a run submitted before says so.
      const shown = (r: RunView) => (existing ? { ...r, existing: true as const } : r)
      if (existing) {
        yield* Console.error(`run ${run.id} was submitted earlier with this idempotency key (${run.state}): it is answered, not submitted again`)
      }
      // A preference is weighed only among workers: the owner keeps what it can run (locality first).
      if (prefer.length > 0 && run.host === "owner") {
        yield* Console.error(`note: --prefer ${prefer.join(" --prefer ")} was not weighed: the owner can run this job, and keeps what it can run (docs/placement.md)`)
      }
      if (!wait) {
        if (json) return yield* printJson(run)
        yield* Console.log(run.id)
        if (existing) return
        return yield* Console.error(`submitted ${run.address} as run ${run.id}; follow it with: svc runs show ${run.id}`)
      }
      // Follows it through the owner's wait, which answers as soon as its progress differs from `seen`.
      let said: string | undefined
      const id = run.id
      // A wait that ends without the outcome (a signal, the owner gone too long) leaves the run
      // going: with --json, the run as last seen goes to stdout (its state not final), so that a
      // script has its id whatever ended the wait, and need not submit it again.
      const lastSeen = (end: Effect.Effect<never, CliFailure>) => (json ? Effect.zipRight(Effect.suspend(() => printJson(shown(run))), end) : end)
      yield* Effect.gen(function* () {
        while (!TERMINAL.has(run.state)) {
          const seen = progressOf(run)
          if (seen !== said && worthSaying(run, said !== undefined)) {
            if (said === undefined) yield* Console.error(`waiting for run ${run.id} (Ctrl-C stops waiting, not the run: svc runs stop ${run.id})`)
            said = seen
            yield* Console.error(progressLine(run))
          }
          run = yield* followThroughRestarts(
            waitCall(run.id, seen, WAIT_MS, Duration.sum(Duration.millis(WAIT_MS), WAIT_MARGIN)),
            (within) => waitCall(id, seen, 0, within),
            run.id
          )
        }
      }).pipe(
        Effect.catchAll((e) => lastSeen(Effect.fail(e))),
        // Ctrl-C, SIGTERM, SIGHUP: the run goes on, and its id may not have been said yet (a run
        // placed at once says nothing until it ends). Exit 128 + the signal's number, as a shell
        // reports a command a signal ended.
        Effect.raceFirst(
          Effect.flatMap(stopped ?? Effect.never, (signal) =>
            Effect.zipRight(
              Console.error(`${signal === "SIGINT" ? "" : `${signal}: `}stopped waiting for run ${id}; it goes on: svc runs show ${id} follows it, svc runs stop ${id} stops it`),
              lastSeen(exitQuietly(exitCodeOf(signal)))
            )
          )
        )
      )
      if (json) yield* printJson(shown(run))
      else if (run.state === "succeeded") yield* Console.log(JSON.stringify(run.result))
      if (run.state !== "succeeded") return yield* refused(outcomeLine(run))
      if (!json) yield* Console.error(outcomeLine(run))
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("Submit a run of a versioned job on this owner; prints the run id (with --wait, the result)"))

/** When the owner does not answer, what reads the journal without it (the store is there either way). */
const meanwhile = (what: string) =>
  Effect.mapError((e: CliFailure) => (e.unreachable === true ? new CliFailure({ exitCode: e.exitCode, unreachable: true, message: `${e.message} (${what} meanwhile)` }) : e))

const runArg = Args.text({ name: "RUN" }).pipe(Args.withDescription("the run id"))

const DEFAULT_LIMIT = 100

const list = Command.make(
  "list",
  {
    json,
    state: Options.choice("state", RUN_STATES).pipe(Options.repeated, Options.withDescription("only runs in this state (repeat for several)")),
    limit: Options.integer("limit").pipe(Options.withDefault(DEFAULT_LIMIT), Options.withDescription(`at most this many, the most recently submitted (default ${DEFAULT_LIMIT}; 0: all)`))
  },
  ({ json, limit, state }) =>
    Effect.gen(function* () {
      if (limit < 0) return yield* usage(`--limit must be 0 (all) or more, not ${limit}`)
      const listed = (yield* admin("POST", "/runs/list", { states: state, limit }).pipe(meanwhile("svc journal tail reads the journal"))) as unknown as Partial<RunList>
      const runs = listed.runs ?? []
      const total = listed.total ?? runs.length
      // An owner from before retention does not say; it forgot nothing.
      const forgotten = listed.forgotten ?? 0
      if (json) return yield* printJson({ runs, total, forgotten })
      if (total === 0 && forgotten === 0 && state.length === 0) return yield* Console.log("no runs yet; submit one with: svc run BAG:JOB@VERSION")
      if (total === 0 && state.length > 0) yield* Console.log(`no run kept in memory is ${state.join(" or ")}`)
      if (runs.length > 0) yield* printLines(table(["RUN", "JOB", "STATE", "HOST", "ATTEMPTS", "SUBMITTED", "WHY"], runs.map((r) => [r.id, r.address, r.state, hostText(r) ?? "-", String(r.attempts), r.submittedAt, r.error ?? (r.inLine === undefined ? r.explanation : `in line behind ${r.inLine.behind} (${r.inLine.ahead.toLocaleString("en-US")} before it)`) ?? ""])))
      if (runs.length < total) yield* Console.log(`the ${runs.length} most recently submitted of ${total} runs${state.length === 0 ? "" : ` ${state.join(" or ")}`}; --limit 0 lists them all`)
      // Older finished runs are in the journal only (docs/runs.md, "Runs kept in memory").
      if (forgotten > 0) yield* Console.log(`${forgotten} older finished run${forgotten === 1 ? " is" : "s are"} not listed; svc runs show RUN reads any of them from the journal`)
    })
).pipe(Command.withDescription("List the runs on this owner with their state and where they are, the most recent last"))

/**
 * What the stated preference did in a placement, read from its selection (placement layer 3:
 * locality first, then the preference, then a deterministic tie-break; docs/placement.md).
 */
export const preferenceEffect = (selection: string, over = false): string =>
  selection.startsWith("locality")
    ? "not weighed: the owner keeps what it can run, before any preference"
    : selection === "stated preference"
      ? "it chose the host"
      : selection === "the only eligible candidate with room"
        ? "not weighed: one eligible host had room"
        : selection.startsWith("deterministic tie-break")
          ? "no host with room had more of it than the others"
          : over
            ? "never weighed: no host could take it"
            : "weighed once a host can take it"

/** A span of time in words: `0.35 s`, `12.3 s`, `4 min 12 s`, `2 h 5 min`. */
export const lasted = (ms: number): string => {
  if (ms < 10_000) return `${(Math.max(0, ms) / 1000).toFixed(2)} s`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}

/** A time of a run's detail: ISO 8601 (an owner from before that gave epoch milliseconds). */
const msOf = (t: string | number): number => (typeof t === "number" ? t : Date.parse(t))

/**
 * How long an attempt took, in words. Its end is when its outcome reached the owner; a worker's
 * report says how long the job ran, and when the report came much later (the owner was away),
 * both are said.
 */
const spanOf = (state: string, span: number, ranMs: number | undefined, onOwner: boolean): string =>
  // Superseded, it stopped counting; whether its process ended is not known yet.
  state === "superseded"
    ? `; ${lasted(span)} from its start until it was superseded`
    : // Ceased, it may have been superseded first: its end is when it stopped counting, not when its
      // process was seen stopped ("13.8 s from its start to its end" of a job that ran 41 s).
      state === "ceased"
      ? `; ${lasted(span)} from its start until it stopped counting`
    : ranMs !== undefined && span - ranMs > 2_000
      ? // On the owner, the gap is a wait for one of the machine's slots (other owners' work held
        // them), or for the journal to take its outcome (a full disk: RecordAgain.ts).
        onOwner
        ? `; ran ${lasted(ranMs)} (it ended ${lasted(span)} after its start: the rest it waited, for a free slot or for its outcome to be recorded)`
        : `; ran ${lasted(ranMs)} (its report reached the owner ${lasted(span)} after its start)`
      : `; ${lasted(span)} from its start to its end`

/**
 * An attempt's state in words: a reported one says how its job ended, and, on a run stopped
 * before its report came (stop wins), that this is not the run's outcome. An owner from before
 * attempts kept it (no `ok`) says `reported` alone.
 */
export const attemptStateText = (a: Pick<RunDetail["attemptRecords"][number], "state" | "reason" | "ok">, runState: RunDetail["state"]): string => {
  const reason = a.reason === null ? "" : ` (${a.reason})`
  if (a.state !== "reported" || a.ok === undefined) return `${a.state}${reason}`
  const outcome = a.ok ? "succeeded" : `failed${reason}`
  return runState === "stopped" ? `reported: ${outcome}, after the run was stopped (stop wins: not the run's outcome, and no result is kept)` : `reported: ${outcome}`
}

/** `svc runs show RUN` as text: the run, its placement record, its attempts, its outcome and output. */
export const showLines = (r: RunDetail): ReadonlyArray<string> => {
  // Two identities of one name (a machine that joined again) among the attempts: each said with its id.
  const attempts = r.attemptRecords
  const shared = sharedNames(attempts.length, (i) => attempts[i]!.host, (i) => attempts[i]!.hostName)
  // Or among the fleet (the owner says so): the explanation names them with ids, and so do these lines.
  const hostOf = (a: RunDetail["attemptRecords"][number]) => (shared?.has(a.hostName) === true || a.hostNameShared === true ? `${a.hostName} (${a.host})` : a.hostName)
  const hostNamed = (id: string) => {
    const a = r.attemptRecords.find((b) => b.host === id)
    return a === undefined ? id : hostOf(a)
  }
  const lines = [
    `run ${r.id}: ${r.address} (${r.job.executor}${r.job.remoteEligible ? ", remote-eligible" : `, ${r.job.ownerOnly.join("; ")}`})`,
    `state: ${r.state}${r.finishedAt === null ? "" : ` at ${r.finishedAt}`}; submitted ${r.submittedAt}`,
    r.awaitingWorkers === true
      ? `placement: ${r.explanation}${r.placement === null ? "" : `; decided before: ${r.placement.explanation}`}`
      : r.inLine !== undefined
        ? `placement: ${inLineWords(r, r.inLine)}${r.placement === null ? "" : `; its own decision before: ${r.placement.explanation}`}`
        : `placement: ${r.placement === null ? "not decided yet" : r.placement.explanation}`
  ]
  if (r.placement?.record !== undefined && r.awaitingWorkers !== true && r.inLine === undefined) {
    const p = r.placement.record
    lines.push(
      `  execution host: ${p.executionHost === null ? "none" : hostNamed(p.executionHost)}`,
      `  inference endpoint: ${p.inferenceEndpoint ?? "none"}; requested model: ${p.requestedModel ?? "none"}; resolved model: ${p.resolvedModel ?? "none"}`,
      `  selection: ${p.selectionProvenance}`,
      ...(r.preferredLabels.length === 0 ? [] : [`  preferred: ${r.preferredLabels.join(", ")}; ${preferenceEffect(p.selectionProvenance, r.finishedAt !== null)}`]),
      `  limits: timeout ${p.limits.timeoutMs === null ? "none" : `${p.limits.timeoutMs / 1000} s`}; bounds ${p.limits.bounds.join(", ") || "none"}`
    )
    for (const note of r.placement.notes) lines.push(`  note: ${note}`)
  }
  for (const a of r.attemptRecords) {
    // An owner from before this field does not say.
    const waiting = a.waitingForSlotSince ?? null
    lines.push(
      `attempt ${a.id} on ${hostOf(a)}: ${attemptStateText(a, r.state)}${
        a.startedAt !== null && a.endedAt !== null ? spanOf(a.state, msOf(a.endedAt) - msOf(a.startedAt), a.ranMs, a.host === "owner") : ""
      }${a.holdsSlot ? "; holds a slot" : ""}${
        waiting === null ? "" : `; not started yet: waiting there since ${waiting} for a free slot (other work holds the machine's slots)`
      }`
    )
  }
  // Placed more than once: the decisions before the latest are in the journal.
  if (r.attemptRecords.length > 1) lines.push(`every placement decision, and why each attempt ended: svc journal history ${r.id}`)
  if (r.state === "succeeded") lines.push(`result: ${JSON.stringify(r.result)}`)
  if (r.error !== null) lines.push(`error: ${r.error}`)
  if (r.output.removed === true) lines.push(`output: removed (its output files were removed when the owner forgot the run from memory)`)
  for (const stream of ["stdout", "stderr"] as const) {
    const text = r.output[stream]
    if (text === "") continue
    // An owner from before these fields does not say.
    const skipped = r.output.skipped?.[stream] ?? 0
    const file = r.output.files?.[stream]
    const cut = skipped === 0 ? "" : `, its end: ${skipped.toLocaleString("en-US")} bytes before it are not shown${file === undefined || file === null ? "" : `; all of it: ${file}`}`
    lines.push(`${stream} (${r.output.attempt}${cut}):`, ...text.replace(/\n$/, "").split("\n").map((l) => `  ${l}`))
  }
  return lines
}

const show = Command.make("show", { run: runArg, json }, ({ json, run }) =>
  Effect.gen(function* () {
    const r = (yield* admin("POST", "/runs/show", { run }).pipe(meanwhile(`svc journal history ${run} reads the run from the journal`))) as unknown as RunDetail
    if (json) return yield* printJson(r)
    yield* printLines(showLines(r))
  })
).pipe(Command.withDescription("Show a run: state, placement record and explanation, attempts, result and output so far"))

/** One run stopped, as `svc runs stop RUN` says it: what its host is told. */
const stopOne = (run: string, json: boolean) =>
  Effect.gen(function* () {
    // What ran before the stop: a worker is told only of an attempt that still counted (a
    // superseded one, on a revoked worker say, is no longer its to run, and it is told nothing).
    const shown = json ? undefined : yield* Effect.either(admin("POST", "/runs/show", { run }))
    // A runtime that does not answer is not sent the stop too (its wait would be a second 60 s).
    if (shown !== undefined && Either.isLeft(shown) && shown.left.unreachable === true) return yield* Effect.fail(shown.left)
    const before = (shown === undefined ? undefined : Either.getOrUndefined(shown)) as unknown as RunDetail | undefined
    const r = (yield* admin("POST", "/runs/stop", { run })) as unknown as RunView
    if (json) return yield* printJson(r)
    const last = before?.attemptRecords[before.attemptRecords.length - 1]
    const active = last !== undefined && (last.state === "assigned" || last.state === "running")
    yield* Console.log(
      `stopped run ${r.id}${
        r.host === null || (before !== undefined && !active)
          ? ""
          : r.host === "owner"
            ? "; its attempt on the owner is stopped"
            : `; ${hostText(r)} is told to stop it at its next call`
      }`
    )
  })

/** At most this many stops asked at once: a backlog of thousands is stopped in seconds, not one call at a time. */
const STOPS_AT_ONCE = 8
/** Stopped runs said one per line up to this many; beyond, counted. */
const STOPS_SAID = 20

/** What stopping several runs did: the runs stopped (as they are now), and each refusal with its code. */
export interface StopsDone {
  readonly stopped: ReadonlyArray<RunView>
  readonly refused: ReadonlyArray<{ readonly run: string; readonly code: string; readonly message: string }>
}

/** `svc runs stop` of several runs, as text: each run stopped (or how many), each refusal, and a total. */
export const stopsLines = (done: StopsDone, what: string): ReadonlyArray<string> => {
  const lines = done.stopped.length <= STOPS_SAID ? done.stopped.map((r) => `stopped run ${r.id}${r.host === null ? "" : ` (on ${hostText(r)}, told to stop it)`}`) : []
  for (const r of done.refused) lines.push(`run ${r.run} not stopped: ${r.message}`)
  lines.push(`stopped ${done.stopped.length.toLocaleString("en-US")} of ${(done.stopped.length + done.refused.length).toLocaleString("en-US")} ${what}${done.refused.length === 0 ? "" : `; ${done.refused.length} refused (above)`}`)
  return lines
}

const stop = Command.make(
  "stop",
  {
    runs: Args.text({ name: "RUN" }).pipe(Args.repeated, Args.withDescription("the run id; several are each stopped")),
    pending: Options.boolean("pending").pipe(Options.withDescription("every pending run (not placed yet: waiting, blocked, in line), a backlog: instead of run ids")),
    job: Options.text("job").pipe(Options.optional, Options.withDescription("with --pending: only the pending runs of this BAG:JOB@VERSION")),
    json
  },
  ({ job, json, pending, runs }) =>
    Effect.gen(function* () {
      const address = Option.getOrUndefined(job)
      if (address !== undefined && !pending) return yield* usage("--job goes with --pending: svc runs stop --pending --job BAG:JOB@VERSION")
      const badAddress = address === undefined ? undefined : jobAddressProblem(address)
      if (badAddress !== undefined) return yield* usage(`--job: ${badAddress}`)
      if (pending && runs.length > 0) return yield* usage("give run ids or --pending, not both")
      if (!pending && runs.length === 0) return yield* usage("name the run to stop (svc runs stop RUN), several, or --pending for every pending run")
      if (!pending && runs.length === 1) return yield* stopOne(runs[0]!, json)
      // Every pending run (of the job): listed, then stopped newest first, so that the first of each
      // kind in line stays first until the last: stopping from the front would have each next one decided.
      const ids = pending
        ? ((yield* admin("POST", "/runs/list", { states: ["pending"], limit: 0 })) as unknown as RunList).runs
            .filter((r) => address === undefined || r.address === address)
            .map((r) => r.id)
            .reverse()
        : [...new Set(runs)]
      const outcomes = yield* Effect.forEach(
        ids,
        (run) =>
          admin("POST", "/runs/stop", { run }).pipe(
            Effect.map((r) => ({ stopped: r as unknown as RunView })),
            // A runtime that stopped answering ends it all; a refusal is this run's alone.
            Effect.catchIf(
              (e) => e.unreachable !== true,
              (e) => Effect.succeed({ refused: { run, code: e.code ?? "refused", message: e.message } })
            )
          ),
        { concurrency: STOPS_AT_ONCE }
      )
      const done: StopsDone = {
        stopped: outcomes.flatMap((o) => ("stopped" in o ? [o.stopped] : [])),
        refused: outcomes.flatMap((o) => ("refused" in o ? [o.refused] : []))
      }
      const what = pending ? `pending run${ids.length === 1 ? "" : "s"}${address === undefined ? "" : ` of ${address}`}` : "runs named"
      if (json) yield* printJson(done)
      else if (ids.length === 0) yield* Console.log(`no pending run${address === undefined ? "" : ` of ${address}`} to stop`)
      else yield* printLines(stopsLines(done, what))
      if (done.refused.length > 0) return yield* json ? Effect.fail(exitQuietly(1)) : refused(`${done.refused.length} of ${ids.length} ${what} not stopped`, done.refused[0]!.code)
    })
).pipe(Command.withDescription("Stop runs wherever they are (a worker is told in the answer to its next call): one, several, or every pending one (--pending)"))

export const runsCommand = Command.make("runs").pipe(Command.withDescription("Runs: list, show, stop"), Command.withSubcommands([list, show, stop]))
