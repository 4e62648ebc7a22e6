/**
 * Stopping runs, and freeing the slots of attempts known to have stopped (docs/runs.md, "Stop",
 * "Revocation"): a run's stop interrupts its attempt on the owner at once, and a worker is told
 * at its next call; a release is the operator's word that a worker runs nothing (refused while it
 * still advertises, unless forced); a worker that left has stopped all but what it lists.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import { ACTIVE, attemptId, lastAttempt } from "../../domain/runs/Runs.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import type { FreshnessService } from "../workers/Freshness.js"
import type { DispatcherService, Execute } from "./Dispatcher.js"
import { RunRefused } from "./RunRefused.js"
import { byeReason } from "./Supersession.js"
import type { makeRunViews } from "./RunViews.js"
import { heldBy } from "./WorkerCalls.js"

/** What stopping and releasing use of the dispatcher. */
export interface RunStopsContext {
  readonly state: Effect.Effect<OwnerState>
  /** A command, then a round when a run waits to be placed. */
  readonly execute: Execute
  readonly toRunRefused: (e: { readonly message: string; readonly rejection?: { readonly code: string } }) => RunRefused
  readonly find: ReturnType<typeof makeRunViews>["find"]
  readonly view: ReturnType<typeof makeRunViews>["view"]
  /** Stops an attempt running on the owner (LocalRuns.ts). */
  readonly stopLocal: (id: string) => Effect.Effect<void>
  readonly freshness: FreshnessService
  readonly workerAlive: (w: WorkerRecord, now: number) => boolean
  /** A full scheduler round. */
  readonly kick: Effect.Effect<void>
}

export const makeRunStops = ({ state, execute, toRunRefused, find, view, stopLocal, freshness, workerAlive, kick }: RunStopsContext) => {
  const stop: DispatcherService["stop"] = (runId, actor) =>
    Effect.gen(function* () {
      const [, found, kept] = yield* find(runId)
      const now = yield* Clock.currentTimeMillis
      // Only a settled run is forgotten: it has finished, and stopping it is refused as for any finished run.
      if (!kept) {
        const finished = RunDecide.alreadyFinished(found)
        return yield* toRunRefused({ message: finished.message, rejection: finished })
      }
      yield* execute((s) => RunDecide.decideStop({ runId, actor, now }, s.runs)).pipe(Effect.mapError(toRunRefused))
      const [s, run] = yield* find(runId)
      const last = lastAttempt(run)
      if (last !== undefined && last.host === "owner") yield* stopLocal(attemptId(runId, last.n))
      // A remote attempt is told to stop in the answer to its worker's next call.
      return view(s, run)
    })

  /**
   * Frees the slots a host holds for attempts known to have stopped there (an active one is
   * superseded first, so its run is placed again): those not in `keep`. Answers how many.
   */
  const releaseHeld = (workerId: string, reason: string, keep: ReadonlySet<string>) =>
    Effect.gen(function* () {
      const s = yield* state
      const now = yield* Clock.currentTimeMillis
      let freed = 0
      for (const { id, runId, a } of heldBy(s, workerId)) {
        if (keep.has(id)) continue
        const superseded = ACTIVE.has(a.state)
          ? yield* execute((st) => RunDecide.decideSupersede({ runId, attempt: a.n, reason, now }, st.runs)).pipe(Effect.orElseSucceed(() => []))
          : []
        const done = yield* execute((st) => RunDecide.decideCease({ runId, attempt: a.n, reason, now }, st.runs)).pipe(Effect.orElseSucceed(() => []))
        // An attempt never claimed is ceased by its supersession itself, then the cease finds nothing to do.
        freed += [...superseded, ...done].some((e) => e.event._tag === "AttemptCeased") ? 1 : 0
      }
      return freed
    })

  const release: DispatcherService["release"] = (workerId, _actor, force = false) =>
    Effect.gen(function* () {
      const w = HashMap.get((yield* state).registry.workers, workerId)
      const now = yield* Clock.currentTimeMillis
      // Releasing tells the owner the worker runs nothing: not to be said of one still calling.
      if (!force && Option.isSome(w) && w.value.revokedAt === null && workerAlive(w.value, now)) {
        const seen = freshness.get(workerId)?.lastSeenAt ?? null
        return yield* new RunRefused({
          code: "worker-alive",
          message: `worker ${w.value.name} is still advertising${seen === null ? "" : ` (it last called ${Math.max(0, Math.round((now - seen) / 1000))} s ago)`}, so it may still be running what it holds: stop or revoke it first, or pass --force if you know it runs nothing`
        })
      }
      return yield* releaseHeld(workerId, "the operator confirmed its worker stopped", new Set())
    })

  const left: DispatcherService["left"] = (workerId, running) =>
    Effect.tap(releaseHeld(workerId, "its worker left, having stopped it", new Set(running)), () => kick)

  /**
   * A worker's bye: its link stopped everything it ran for this owner, then said so (Link.ts),
   * so what it held is placed again and its slots are free now (the runs audit saw them held,
   * and the attempts "superseded; holds a slot", until the worker said hello again: for good
   * when it never did).
   */
  const ended: DispatcherService["ended"] = (workerId) => Effect.tap(releaseHeld(workerId, byeReason(false), new Set()), () => kick)

  return { stop, releaseHeld, release, left, ended }
}
