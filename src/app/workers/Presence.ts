/**
 * The owner's log says when a worker starts advertising (it can take work) and when it goes
 * Offline (no advertisement for 15 s: the attempts it held are placed again), once per change:
 * what an operator watching `svc serve`'s log, or alerting on it, wants to see.
 *
 * Display states stay what they are, computed at query time and never journaled (Owner.status);
 * this watches the one part of them that changes with time alone, whether the advertisement is
 * alive, checking every second. `svc serve` mounts it.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { ADVERTISEMENT_LIFETIME_MS, advertisementAlive } from "../../domain/workers/DisplayState.js"
import { Projections } from "../journal/Projections.js"
import { Freshness } from "./Freshness.js"

export const CHECK_EVERY = Duration.seconds(1)

export interface Sighting {
  readonly id: string
  readonly name: string
  readonly alive: boolean
}

export interface PresenceChange {
  readonly id: string
  readonly name: string
  /** True: it advertises now; false: its advertisement lapsed. */
  readonly alive: boolean
}


/**
 * What changed since the last check. A worker seen for the first time is news only if it
 * advertises (after the owner starts, every worker is first seen silent until it calls).
 */
export const presenceChanges = (before: ReadonlyMap<string, boolean>, now: ReadonlyArray<Sighting>): ReadonlyArray<PresenceChange> =>
  now.filter((w) => (before.get(w.id) ?? false) !== w.alive).map(({ alive, id, name }) => ({ id, name, alive }))

export const lineOf = (c: PresenceChange, held: number): string =>
  c.alive
    ? `worker ${c.name} (${c.id}) is advertising: it can take work`
    : `worker ${c.name} (${c.id}) is Offline: no advertisement for ${ADVERTISEMENT_LIFETIME_MS / 1000} s${
        held === 0 ? "" : `; the ${held === 1 ? "attempt" : `${held} attempts`} it held ${held === 1 ? "is" : "are"} placed again`
      }`

export const run = Effect.gen(function* () {
  const projections = yield* Projections
  const freshness = yield* Freshness
  let seen: ReadonlyMap<string, boolean> = new Map()
  const check = Effect.gen(function* () {
    const { registry, runs } = yield* projections.state
    const now = yield* Clock.currentTimeMillis
    const sightings: Array<Sighting> = []
    // Revoked workers are left out: their revocation is in the audit, and they never call again.
    for (const w of HashMap.values(registry.workers)) {
      if (w.revokedAt === null && w.advertisement !== null) sightings.push({ id: w.id, name: w.name, alive: advertisementAlive(freshness.get(w.id), now) })
    }
    for (const change of presenceChanges(seen, sightings)) {
      const held = Option.match(HashMap.get(runs.held, change.id), { onNone: () => 0, onSome: (ids) => ids.length })
      yield* change.alive ? Effect.logInfo(lineOf(change, held)) : Effect.logWarning(lineOf(change, held))
    }
    seen = new Map(sightings.map((s) => [s.id, s.alive] as const))
  })
  yield* Effect.repeat(check, Schedule.spaced(CHECK_EVERY)).pipe(Effect.forkScoped)
})

export const layer = Layer.scopedDiscard(run)
