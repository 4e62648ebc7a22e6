/**
 * The owner's log says when a worker starts advertising (it can take work, or it needs setup
 * first, and why: the audit of the docs found "it can take work" logged for a worker that held none
 * of the jobs in its scope) and when its setup changes while it advertises, and when it goes
 * Offline (no advertisement for 15 s: the attempts it held are placed again), once per change:
 * what an operator watching `svc serve`'s log, or alerting on it, wants to see. And each audit
 * row as it is recorded (a takeover or a revocation as a warning), checked on the same beat.
 *
 * Display states stay what they are, computed at query time and never journaled (Owner.status);
 * this watches the one part of them that changes with time alone, whether the advertisement is
 * alive, checking every second. `svc serve` mounts it.
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type { AuditRow } from "../../domain/workers/Audit.js"
import { ADVERTISEMENT_LIFETIME_MS, advertisementAlive, displayState } from "../../domain/workers/DisplayState.js"
import { Projections } from "../journal/Projections.js"
import { heldCount } from "../runs/WorkerCalls.js"
import { Freshness, noteAwake } from "./Freshness.js"

export const CHECK_EVERY = Duration.seconds(1)

/** A worker at one check: whether its advertisement is alive. */
export interface Sighting {
  readonly id: string
  readonly name: string
  readonly alive: boolean
  /** Not alive because its runtime said goodbye (`bye`, a clean stop), not because it fell silent. */
  readonly ended?: boolean
  /** Alive, but it needs setup before it can take work: why (its display state's reason). */
  readonly setup?: string
}

/** What a check tells of a worker: silent, or advertising and able to take work, or needing setup (and why). */
const shownOf = (s: Sighting): string => (s.alive ? (s.setup === undefined ? "ready" : `setup: ${s.setup}`) : "silent")

/**
 * What changed since the last check (`before`: each worker's `shownOf` then). A worker seen for
 * the first time is news only if it advertises (after the owner starts, every worker is first seen
 * silent until it calls).
 */
export const presenceChanges = (before: ReadonlyMap<string, string>, now: ReadonlyArray<Sighting>): ReadonlyArray<Sighting> =>
  now.filter((w) => (before.get(w.id) ?? "silent") !== shownOf(w))

/** Each worker's `shownOf`, for the next check's `presenceChanges`. */
export const shownNow = (now: ReadonlyArray<Sighting>): ReadonlyMap<string, string> => new Map(now.map((s) => [s.id, shownOf(s)] as const))

/** The log line; `held`: the attempts the worker was running, which are placed again once it is Offline. */
export const lineOf = (c: Sighting, held: number): string =>
  c.alive
    ? c.setup === undefined
      ? `worker ${c.name} (${c.id}) is advertising: it can take work`
      : `worker ${c.name} (${c.id}) is advertising, but needs setup before it can take work: ${c.setup}`
    : `worker ${c.name} (${c.id}) is Offline: ${c.ended === true ? "its svc serve stopped cleanly (it said so)" : `no advertisement for ${ADVERTISEMENT_LIFETIME_MS / 1000} s`}${
        held === 0 ? "" : `; the ${held === 1 ? "attempt" : `${held} attempts`} it held ${held === 1 ? "is" : "are"} placed again`
      }`

/**
 * An audit row as a line of the owner's log (invites, joins, rotations, revocations, takeovers:
 * the spec's audit rows, also in `svc audit`); `name`: the worker's, when the row is about one.
 */
export const auditLine = (row: AuditRow, name: string | undefined): string =>
  // The time it was recorded: the line's own is when it was logged, up to a beat later, and rows
  // close together are logged together (an invite and a join 0.7 s apart read as one moment).
  `audit: ${row.kind}${row.workerId === null ? "" : ` of worker ${name ?? "?"} (${row.workerId})`}: ${row.detail}; by ${row.actor} (recorded ${new Date(row.at).toISOString()})`

/** Rows an operator must not miss: another process took a session over, a worker or invite was revoked. */
const WARNING_KINDS: ReadonlySet<AuditRow["kind"]> = new Set(["takeover", "revocation"])

/**
 * How loud an audit row is in the log: a takeover or a revocation is a warning, for alerting;
 * but not a worker's own revocation (it left, `svc workers leave`, or its installation joined
 * again), which its operator or the machine's asked for.
 */
export const auditLevel = (row: AuditRow): "warning" | "info" =>
  WARNING_KINDS.has(row.kind) && !(row.kind === "revocation" && row.actor.startsWith("worker ")) ? "warning" : "info"

export const run = Effect.gen(function* () {
  const projections = yield* Projections
  const freshness = yield* Freshness
  let seen: ReadonlyMap<string, string> = new Map()
  // The audit rows from the start are history: only those after it are news.
  let audited = Option.match(Chunk.last((yield* projections.state).audit), { onNone: () => 0, onSome: (r) => r.sequence })
  const check = Effect.gen(function* () {
    const state = yield* projections.state
    const { registry } = state
    // The rows after the last one logged, found from the end (usually none).
    let first = Chunk.size(state.audit)
    while (first > 0 && Chunk.unsafeGet(state.audit, first - 1).sequence > audited) first--
    for (const row of Chunk.drop(state.audit, first)) {
      const worker = row.workerId === null ? undefined : HashMap.get(registry.workers, row.workerId).pipe(Option.getOrUndefined)
      const line = auditLine(row, worker?.name)
      yield* auditLevel(row) === "warning" ? Effect.logWarning(line) : Effect.logInfo(line)
      audited = row.sequence
    }
    const now = yield* Clock.currentTimeMillis
    // The owner's beat (every second): a pause of its own is excused before anyone is judged Offline for it.
    yield* noteAwake(freshness, now, true)
    const sightings: Array<Sighting> = []
    // Revoked workers are left out: their revocation is in the audit, and they never call again.
    for (const w of HashMap.values(registry.workers)) {
      if (w.revokedAt === null && w.advertisement !== null) {
        const f = freshness.get(w.id)
        const alive = advertisementAlive(f, now)
        // Needs setup is said as `svc workers status` says it (the slots used do not matter to it).
        const shown = alive ? displayState(w, f, 0, now) : undefined
        sightings.push({ id: w.id, name: w.name, alive, ended: f?.sessionEnded === true, ...(shown?.state === "Needs setup" ? { setup: shown.reason } : {}) })
      }
    }
    for (const change of presenceChanges(seen, sightings)) {
      // Its attempts that still count, or that the lapse superseded already (the scheduler may have been first): placed again.
      // A worker that said bye: what it held then (its slots were freed at once, before this check).
      const heldNow = change.alive ? 0 : heldCount(state, change.id)
      const held = change.ended === true ? Math.max(heldNow, freshness.get(change.id)?.heldAtEnd ?? 0) : heldNow
      // Falling silent is a warning; a clean stop, said, is not.
      yield* change.alive || change.ended === true ? Effect.logInfo(lineOf(change, held)) : Effect.logWarning(lineOf(change, held))
    }
    seen = shownNow(sightings)
  })
  yield* Effect.repeat(check, Schedule.spaced(CHECK_EVERY)).pipe(Effect.forkScoped)
})

export const layer = Layer.scopedDiscard(run)
