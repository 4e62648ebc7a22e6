/**
 * Claims waiting for work (long polls), per worker, and the hand-off of a placement to one of
 * them (docs/runs.md, "A waiting claim"). A placement on a worker with a waiting claim takes
 * that claim while it decides (`take`), so the attempt can start in the placement's own commit;
 * once the commit is done (or failed), `settle` answers the claim with the attempt, or sends it
 * back to look again. A placement that does not start the attempt only `wake`s the worker's
 * claims, which then claim it themselves.
 *
 * All of it runs on the owner's one thread: `take` is called inside a decision, which runs
 * synchronously, so two placements deciding at once never take the same claim.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { Envelope } from "../../domain/journal/Events.js"
import type { WaitingClaim } from "../../domain/runs/Decide.js"

/** An attempt started for a waiting claim, in the commit that placed it. */
export interface Handed {
  readonly runId: string
  readonly attempt: number
}

export interface Parked extends WaitingClaim {
  /** Completed with the attempt handed to it, null (look again), or "over" (its wait ended). */
  readonly answer: Deferred.Deferred<Handed | null | "over">
  /** The run whose placement took this claim, until that placement settles. */
  takenBy: string | undefined
}

export const makeWaitingClaims = () => {
  const byWorker = new Map<string, Array<Parked>>()
  const taken = new Map<string, Parked>()

  const remove = (p: Parked) => {
    const list = byWorker.get(p.workerId)
    if (list === undefined) return
    const i = list.indexOf(p)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) byWorker.delete(p.workerId)
  }

  /** A claim starts waiting. */
  const park = (claim: WaitingClaim) =>
    Effect.map(Deferred.make<Handed | null | "over">(), (answer) => {
      const p: Parked = { ...claim, answer, takenBy: undefined }
      const list = byWorker.get(claim.workerId)
      if (list === undefined) byWorker.set(claim.workerId, [p])
      else list.push(p)
      return p
    })

  /**
   * The claim stops waiting (its wait is over, or its caller left). Answers true when a
   * placement has taken it meanwhile: `answer` is then that placement's to complete, with its
   * commit.
   */
  const leave = (p: Parked): boolean => {
    if (p.takenBy !== undefined) return true
    remove(p)
    return false
  }

  /**
   * For a decision placing `runId` on `workerId`: a waiting claim of that worker under its
   * current session (`fence`), taken for this run. A decision decided again (a retried append)
   * finds the claim it took the first time.
   */
  const take = (workerId: string, fence: number, runId: string): WaitingClaim | undefined => {
    const mine = taken.get(runId)
    if (mine !== undefined) return mine.workerId === workerId && mine.fence === fence ? mine : undefined
    const p = byWorker.get(workerId)?.find((c) => c.takenBy === undefined && c.fence === fence)
    if (p === undefined) return undefined
    p.takenBy = runId
    taken.set(runId, p)
    return p
  }

  /**
   * After the placement of `runId` committed (`envelopes`) or failed (undefined): the claim it
   * took gets the attempt started for it, or is sent back to look again. Answers whether a claim
   * was handed an attempt.
   */
  const settle = (runId: string, envelopes: ReadonlyArray<Envelope> | undefined): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      const p = taken.get(runId)
      if (p === undefined) return Effect.succeed(false)
      taken.delete(runId)
      p.takenBy = undefined
      remove(p)
      let handed: Handed | null = null
      for (const { event } of envelopes ?? []) {
        if (event._tag === "AttemptStarted" && event.runId === runId && event.host === p.workerId) handed = { runId, attempt: event.attempt }
      }
      return Effect.as(Deferred.succeed(p.answer, handed), handed !== null)
    })

  /** Every claim of the worker no placement has taken stops waiting, with `answer`. */
  const answerWaiting = (workerId: string, answer: null | "over") =>
    Effect.suspend(() => {
      const list = byWorker.get(workerId)
      if (list === undefined) return Effect.void
      const untaken = list.filter((p) => p.takenBy === undefined)
      for (const p of untaken) remove(p)
      return Effect.forEach(untaken, (p) => Deferred.succeed(p.answer, answer), { discard: true })
    })

  /** Something was placed on the worker for its claims to take: each waiting one looks again. */
  const wake = (workerId: string) => answerWaiting(workerId, null)

  /**
   * A claim that lists what the worker runs is sent only when no other claim of that worker is
   * in flight (docs/protocol.md): any claim of it still parked is one whose caller went away (a
   * dropped connection the owner has not seen yet). Each is answered as over (no work, always a
   * valid answer), so no placement hands it an attempt that would be lost. A claim a placement
   * has taken already is that placement's to answer.
   */
  const withdraw = (workerId: string) => answerWaiting(workerId, "over")

  return { park, leave, take, settle, wake, withdraw }
}
