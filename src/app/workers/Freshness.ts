/**
 * When each worker last called and last advertised, and how many of its slots its last
 * advertisement or claim said other work holds: runtime state beside the projections, never journaled
 * (docs/journal.md). The worker route writes it; display states and placement
 * (is the advertisement alive?) read it with the current time.
 */
import * as Context from "effect/Context"
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
  /** A hello arrived: a new session, live from now. */
  readonly begin: (workerId: string, now: number) => void
  /** Whether `busy` is fewer slots than the worker said other work held before: room may have freed up. */
  readonly busyFell: (workerId: string, busy: number) => boolean
  /** Its process stopped cleanly (`bye`): its advertisement is over and its session no longer live. */
  readonly end: (workerId: string) => void
}

export class Freshness extends Context.Tag("svc/Freshness")<Freshness, FreshnessService>() {}

export const make = (): FreshnessService => {
  const seen = new Map<string, { lastSeenAt: number | null; lastAdvertisedAt: number | null; busy: number; sessionEnded?: boolean }>()
  return {
    get: (id) => seen.get(id),
    touch: (id, now, advertised, busy) => {
      const f = seen.get(id) ?? { lastSeenAt: null, lastAdvertisedAt: null, busy: 0 }
      f.lastSeenAt = now
      if (advertised) f.lastAdvertisedAt = now
      if (busy !== undefined) f.busy = busy
      seen.set(id, f)
    },
    begin: (id, now) => {
      const f = seen.get(id) ?? { lastSeenAt: null, lastAdvertisedAt: null, busy: 0 }
      f.lastSeenAt = now
      f.sessionEnded = false
      seen.set(id, f)
    },
    busyFell: (id, busy) => busy < (seen.get(id)?.busy ?? 0),
    end: (id) => {
      const f = seen.get(id)
      if (f === undefined) return
      f.busy = 0
      f.sessionEnded = true
    }
  }
}

export const layer = Layer.sync(Freshness, make)
