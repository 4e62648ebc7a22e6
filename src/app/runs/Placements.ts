/**
 * Where the owner's runs are placed (docs/runs.md, "Placement, recorded"): a submission is
 * admitted and placed in its own commit, unless an earlier run still waits for room; the
 * scheduler's rounds place pending runs in submission order, one at a time, each against the
 * state the previous placement left, the first of each kind only while it waits (`placePending`). A placement may hand its attempt to a
 * claim waiting on the chosen worker, in the same commit, and counts its slot as promised until
 * the state holds it, so a host's slots are never promised twice.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { Envelope } from "../../domain/journal/Events.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { makeFeasibilityCache } from "../../domain/placement/Feasibility.js"
import type { Quotas, Silence } from "../../domain/placement/Placement.js"
import * as RunDecide from "../../domain/runs/Decide.js"
import type { RunRecord } from "../../domain/runs/Runs.js"
import { depthProblem, idempotencyKeyProblem, inputSecretProblem, preferenceProblem } from "../../domain/runs/Values.js"
import { ADVERTISEMENT_REFRESH_MS, offerCurrent, silenceOf } from "../../domain/workers/DisplayState.js"
import type { WorkerRecord } from "../../domain/workers/Registry.js"
import { base62FromBytes } from "../../domain/workers/Secrets.js"
import type { AnyDecision, AnyRejection } from "../journal/Projections.js"
import type { FreshnessService } from "../workers/Freshness.js"
import { makeCandidates } from "./Candidates.js"
import type { DispatcherService, Execute, OwnerHostSettings } from "./Dispatcher.js"
import { RunRefused } from "./RunRefused.js"
import type { RunView } from "./RunViews.js"
import { CLAIM_DEADLINE_MS } from "./Supersession.js"
import type { Line } from "./Line.js"
import type { makeWaitingClaims } from "./WaitingClaims.js"

const MAX_INPUT_BYTES = 1024 * 1024

/** What placement uses of the dispatcher. */
export interface PlacementsContext {
  readonly state: Effect.Effect<OwnerState>
  /** A command, then a round when a run waits to be placed. */
  readonly execute: Execute
  /** A command alone (see the Dispatcher's `executeWithoutRound`). */
  readonly executeWithoutRound: Execute
  readonly toRunRefused: (e: { readonly message: string; readonly rejection?: { readonly code: string } }) => RunRefused
  readonly view: (s: OwnerState, run: RunRecord) => RunView
  readonly host: OwnerHostSettings
  readonly entropy: { readonly bytes: (n: number) => Uint8Array }
  /** The id of the run an idempotency key names: derived from the key alone. */
  readonly keyedRunId: (key: string) => string
  readonly freshness: FreshnessService
  readonly claims: ReturnType<typeof makeWaitingClaims>
  /** Tells the scheduler of a deadline, without a round now. */
  readonly hint: (at: number) => Effect.Effect<void>
  /** A full scheduler round. */
  readonly kick: Effect.Effect<void>
  /** Runs an attempt placed on the owner (LocalRuns.ts). */
  readonly startLocal: (runId: string, n: number) => Effect.Effect<void>
  readonly workerAlive: (w: WorkerRecord, now: number) => boolean
  /** When a worker's attempts lapse if it stays silent (Supersession.ts). */
  readonly lapsesAt: (workerId: string, now: number) => number
  /** Until when the restarted owner gives its workers time to call back before it decides what they may take. */
  readonly restartGraceUntil: number
  /** Pending runs whose decision waits for that (their views say so): kept here, read by RunViews. */
  readonly awaitingWorkers: Set<string>
  /** The line of pending runs (Line.ts): kept here, read by RunViews. */
  readonly line: Line
}

