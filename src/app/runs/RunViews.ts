/**
 * The owner's runs as the CLI and the admin API read them (docs/runs.md): a run's view and
 * detail, the list, and waiting on a run. A run is read from the projections, or, once they have
 * forgotten it (settled long ago), from its stream in the journal. The Dispatcher serves these
 * beside the commands that change runs.
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { sharedNames } from "../../domain/placement/Placement.js"
import { attemptId, isRunId, isSettled, lastAttempt, RUN_STATES, TERMINAL, type RunRecord } from "../../domain/runs/Runs.js"
import type { JournalError } from "../journal/Journal.js"
import type { RunFilesService } from "./RunFiles.js"
import { RunRefused } from "./RunRefused.js"
import type { SlotWaits } from "./SlotWaits.js"

/** The output of a run's latest attempt that `show` gives: its last 64 KiB per stream. */
const OUTPUT_TAIL_BYTES = 64 * 1024

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export interface RunView {
  readonly id: string
  readonly address: string
  readonly state: RunRecord["state"]
  readonly submittedAt: string
  readonly finishedAt: string | null
  /** The host of its latest attempt: where it runs or where it ended (its name); null while pending, or when that attempt was declined. */
  readonly host: string | null
  /** That host's id (`owner`, or the worker's id); null when `host` is. (An owner from before it does not send it.) */
  readonly hostId?: string | null
  /** Another worker carries the host's name (a machine that joined again): texts add the id. Absent: no. */
  readonly hostNameShared?: true
  readonly attempts: number
  readonly explanation: string | null
  /** Pending, not decided now: the owner has just started and a worker that may take it has not called back (`explanation` says so). Absent: no. */
  readonly awaitingWorkers?: true
  /**
   * Pending in line behind the first run of its kind, which is not placed (docs/runs.md, "A
   * backlog"): that run's id, how many of its kind are pending before it (that one included), and
   * that run's explanation. `explanation` says so. Absent: not in line.
   */
  readonly inLine?: { readonly behind: string; readonly ahead: number; readonly behindExplanation: string | null }
  readonly result: unknown
  readonly error: string | null
}

/**
 * What a waiting caller is told about as it changes: state, host, attempts and the latest
 * placement's explanation (a blocked run that becomes waiting, a run placed again elsewhere).
 */
export const progressOf = (view: RunView): string => JSON.stringify([view.state, view.host, view.attempts, view.explanation])

/** Times in a run's detail are ISO 8601 strings, as everywhere in `--json` output. */
type IsoTimes<T, K extends keyof T> = Omit<T, K> & { readonly [P in K]: null extends T[P] ? string | null : string }

export interface RunDetail extends RunView {
  readonly input: unknown
  readonly preferredLabels: ReadonlyArray<string>
  /** The idempotency key it was submitted with (`svc run --idempotency-key`); absent without one. */
  readonly key?: string
  readonly job: RunRecord["job"]
  /** The latest placement decision; `at`: when it was made. */
  readonly placement: IsoTimes<NonNullable<RunRecord["placement"]>, "at"> | null
  readonly attemptRecords: ReadonlyArray<
    IsoTimes<RunRecord["attempts"][number], "assignedAt" | "startedAt" | "endedAt"> & {
      readonly id: string
      readonly hostName: string
      /** Another worker carries the host's name (a machine that joined again): texts add the id. Absent: no. */
      readonly hostNameShared?: true
      /** A running attempt its worker holds while waiting for a free slot there: since when (its latest heartbeat says so); else null. */
      readonly waitingForSlotSince: string | null
    }
  >
  /**
   * The latest attempt's output so far, the last 64 KiB of each stream from a line's start;
   * `skipped`: the bytes before that not shown; `files`: where each stream is whole (on the
   * owner; null for a stream that printed nothing, or when there is no attempt); `removed`: the
   * owner removed its output files when it forgot the run from memory (it may keep it again since:
   * SVC_WORKFLOW_RETAINED_RUNS raised).
   */
  readonly output: {
    readonly attempt: string | null
    readonly stdout: string
    readonly stderr: string
    readonly removed: boolean
    readonly skipped: { readonly stdout: number; readonly stderr: number }
    readonly files: { readonly stdout: string | null; readonly stderr: string | null } | null
  }
}

export interface RunList {
  /** The most recently submitted runs kept in memory that match, oldest first (at most the limit asked for). */
  readonly runs: ReadonlyArray<RunView>
  /** How many runs kept in memory match (every run in flight and the recently settled). */
  readonly total: number
  /** Settled runs no longer kept in memory (`show` still reads each from the journal). */
  readonly forgotten: number
}

export interface RunFilter {
  /** Only runs in one of these states; empty or absent: every state. */
  readonly states?: ReadonlyArray<string>
  /** At most this many, the most recently submitted; 0 or absent: all. */
  readonly limit?: number
}

