/**
 * What supersedes an attempt on a worker in a scheduler round (docs/runs.md, "At-least-once, and
 * what supersedes an attempt"): its worker was revoked, is unknown, or has gone silent (its
 * advertisement lapsed, or it said bye), or the attempt was not claimed in time. Its run is then
 * placed again. Liveness is computed from freshness here, never stored.
 */
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import { ACTIVE, lastAttempt, parseAttemptId } from "../../domain/runs/Runs.js"
import { ADVERTISEMENT_LIFETIME_MS, advertisementAlive } from "../../domain/workers/DisplayState.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import type { FreshnessService } from "../workers/Freshness.js"
import type { Execute } from "./Dispatcher.js"

/** An assigned attempt the worker has not claimed in this time is placed again. */
export const CLAIM_DEADLINE_MS = 30_000
/** After the owner starts, workers get this long to call again before their attempts are superseded. */
export const RESTART_GRACE_MS = ADVERTISEMENT_LIFETIME_MS

/** What supersession uses of the dispatcher. */
export interface SupersessionContext {
  readonly state: Effect.Effect<OwnerState>
  /** A command, then a round when a run waits to be placed. */
  readonly execute: Execute
  readonly freshness: FreshnessService
  /** When the owner started: workers get RESTART_GRACE_MS from then. */
  readonly startedAt: number
}

/**
 * Why an attempt of a worker that said bye no longer counts: its link stopped what it ran for
 * this owner before saying so (Link.ts), so the attempt has also ceased (RunStops.ts, `ended`).
 */
export const byeReason = (leaving: boolean): string =>
  leaving
    ? "its worker left this owner (svc workers leave on its machine, which stopped it first) before the attempt ended"
    : "its worker ended its session cleanly (it said so: its svc serve stopped, or the machine joined again) before the attempt ended"

export const makeSupersession = ({ state, execute, freshness, startedAt }: SupersessionContext) => {
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))

  const workerAlive = (w: WorkerRecord, now: number) => w.advertisement !== null && advertisementAlive(freshness.get(w.id), now)

  /** When a worker's attempts lapse if it stays silent: 15 s after its last advertisement, not before the owner's restart grace ends. */
  const lapsesAt = (workerId: string, now: number) => {
    const lastAdvertisedAt = freshness.get(workerId)?.lastAdvertisedAt ?? null
    return Math.max(lastAdvertisedAt === null ? now : lastAdvertisedAt + ADVERTISEMENT_LIFETIME_MS, startedAt + RESTART_GRACE_MS)
  }

  /**
   * Attempts that no longer count: on a revoked or lapsed worker, or assigned and never claimed.
   * Answers when the next such deadline falls (null: none), so the scheduler sleeps until then.
   */
  const supersedeLapsed = (now: number) =>
    Effect.gen(function* () {
      const s = yield* state
      let next: number | null = null
      const due = (at: number) => {
        if (at > now && (next === null || at < next)) next = at
      }
      // The attempts that hold a worker's slot (the `held` index) include every active one: a
      // round walks those, not every open run (a backlog of thousands waiting holds none).
      for (const [host, attempts] of s.runs.held) {
        if (host === "owner") continue
        for (const id of attempts) {
          const held = parseAttemptId(id)
          if (held === undefined) continue
          const { runId } = held
          const run = HashMap.has(s.runs.open, runId) ? runOf(s, runId) : undefined
          const last = run === undefined ? undefined : lastAttempt(run)
          if (last === undefined || last.n !== held.attempt || !ACTIVE.has(last.state) || last.host !== host) continue
          const w = Option.getOrUndefined(HashMap.get(s.registry.workers, last.host))
          // A worker that said bye is known to be gone now (no grace for an owner's restart needed).
          const ended = w !== undefined && freshness.get(w.id)?.sessionEnded === true
          const lapsed = w !== undefined && !workerAlive(w, now) && (ended || now - startedAt >= RESTART_GRACE_MS)
          // Not counting the owner's own pauses since (a suspended owner, its clock stepped forward): no worker could claim then.
          const claimBy = last.state === "assigned" ? last.assignedAt + CLAIM_DEADLINE_MS + freshness.deafSince(last.assignedAt) : null
          const unclaimed = claimBy !== null && now >= claimBy
          const reason =
            w === undefined
              ? "its worker is unknown"
              : w.revokedAt !== null
                ? "its worker was revoked"
                : lapsed
                  ? ended
                    ? byeReason(freshness.get(w.id)?.leaving === true)
                    : "its worker's advertisement lapsed (no refresh for 15 s)"
                  : unclaimed
                    ? `its worker did not claim it within ${CLAIM_DEADLINE_MS / 1000} s`
                    : undefined
          if (reason === undefined) {
            due(lapsesAt(last.host, now))
            if (claimBy !== null) due(claimBy)
            continue
          }
          yield* execute((st) => RunDecide.decideSupersede({ runId, attempt: last.n, reason, now }, st.runs)).pipe(Effect.ignore)
        }
      }
      return next as number | null
    })

  return { workerAlive, lapsesAt, supersedeLapsed }
}