export const makePlacements = ({
  state,
  execute,
  executeWithoutRound,
  toRunRefused,
  view,
  host,
  entropy,
  keyedRunId,
  freshness,
  claims,
  hint,
  kick,
  startLocal,
  workerAlive,
  lapsesAt,
  restartGraceUntil,
  awaitingWorkers,
  line
}: PlacementsContext) => {
  const runOf = (s: OwnerState, id: string) => Option.getOrUndefined(HashMap.get(s.runs.runs, id))

  // ---- Admission ------------------------------------------------------------------------

  /**
   * The run an idempotency key named before, answered as it is now (`existing`), when this is the
   * same submission; refused when it is another one under the same key. Undefined: no such run.
   */
  const keyed = (runId: string, c: { readonly key: string; readonly address: string; readonly input: unknown; readonly preferredLabels: ReadonlyArray<string> }) =>
    Effect.gen(function* () {
      const s = yield* state
      const run = runOf(s, runId)
      if (run === undefined) return undefined
      const differs = RunDecide.sameSubmission(run, c)
      if (differs !== undefined) {
        return yield* new RunRefused({ code: "key-used", message: `the idempotency key ${c.key} names run ${run.id} already, and ${differs}: a key names one submission; use another key for another one` })
      }
      return { ...view(s, run), existing: true as const }
    })

  const submit: DispatcherService["submit"] = (i) =>
    Effect.gen(function* () {
      const badPreference = preferenceProblem(i.prefer)
      if (badPreference !== undefined) return yield* new RunRefused({ code: "bad-preference", message: badPreference })
      const key = i.key
      const badKey = key === undefined ? undefined : idempotencyKeyProblem(key)
      if (badKey !== undefined) return yield* new RunRefused({ code: "bad-key", message: badKey })
      const preferredLabels = [...new Set(i.prefer)].sort()
      // With a key, the run's id is derived from it: the same key submitted again (a script's
      // retry after a timeout) finds that run, and answers it instead of making a second one.
      const runId = key === undefined ? `r${base62FromBytes(entropy.bytes(10), 10)}` : keyedRunId(key)
      const asKeyed = key === undefined ? undefined : { key, address: i.address, input: i.input, preferredLabels }
      if (asKeyed !== undefined) {
        const earlier = yield* keyed(runId, asKeyed)
        if (earlier !== undefined) return earlier
      }
      // Before anything writes it as JSON: too deep a document overflows the stack (domain/runs/Values.ts).
      const tooDeep = depthProblem(i.input, "the input")
      if (tooDeep !== undefined) return yield* new RunRefused({ code: "invalid-input", message: tooDeep })
      const secret = inputSecretProblem(i.input, "the input")
      if (secret !== undefined) return yield* new RunRefused({ code: "invalid-input", message: secret })
      const size = Buffer.byteLength(JSON.stringify(i.input ?? null))
      if (size > MAX_INPUT_BYTES) return yield* new RunRefused({ code: "input-too-large", message: `the input is ${size} bytes; at most ${MAX_INPUT_BYTES} are accepted` })
      const resolved = yield* host.resolve(i.address).pipe(Effect.mapError((e) => new RunRefused({ code: "not-runnable", message: e.message })))
      const problem = resolved.inputProblem(i.input)
      if (problem !== undefined) return yield* new RunRefused({ code: "invalid-input", message: problem })
      const job = resolved.job
      const ownerBins = yield* host.bins(job.requiredBins)
      const now = yield* Clock.currentTimeMillis
      let inline = false
      let left = false
      const submitted = yield* handingOff(runId, (s) => {
        const submission = { runId, job, input: i.input, preferredLabels, actor: i.actor, ...(key === undefined ? {} : { key }), now }
        // Placed in the same commit unless an earlier run still waits for room (the scheduler places in order then).
        inline = !earlierRunWaiting(s)
        const decision = inline
          ? RunDecide.decideSubmitAndPlace({ ...submission, candidates: candidatesFor(s, job, now, ownerBins, promisedIn(s)), quotas, notes: NOTES, cache: feasibility, restartGraceUntil, helloRecent: helloRecent(now) }, s.runs)
          : RunDecide.decideSubmit(submission, s.runs)
        left = decision._tag === "Decided" && decision.awaitingWorkers === true
        return decision
      }, now, executeWithoutRound).pipe(
        Effect.map((envelopes) => ({ envelopes })),
        // The same key submitted at the same moment (a retry while the first try's answer is
        // on its way): the run the other made. Or one this owner has forgotten since (the stream
        // is in the journal, the run not in memory: only the latest settled runs are kept).
        Effect.catchIf(
          (e) => asKeyed !== undefined && ((e._tag === "CommandRejected" && e.rejection.code === "run-exists") || e._tag === "StreamConflict"),
          () =>
            Effect.flatMap(keyed(runId, asKeyed!), (earlier) =>
              earlier !== undefined
                ? Effect.succeed({ earlier })
                : Effect.fail(
                    new RunRefused({
                      code: "key-used",
                      message: `the idempotency key ${key} names run ${runId}, submitted earlier and since forgotten by this owner (it keeps the latest settled runs): svc runs show ${runId} says what it became`
                    })
                  )
            )
        ),
        Effect.mapError((e) => (e instanceof RunRefused ? e : toRunRefused(e)))
      )
      if ("earlier" in submitted) return submitted.earlier
      const envelopes = submitted.envelopes
      // Submitted alone: the scheduler places it, after the runs before it.
      if (!inline) yield* kick
      else if (left) yield* undecided(runId)
      yield* afterPlacement(runId, envelopes)
      const s = yield* state
      return view(s, runOf(s, runId)!)
    })

  // ---- Placement ------------------------------------------------------------------------

  /**
   * When each host was last heard to offer what it holds, for a run's declines (`standingDeclines`):
   * a worker's last advertisement as heard (a refresh too); the owner, when it holds the bag the
   * run pins again (`ownerHolds`, asked of its bag store just now, which its own attempts ask as
   * well: so later than any decline of its own).
   */
  const heardIn = (ownerHolds: boolean) => (id: string) => {
    if (id === "owner") return ownerHolds ? Number.POSITIVE_INFINITY : undefined
    const f = freshness.get(id)
    return f === undefined ? undefined : (f.advertisementHeardAt ?? f.lastAdvertisedAt ?? undefined)
  }
  /** Whether the owner holds the bag a run pins (asked only of a run the owner declined: its bag was not installed then). */
  const ownerHoldsPinned = (run: RunRecord) =>
    run.declinedBy.includes("owner")
      ? Effect.match(host.resolve(run.job.address), { onFailure: () => false, onSuccess: (r) => r.job.digest === run.job.digest })
      : Effect.succeed(false)

  const silenceOfWorker = (w: WorkerRecord): Silence | undefined => silenceOf(w, freshness.get(w.id))
  // A worker is judged by its journaled advertisement once the process that runs now has made
  // it: after a hello, not before the session's first advertisement (its last one was its previous
  // process's), though the worker is alive for everything else (its attempts do not lapse).
  const placeable = (w: WorkerRecord, now: number) => workerAlive(w, now) && offerCurrent(freshness.get(w.id), now)
  /** Whether a worker said hello within the advertisement interval and has not advertised since: its advertisement is on its way (`helloPending`). */
  const helloRecent = (now: number) => (id: string) => {
    const f = freshness.get(id)
    return f?.awaitingOffer === true && f.helloAt != null && now - f.helloAt < ADVERTISEMENT_REFRESH_MS
  }
  const { candidatesFor } = makeCandidates(host, placeable, (id) => freshness.get(id)?.busy ?? 0, silenceOfWorker)
  const feasibility = makeFeasibilityCache()

  /**
   * A pending run that may still be placed somewhere (not blocked; or blocked with the owner's
   * decline, which the owner's bag installed again lifts: nothing else asks for a round then, and
   * the attack saw a submission leave it blocked): a new run placed at once would jump ahead of it.
   */
  const earlierRunWaiting = (s: OwnerState): boolean => {
    for (const [id] of s.runs.pending) {
      const run = runOf(s, id)
      if (run !== undefined && (run.placement?.outcome !== "blocked" || run.declinedBy.includes("owner"))) return true
    }
    return false
  }

  /**
   * A placement, with the hand-off to a waiting claim (docs/runs.md, "A waiting claim"): deciding
   * it may take a claim waiting on the chosen worker and start the attempt in the same commit;
   * whatever becomes of the commit, the claim taken is then answered or sent back to look again.
   */
  const handingOff = <E, R>(
    runId: string,
    decide: (s: OwnerState) => RunDecide.RunDecision | RunDecide.RunRejection,
    now: number,
    run: (decide: (s: OwnerState) => AnyDecision | AnyRejection) => Effect.Effect<ReadonlyArray<Envelope>, E, R>
  ) =>
    run((s) => {
      const decision = decide(s)
      if (decision._tag === "Rejected") return decision
      for (const e of decision.events) if (e._tag === "PlacementDecided" && e.host !== null && e.attempt !== null) promises.set(runId, { host: e.host, attempt: e.attempt })
      return RunDecide.decideHandOff(
        decision,
        s.runs,
        (hostId) => {
          const w = Option.getOrUndefined(HashMap.get(s.registry.workers, hostId))
          return w === undefined ? undefined : claims.take(hostId, w.fence, runId)
        },
        now
      )
    }).pipe(
      Effect.onExit((exit) => {
        promises.delete(runId)
        // A claim handed its attempt answers first: the placing fiber's own remaining work waits a turn.
        return Effect.flatMap(claims.settle(runId, Exit.isSuccess(exit) ? exit.value : undefined), (handed) => (handed ? Effect.yieldNow() : Effect.void))
      })
    )

  /**
   * Slots promised by placements decided and not applied yet. A placement decides against the
   * applied state, and appends made in one turn share a commit, so placements decided in the
   * same turn (submissions at once) would all see the same free slot. A promise counts as used
   * on its host until the state holds its attempt (then the ledger counts it), so it is never
   * counted twice.
   */
  const promises = new Map<string, { readonly host: string; readonly attempt: number }>()
  const promisedIn = (s: OwnerState): ReadonlyMap<string, number> | undefined => {
    if (promises.size === 0) return undefined
    const counts = new Map<string, number>()
    for (const [runId, p] of promises) {
      if (runOf(s, runId)?.attempts.some((a) => a.n === p.attempt) === true) continue
      counts.set(p.host, (counts.get(p.host) ?? 0) + 1)
    }
    return counts
  }

  /**
   * A placement that chose a host: the owner starts it; on a worker, the scheduler learns when
   * the attempt could lapse or go unclaimed (without a round now), and the worker's waiting
   * claims are woken, unless one was handed the attempt.
   */
  const afterPlacement = (runId: string, envelopes: ReadonlyArray<Envelope>) =>
    Effect.forEach(
      envelopes,
      ({ event }) => {
        if (event._tag !== "PlacementDecided" || event.host === null || event.attempt === null) return Effect.void
        if (event.host === "owner") return startLocal(runId, event.attempt)
        const deadline = hint(Math.min(lapsesAt(event.host, event.at), event.at + CLAIM_DEADLINE_MS))
        return envelopes.some((e) => e.event._tag === "AttemptStarted" && e.event.attempt === event.attempt) ? deadline : Effect.zipRight(deadline, claims.wake(event.host))
      },
      { discard: true }
    )

  /**
   * A pending run left undecided, right after the owner's start, for a worker that has not called
   * back yet (domain/runs/Decide.ts, `callingBack`): decided when a worker calls (its advertisement
   * asks for a round), at the latest by the round at the grace's end.
   */
  const undecided = (runId: string) =>
    Effect.suspend(() => {
      awaitingWorkers.add(runId)
      return hint(restartGraceUntil)
    })

  const quotas: Quotas = { logical: null, endpoint: null }
  const NOTES = [
    "logical quota: none applies (the limits count detached agents; a job run is not one)",
    "inference endpoint: none (a job run uses no model), so no endpoint capacity and no model were selected"
  ]

  /** The kind of a run without declines, made once per record (records are values: a changed run is a new one). */
  const kinds = new WeakMap<RunRecord, string>()
  const kindOf = (run: RunRecord): string => {
    let kind = kinds.get(run)
    if (kind === undefined) kinds.set(run, (kind = RunDecide.placementKind(run)))
    return kind
  }

  /**
   * Places pending runs in submission order. The first run of each kind (`placementKind`) is
   * decided; once one is left unplaced (waiting, blocked, or not decided yet), every later run of
   * its kind would be too, and is not decided: it waits in line behind it (Line.ts, what its view
   * says). So a round over a backlog of one job is one decision, not one per run, and a change of
   * the fleet records one new decision per kind (docs/runs.md, "A backlog").
   */
  const placePending = (now: number) =>
    Effect.gen(function* () {
      let s = yield* state
      const st = s
      const lineKindOf = (id: string) => {
        const run = runOf(st, id)
        return run === undefined || run.declinedBy.length > 0 ? undefined : kindOf(run)
      }
      if (line.needsMaking(now)) line.make(st.runs.pending, lineKindOf, now)
      else line.join(st.runs.pending, lineKindOf)
      const binsCache = new Map<string, ReadonlyArray<string>>()
      // The first run of each kind this round left unplaced.
      const unplaced = new Set<string>()
      const heads = line.heads(s.runs.pending)
      const sequenceOf = (id: string) => Option.getOrElse(HashMap.get(s.runs.pending, id), () => Number.POSITIVE_INFINITY)
      while (heads.length > 0) {
        // The earliest submitted of the runs to decide (one per kind, and those with declines: a few).
        let k = 0
        for (let i = 1; i < heads.length; i++) if (sequenceOf(heads[i]!.id) < sequenceOf(heads[k]!.id)) k = i
        const { id: runId, kind: lineKind } = heads[k]!
        heads.splice(k, 1)
        const run = runOf(s, runId)
        const next = () => {
          const following = lineKind === undefined ? undefined : line.after(lineKind, s.runs.pending)
          if (following !== undefined) heads.push({ id: following, kind: lineKind })
        }
        if (run === undefined || run.state !== "pending") {
          next()
          continue
        }
        const heardAt = heardIn(yield* ownerHoldsPinned(run))
        const kind = lineKind ?? RunDecide.placementKind(run, heardAt)
        // A run with declines whose kind is that of a first left unplaced (its declines lifted): placed alike, so not now.
        if (unplaced.has(kind)) continue
        const key = run.job.requiredBins.join("\u0000")
        let ownerBins = binsCache.get(key)
        if (ownerBins === undefined) {
          ownerBins = yield* host.bins(run.job.requiredBins)
          binsCache.set(key, ownerBins)
        }
        let left = false
        const envelopes = yield* handingOff(
          runId,
          (st) => {
            const decision = RunDecide.decidePlacement(
              { runId, candidates: candidatesFor(st, runOf(st, runId)!.job, now, ownerBins, promisedIn(st)), quotas, notes: NOTES, now, cache: feasibility, heardAt, restartGraceUntil, helloRecent: helloRecent(now) },
              st.runs
            )
            left = decision._tag === "Decided" && decision.awaitingWorkers === true
            return decision
          },
          now,
          execute
        ).pipe(Effect.catchAll((e) => Effect.as(Effect.logWarning(`placing ${runId}: ${e.message}`), [])))
        if (left) yield* undecided(runId)
        else awaitingWorkers.delete(runId)
        yield* afterPlacement(runId, envelopes)
        s = yield* state
        // Still pending once decided (not placed, nor stopped meanwhile): the rest of its kind waits behind it.
        if (runOf(s, runId)?.state === "pending") {
          unplaced.add(kind)
          if (lineKind !== undefined) line.leftUnplaced(lineKind, runId)
        } else next()
      }
      if (now >= restartGraceUntil) awaitingWorkers.clear()
    })

  return { submit, earlierRunWaiting, placePending }
}