/** What the views read. */
export interface RunViewsContext {
  readonly state: Effect.Effect<OwnerState>
  /** A run forgotten by the projections, folded from its stream; undefined when there is none. */
  readonly readRun: (runId: string) => Effect.Effect<RunRecord | undefined, JournalError>
  readonly files: RunFilesService
  /** Completed by the next commit that changes a run (made on demand). */
  readonly nextChange: Effect.Effect<Deferred.Deferred<void>>
  readonly slotWaits: SlotWaits
  /** Pending runs left undecided while the restarted owner's workers call back (Placements.ts). */
  readonly awaitingWorkers?: ReadonlySet<string>
  /** Where a pending run is in line behind an earlier run of its kind (Line.ts). */
  readonly queued?: { get(runId: string): { readonly behind: string; readonly ahead: number } | undefined }
}

/** What a run left undecided right after the owner's start says (Placements.ts, `undecided`). */
export const AWAITING_WORKERS =
  "not decided yet: the owner has just started, and a worker that may take it has not called back yet (decided when it does, or 15 s after the start)"

/**
 * What a run in line says: the same words however far along it is, so that a caller waiting on it
 * (`svc run --wait`, progressOf) hears of it once, not at every run placed before it.
 */
export const IN_LINE = "in line: earlier runs of its job, with the same requirements, are pending before it and are placed first (in submission order); the first of them is not placed yet"

