/**
 * The owner's live projections: rebuilt from the journal at start, then advanced by each
 * commit, in sequence order. A command is decide -> append -> apply; a rejected or conflicting
 * command changes neither the journal nor the projections.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { runStream, type Envelope } from "../../domain/journal/Events.js"
import { fold, initialState, type OwnerState } from "../../domain/journal/OwnerState.js"
import type { RunDecision, RunRejection } from "../../domain/runs/Decide.js"
import { emptyRuns, evolveRuns, type RunRecord } from "../../domain/runs/Runs.js"
import type { Decision, Rejection } from "../../domain/workers/Decide.js"
import type { Registry } from "../../domain/workers/Registry.js"
import { Checkpoints, type Checkpoint } from "./Checkpoints.js"
import { Journal, type JournalError, StreamConflict } from "./Journal.js"
import { foldJournal, gapText, snapshotOf } from "./Replay.js"
import { startState } from "./StartSnapshot.js"
import type { Hashing } from "./Hashing.js"

export type AnyDecision = Decision | RunDecision
export type AnyRejection = Rejection | RunRejection

export class CommandRejected extends Data.TaggedError("CommandRejected")<{ readonly rejection: AnyRejection }> {
  override get message() {
    return this.rejection.message
  }
}

export interface ProjectionsService {
  readonly state: Effect.Effect<OwnerState>
  /** The same state, read synchronously (for a caller already outside Effect: the worker route's quick answers). */
  readonly current: () => OwnerState
  /** Decides against the current registry, appends, applies; retried on a concurrent conflict. */
  readonly execute: (decide: (registry: Registry) => Decision | Rejection) => Effect.Effect<ReadonlyArray<Envelope>, CommandRejected | StreamConflict | JournalError>
  /** The same, deciding against the whole state (runs decide on runs and workers). */
  readonly executeOn: (decide: (state: OwnerState) => AnyDecision | AnyRejection) => Effect.Effect<ReadonlyArray<Envelope>, CommandRejected | StreamConflict | JournalError>
  readonly checkpoint: Effect.Effect<Checkpoint, JournalError, Hashing>
  /**
   * A run as its own stream in the journal folds it: for a settled run the projections have
   * forgotten (docs/runs.md, "Runs kept in memory"); undefined when the journal has no such run.
   */
  readonly readRun: (runId: string) => Effect.Effect<RunRecord | undefined, JournalError>
  /**
   * How these projections were built at start: from the snapshot at that sequence (null: from
   * the empty state), then this many events of the journal; `note` says why a snapshot that
   * was there was not used.
   */
  readonly started: { readonly snapshot: number | null; readonly events: number; readonly note: string | null }
}

/** A command run against the whole state: decide, append, apply (`executeOn`); what the runs' parts are handed. */
export type Execute = ProjectionsService["executeOn"]

export class Projections extends Context.Tag("svc/Projections")<Projections, ProjectionsService>() {}

const CONFLICT_RETRIES = 5

/**
 * The projections, from the last snapshot (StartSnapshot.ts) or else from `from` (the empty
 * state; tests start from one keeping fewer settled runs), with the journal after it folded on.
 */
export const makeFrom = (from: OwnerState) => Effect.gen(function* () {
  const journal = yield* Journal
  const checkpoints = yield* Checkpoints
  const start = yield* startState(from)
  const { events, gaps, state: rebuilt } = yield* foldJournal(new Map(), start.state)
  // Not a reason to refuse the start (what is there is consistent event by event), but the
  // operator must hear that rows were deleted: svc journal replay reports them too.
  for (const gap of gaps) yield* Effect.logWarning(`the journal is not whole: ${gapText(gap)} (rows were deleted from it); svc journal replay reports it`)
  const started = { snapshot: start.snapshot, events, note: start.note }
  // Commits may finish in any order; envelopes wait here until they are next in sequence.
  // Each apply replaces it at once (a synchronous step: no other fiber sees half of it).
  let held: { readonly state: OwnerState; readonly waiting: ReadonlyMap<number, Envelope> } = { state: rebuilt, waiting: new Map() }

  const apply = (envelopes: ReadonlyArray<Envelope>) =>
    Effect.sync(() => {
      const { state, waiting } = held
      const pending = new Map(waiting)
      for (const e of envelopes) pending.set(e.sequence, e)
      const ready: Array<Envelope> = []
      for (let next = pending.get(state.sequence + 1); next !== undefined; next = pending.get(next.sequence + 1)) {
        pending.delete(next.sequence)
        ready.push(next)
      }
      held = { state: ready.length === 0 ? state : fold(state, ready), waiting: pending }
    })

  const current = () => held.state
  const state = Effect.sync(current)

  const attempt = (decide: (state: OwnerState) => AnyDecision | AnyRejection) =>
    Effect.gen(function* () {
      const decision = decide(yield* state)
      if (decision._tag === "Rejected") return yield* new CommandRejected({ rejection: decision })
      if (decision.events.length === 0) return []
      // Append and apply as one step: a caller interrupted meanwhile (a worker that hung up) must
      // not leave a committed event unapplied, which would stall every later one behind the gap.
      return yield* Effect.uninterruptible(Effect.tap(journal.append(decision), apply))
    })

  // Decided again on a stream conflict (another command of the same stream committed first), at
  // most CONFLICT_RETRIES times. A plain loop, not `Effect.retry`: that builds a schedule and its
  // driver for every command, of which the owner runs four per job.
  const executeOn = (decide: (state: OwnerState) => AnyDecision | AnyRejection, retries = CONFLICT_RETRIES): Effect.Effect<ReadonlyArray<Envelope>, CommandRejected | StreamConflict | JournalError> =>
    Effect.catchIf(
      attempt(decide),
      (e): e is StreamConflict => e instanceof StreamConflict && retries > 0,
      () => executeOn(decide, retries - 1)
    )
  const execute = (decide: (registry: Registry) => Decision | Rejection) => executeOn((s) => decide(s.registry))

  const checkpoint = Effect.gen(function* () {
    const s = yield* state
    const { text, digest } = yield* snapshotOf(s)
    const c: Checkpoint = { sequence: s.sequence, digest, writtenAt: yield* Clock.currentTimeMillis }
    // The canonical JSON digested is also the snapshot the next start begins from.
    yield* checkpoints.write(c, text)
    return c
  })

  const readRun = (runId: string) =>
    Effect.map(journal.readStream(runStream(runId)), (envelopes) => {
      // A run's record depends on its own stream's events only: folded alone, it is the record
      // the whole fold made before forgetting it.
      const runs = envelopes.reduce(evolveRuns, emptyRuns())
      return Option.getOrUndefined(HashMap.get(runs.runs, runId))
    })

  return Projections.of({ state, current, execute, executeOn, checkpoint, readRun, started })
})

export const make = makeFrom(initialState)

export const layer = Layer.effect(Projections, make)

export const layerFrom = (from: OwnerState) => Layer.effect(Projections, makeFrom(from))
