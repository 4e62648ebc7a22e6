/**
 * When each worker last called and last advertised, and how many of its slots its last
 * advertisement said other work holds: runtime state beside the projections, never journaled
 * (docs/journal.md). The worker route writes it; display states and placement
 * (is the advertisement alive?) read it with the current time.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { Freshness as Seen } from "../../domain/workers/DisplayState.js"

export interface FreshnessService {
  readonly get: (workerId: string) => Seen | undefined
  /** A call arrived; `busy`: it advertised, saying this many of its slots are in use by other work. */
  readonly touch: (workerId: string, now: number, advertised: boolean, busy?: number) => void
  /** A claim said how many of its slots other work holds now. Answers whether that is fewer than before. */
  readonly claimed: (workerId: string, busy: number) => boolean
}

export class Freshness extends Context.Tag("svc/Freshness")<Freshness, FreshnessService>() {}

export const make = (): FreshnessService => {
  const seen = new Map<string, { lastSeenAt: number | null; lastAdvertisedAt: number | null; busy: number }>()
  return {
    get: (id) => seen.get(id),
    touch: (id, now, advertised, busy = 0) => {
      const f = seen.get(id) ?? { lastSeenAt: null, lastAdvertisedAt: null, busy: 0 }
      f.lastSeenAt = now
      if (advertised) {
        f.lastAdvertisedAt = now
        f.busy = busy
      }
      seen.set(id, f)
    },
    claimed: (id, busy) => {
      const f = seen.get(id)
      if (f === undefined) return false
      const fewer = busy < f.busy
      f.busy = busy
      return fewer
    }
  }
}

export const layer = Layer.sync(Freshness, make)