export const makeRunViews = ({ state, readRun, files, nextChange, slotWaits, awaitingWorkers, queued }: RunViewsContext) => {
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))
  const nameOf = (s: OwnerState, hostId: string) => (hostId === "owner" ? "owner" : Option.match(HashMap.get(s.registry.workers, hostId), { onNone: () => hostId, onSome: (w) => w.name }))
  /** The names several workers carry, per registry (it is a new value whenever a worker changes): views are many, registries few. */
  const sharedByRegistry = new WeakMap<object, ReadonlySet<string> | undefined>()
  const sharedName = (s: OwnerState, name: string): boolean => {
    const workers = s.registry.workers
    if (!sharedByRegistry.has(workers)) {
      const all = [...HashMap.values(workers)]
      sharedByRegistry.set(workers, sharedNames(all.length, (i) => all[i]!.id, (i) => all[i]!.name))
    }
    return sharedByRegistry.get(workers)?.has(name) === true
  }

  const view = (s: OwnerState, run: RunRecord): RunView => {
    const last = lastAttempt(run)
    // A pending run is on no host, whatever its last attempt was (runs show lists them); nor is a
    // run whose last attempt its worker declined: it never ran there (a run stopped then said
    // "stopped on lab-1").
    const hostId = last === undefined || run.state === "pending" || last.state === "declined" ? null : last.host
    const host = hostId === null ? null : nameOf(s, hostId)
    const awaiting = run.state === "pending" && awaitingWorkers?.has(run.id) === true
    // In line as the last round left it, while the run it waits behind is still pending.
    const line = run.state === "pending" && !awaiting ? queued?.get(run.id) : undefined
    const first = line === undefined ? undefined : runOf(s, line.behind)
    const inLine =
      line === undefined || first === undefined || first.state !== "pending"
        ? undefined
        : { behind: line.behind, ahead: line.ahead, behindExplanation: awaitingWorkers?.has(first.id) === true ? AWAITING_WORKERS : (first.placement?.explanation ?? null) }
    return {
      id: run.id,
      address: run.job.address,
      state: run.state,
      submittedAt: iso(run.submittedAt)!,
      finishedAt: iso(run.finishedAt),
      host,
      hostId,
      ...(hostId !== null && hostId !== "owner" && host !== null && sharedName(s, host) ? { hostNameShared: true as const } : {}),
      attempts: run.attempts.length,
      // Left undecided for a worker calling back: its last decision (before the restart) is not what holds now.
      explanation: awaiting ? AWAITING_WORKERS : inLine !== undefined ? IN_LINE : (run.placement?.explanation ?? null),
      ...(awaiting ? { awaitingWorkers: true as const } : {}),
      ...(inLine === undefined ? {} : { inLine }),
      result: run.result,
      error: run.error
    }
  }

  /**
   * The run as the projections keep it, or, for a settled run they have forgotten, as its
   * stream in the journal folds it (docs/runs.md, "Runs kept in memory"); `kept` says which.
   */
  const find = (runId: string) =>
    Effect.gen(function* () {
      const s = yield* state
      const run = runOf(s, runId)
      if (run !== undefined) return [s, run, true] as const
      const read = isRunId(runId)
        ? yield* readRun(runId).pipe(Effect.mapError((e) => new RunRefused({ code: "journal", message: `run ${runId} is not kept in memory and the journal could not be read: ${e.message}` })))
        : undefined
      if (read === undefined) return yield* new RunRefused({ code: "unknown-run", message: `no run ${runId} on this owner (svc runs list shows them)` })
      return [s, read, false] as const
    })

  const list = (filter: RunFilter = {}): Effect.Effect<RunList, RunRefused> =>
    Effect.gen(function* () {
      const states = filter.states ?? []
      const unknown = states.filter((x) => !(RUN_STATES as ReadonlyArray<string>).includes(x))
      if (unknown.length > 0) return yield* new RunRefused({ code: "bad-filter", message: `${unknown.map((x) => JSON.stringify(x)).join(", ")} is not a run state; the states are ${RUN_STATES.join(", ")}` })
      const limit = filter.limit ?? 0
      if (!Number.isInteger(limit) || limit < 0) return yield* new RunRefused({ code: "bad-filter", message: `the limit must be a whole number >= 0 (0: all), not ${limit}` })
      const s = yield* state
      const wanted = new Set(states)
      const matching = [...HashMap.values(s.runs.runs)].filter((r) => wanted.size === 0 || wanted.has(r.state)).sort((a, b) => a.submittedSequence - b.submittedSequence)
      const shown = limit === 0 ? matching : matching.slice(-limit)
      return { runs: shown.map((r) => view(s, r)), total: matching.length, forgotten: s.runs.forgotten }
    })

  const show = (runId: string): Effect.Effect<RunDetail, RunRefused> =>
    Effect.gen(function* () {
      const [s, run, kept] = yield* find(runId)
      const last = lastAttempt(run)
      const id = last === undefined ? null : attemptId(run.id, last.n)
      return {
        ...view(s, run),
        input: run.input,
        preferredLabels: run.preferredLabels,
        ...(run.key === undefined ? {} : { key: run.key }),
        job: run.job,
        placement: run.placement === null ? null : { ...run.placement, at: iso(run.placement.at)! },
        attemptRecords: run.attempts.map((a) => {
          const id = attemptId(run.id, a.n)
          const waitingSince = a.state === "running" ? slotWaits.since(a.host, id) : undefined
          const hostName = nameOf(s, a.host)
          return {
            ...a,
            assignedAt: iso(a.assignedAt)!,
            startedAt: iso(a.startedAt),
            endedAt: iso(a.endedAt),
            id,
            hostName,
            // Another worker of the fleet carries its name (a machine that joined again): texts add the id.
            ...(a.host !== "owner" && sharedName(s, hostName) ? { hostNameShared: true as const } : {}),
            waitingForSlotSince: iso(waitingSince ?? null)
          }
        }),
        output: yield* outputOf(run, id, kept)
      }
    })

  /** The latest attempt's output: the end of each stream, what is not shown of it, and where it all is. */
  const outputOf = (run: RunRecord, id: string | null, kept: boolean) =>
    Effect.gen(function* () {
      const removed = { attempt: id, stdout: "", stderr: "", removed: true, skipped: { stdout: 0, stderr: 0 }, files: null }
      // A run that never had an attempt had no output to remove.
      if (id === null || !kept) return { ...removed, removed: id !== null }
      const out = yield* files.tail(id, "stdout", OUTPUT_TAIL_BYTES)
      const err = yield* files.tail(id, "stderr", OUTPUT_TAIL_BYTES)
      // Kept, with no output: it printed nothing, or it was forgotten once and is kept again (a
      // raised SVC_WORKFLOW_RETAINED_RUNS), its files removed then. Only a settled run was forgotten.
      if (out.text === "" && err.text === "" && isSettled(run) && (yield* files.wasRemoved(run.id))) return removed
      const paths = files.paths(id)
      // A stream that printed nothing has no file to point at.
      return {
        attempt: id,
        stdout: out.text,
        stderr: err.text,
        removed: false,
        skipped: { stdout: out.skipped, stderr: err.skipped },
        files: { stdout: out.text === "" ? null : paths.stdout, stderr: err.text === "" ? null : paths.stderr }
      }
    })

  const wait = (runId: string, ms: number, seen?: string): Effect.Effect<RunView, RunRefused> =>
    Effect.gen(function* () {
      const deadline = (yield* Clock.currentTimeMillis) + ms
      for (;;) {
        const signal = yield* nextChange
        const [s, run] = yield* find(runId)
        const now = yield* Clock.currentTimeMillis
        const current = view(s, run)
        if (TERMINAL.has(run.state) || now >= deadline || (seen !== undefined && progressOf(current) !== seen)) return current
        yield* Effect.raceFirst(Deferred.await(signal), Effect.sleep(Duration.millis(deadline - now)))
      }
    })


  return { view, find, list, show, wait }
}
