/**
 * When each worker last called and last advertised, and how many of its slots its last
 * advertisement or claim said other work holds: runtime state beside the projections, never journaled
 * (docs/journal.md). The worker route writes it; display states and placement
 * (is the advertisement alive?) read it with the current time.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Freshness as Seen } from "../../domain/workers/DisplayState.js"

export interface FreshnessService {
  readonly get: (workerId: string) => Seen | undefined
  /**
   * A call arrived; `busy`: it said how many of its slots other work holds now (an advertisement, a claim).
   * A session that said goodbye stays ended: a call of that session still in flight when its bye
   * arrived does not bring it back; only a hello does (`begin`).
   */
  readonly touch: (workerId: string, now: number, advertised: boolean, busy?: number) => void
  /** Whether any worker has called since this owner started. */
  readonly heardAny: () => boolean
  /**
   * A hello arrived: a new session, live from now; what it offers is known again at its first
   * advertisement (`awaitingOffer` until then: its last one was the previous process's).
   */
  readonly begin: (workerId: string, now: number) => void
  /** Whether `busy` is fewer slots than the worker said other work held before: room may have freed up. */
  readonly busyFell: (workerId: string, busy: number) => boolean
  /**
   * Its process stopped cleanly (`bye`): its advertisement is over and its session no longer live;
   * `leaving`: it left this owner; `held`: the attempts it held then (placed again at once, their
   * slots freed before the presence check counts them: it says this many).
   */
  readonly end: (workerId: string, leaving?: boolean, held?: number) => void
  /**
   * It declined an attempt: its next advertisement, a refresh of the same content too, lifts
   * that decline (Decide.ts, `standingDeclines`), so it is not answered as a refresh that changes
   * nothing but asks for a round. `declinedSince` says whether it declined since it last
   * advertised (a `touch` that advertises forgets it).
   */
  readonly declined: (workerId: string) => void
  readonly declinedSince: (workerId: string) => boolean
  /**
   * The owner runs at `now`: called on its beat (`beat`: every `OWNER_BEAT_MS`, by the presence
   * check `svc serve` mounts) and before lapses are judged. A longer gap since the last call is
   * time the owner heard nothing (its process stopped by SIGSTOP, a suspended machine, an event
   * loop held for seconds), which is no worker's silence: every time recorded before it is moved
   * on by it (never past `now`), so a worker is judged on the silence the owner was there to
   * hear. Until a beat has been noted, nothing is excused (without a beat a gap says nothing).
   * Answers the milliseconds excused (0 when the beat was on time).
   */
  readonly awake: (now: number, beat?: boolean) => number
  /**
   * The milliseconds excused (the owner's own pauses, as `awake` found them) since `t`: a deadline
   * counted from a time the journal holds (an attempt assigned and not claimed) leaves them out,
   * as a worker's silence does.
   */
  readonly deafSince: (t: number) => number
}

/** How many of the owner's latest pauses `deafSince` keeps (older ones concern no open deadline). */
const PAUSES_KEPT = 64

/** How often the owner notes that it runs (Freshness.awake). */
export const OWNER_BEAT_MS = 1_000
/** A gap between beats longer than this is the owner's own pause, not its beat running late under load. */
export const OWNER_PAUSE_MS = 5_000

/**
 * `freshness.awake(now)`, logging the owner's own pause when there was one: what an operator
 * reading the log of a resumed machine needs, where workers would otherwise look Offline.
 */
export const noteAwake = (freshness: FreshnessService, now: number, beat = false): Effect.Effect<void> => {
  const deaf = freshness.awake(now, beat)
  if (deaf === 0) return Effect.void
  const paused = `did not run for ${Math.round(deaf / 1000)} s (its process was stopped, the machine suspended or overloaded, or its clock stepped forward)`
  // An owner no worker has called (a machine that is only a worker) has no workers to excuse.
  return Effect.logWarning(
    freshness.heardAny() ? `this owner ${paused}: its workers' silence in that time is not held against them` : `this machine ${paused}`
  )
}

export class Freshness extends Context.Tag("svc/Freshness")<Freshness, FreshnessService>() {}

export const make = (): FreshnessService => {
  type Seen = {
    lastSeenAt: number | null
    lastAdvertisedAt: number | null
    busy: number
    sessionEnded?: boolean
    leaving?: boolean
    heardAt: number | null
    advertisementHeardAt: number | null
    declined?: boolean
    heldAtEnd?: number
    awaitingOffer?: boolean
    helloAt?: number
  }
  const seen = new Map<string, Seen>()
  const fresh = (): Seen => ({ lastSeenAt: null, lastAdvertisedAt: null, busy: 0, heardAt: null, advertisementHeardAt: null })
  /** The owner's own pauses, by the middle of their gap. */
  const pauses: Array<{ readonly middle: number; readonly deaf: number }> = []
  let awakeAt: number | undefined
  return {
    get: (id) => seen.get(id),
    heardAny: () => seen.size > 0,
    touch: (id, now, advertised, busy) => {
      const f = seen.get(id) ?? fresh()
      f.lastSeenAt = f.heardAt = now
      if (advertised) {
        f.lastAdvertisedAt = f.advertisementHeardAt = now
        f.declined = false
        f.awaitingOffer = false
      }
      if (busy !== undefined) f.busy = busy
      seen.set(id, f)
    },
    begin: (id, now) => {
      const f = seen.get(id) ?? fresh()
      f.lastSeenAt = f.heardAt = now
      f.sessionEnded = false
      f.leaving = false
      f.heldAtEnd = 0
      f.awaitingOffer = true
      f.helloAt = now
      seen.set(id, f)
    },
    busyFell: (id, busy) => busy < (seen.get(id)?.busy ?? 0),
    declined: (id) => {
      const f = seen.get(id) ?? fresh()
      f.declined = true
      seen.set(id, f)
    },
    declinedSince: (id) => seen.get(id)?.declined === true,
    end: (id, leaving = false, held = 0) => {
      const f = seen.get(id)
      if (f === undefined) return
      f.busy = 0
      f.sessionEnded = true
      f.leaving = leaving
      f.heldAtEnd = held
    },
    awake: (now, beat = false) => {
      if (awakeAt === undefined) {
        if (beat) awakeAt = now
        return 0
      }
      const before = awakeAt
      const gap = now - before
      awakeAt = Math.max(before, now)
      if (gap <= OWNER_PAUSE_MS) return 0
      // The beat's own spacing is time it was listening. What was recorded before the pause (up
      // to a beat after the last one) is moved on; what was recorded after it (a call answered
      // since the resume, before this) is the owner's own hearing, kept as it is: the two lie at
      // either end of the gap, told apart at its middle.
      const deaf = gap - OWNER_BEAT_MS
      const middle = before + gap / 2
      pauses.push({ middle, deaf })
      if (pauses.length > PAUSES_KEPT) pauses.shift()
      const excuse = (t: number | null) => (t !== null && t < middle ? Math.min(now, t + deaf) : t)
      // Only the times judged: `heardAt` and `advertisementHeardAt` stay when they were heard (shown).
      for (const f of seen.values()) {
        f.lastSeenAt = excuse(f.lastSeenAt)
        f.lastAdvertisedAt = excuse(f.lastAdvertisedAt)
      }
      return deaf
    },
    deafSince: (t) => {
      let total = 0
      for (const p of pauses) if (p.middle > t) total += p.deaf
      return total
    }
  }
}

export const layer = Layer.sync(Freshness, make)
