/**
 * Worker display states (spec: Ready, Busy, Offline, Needs setup), computed at query time from
 * the registry, the runtime freshness and now; never stored (docs/protocol.md has the diagram).
 */
import type { Silence } from "../placement/Placement.js"
import type { WorkerRecord } from "./Registry.js"

export type DisplayState = "Ready" | "Busy" | "Offline" | "Needs setup"

/** Spec: an advertisement not refreshed for 15 seconds has expired. */
export const ADVERTISEMENT_LIFETIME_MS = 15_000
/** Spec: workers refresh the advertisement within 5 seconds. */
export const ADVERTISEMENT_REFRESH_MS = 5_000

export interface Freshness {
  /** When the worker's last advertisement (changed or not) arrived. */
  readonly lastAdvertisedAt: number | null
  /** When the worker last called at all. */
  readonly lastSeenAt: number | null
  /** Slots its last advertisement said were in use by other work (other owners, its own runs). */
  readonly busy: number
  /** Its process said goodbye (`bye`, a clean stop): its session is over, whenever it last called. */
  readonly sessionEnded?: boolean
  /** Its bye said it leaves this owner (`svc workers leave`), not that its runtime stops. */
  readonly leaving?: boolean
  /** The attempts it held when it said bye (then placed again, their slots freed). */
  readonly heldAtEnd?: number
  /**
   * When it last called and last advertised, as heard. `lastSeenAt` and `lastAdvertisedAt` are
   * moved on past a pause of the owner's own (its process stopped, its machine suspended), so that
   * a worker is judged on the silence the owner was there to hear; what is shown is when it was
   * heard (a worker revoked before a pause was shown seen after its revocation). Absent: the same.
   */
  readonly heardAt?: number | null
  readonly advertisementHeardAt?: number | null
  /**
   * It said hello (a new session: its svc serve started again, or the owner did) and has not
   * advertised since: its last advertisement, the journal's, was its previous process's, whose
   * labels, capacity and bags the process now running may no longer have. Placement waits for
   * the session's own (fleet audit: a label removed was honoured, one added denied).
   */
  readonly awaitingOffer?: boolean
  /** When its latest hello came (a new session): with `awaitingOffer`, since when it has not advertised. */
  readonly helloAt?: number | null
}

/** When the worker was last heard from, for showing (not for judging a lapse). */
export const heardAt = (f: Freshness | undefined): number | null => (f === undefined ? null : f.heardAt !== undefined ? f.heardAt : f.lastSeenAt)

export const advertisementAlive = (f: Freshness | undefined, now: number): boolean =>
  f !== undefined && f.sessionEnded !== true && f.lastAdvertisedAt !== null && now - f.lastAdvertisedAt < ADVERTISEMENT_LIFETIME_MS

/**
 * Why a worker's advertisement is not alive, when the owner knows more than "it lapsed": it never
 * advertised, its process said bye (even before advertising in this owner's lifetime), or nothing
 * has been heard from it since the owner started. The owner's display and the placement record
 * both read it from here, so `workers status` and an exclusion never tell one worker two ways.
 */
export const silenceOf = (w: WorkerRecord, f: Freshness | undefined): Silence | undefined => {
  if (w.advertisement === null) return "never"
  if (f?.sessionEnded === true) return "ended"
  if (f?.awaitingOffer === true) return "hello"
  return f === undefined || f.lastAdvertisedAt === null ? "unheard" : undefined
}

/**
 * Whether placement may judge a worker by its journaled advertisement: alive, and made by the
 * process that runs now (not awaiting its session's first advertisement, `silenceOf` "hello").
 */
export const offerCurrent = (f: Freshness | undefined, now: number): boolean => advertisementAlive(f, now) && f!.awaitingOffer !== true

/**
 * How many of this owner's attempts on a worker (`ours`) wait there for a slot, when they and
 * other work (`elsewhere`) come to more than its capacity: the machine runs at most that many.
 */
export const waitingThere = (ours: number, elsewhere: number, capacity: number): number =>
  Math.max(0, Math.min(ours, ours + elsewhere - capacity))

export interface Display {
  readonly state: DisplayState
  /** Why, in words: what a person needs to know to act. */
  readonly reason: string
}

/**
 * `used`: the slots this owner's attempts hold there, plus those the worker says other work holds.
 * Those can add up to more than its capacity (other work took slots after this owner placed there):
 * the machine never runs more than its capacity, so the rest of this owner's attempts wait there.
 */
export const displayState = (w: WorkerRecord, f: Freshness | undefined, used: number, now: number): Display => {
  if (w.revokedAt !== null) return { state: "Offline", reason: "revoked: its calls are refused" }
  // Alive but not advertised in its new session: not judged by its previous process's offer here either.
  const silence = offerCurrent(f, now) ? undefined : silenceOf(w, f)
  if (silence === "never") {
    return { state: "Needs setup", reason: "joined, but its runtime has not advertised yet: run svc serve on the worker" }
  }
  if (silence === "ended") {
    const heard = heardAt(f)
    const ago = heard === null ? "" : ` ${Math.round((now - heard) / 1000)} s ago`
    // Its goodbye said it leaves (svc workers leave), and the leave itself did not arrive (this
    // owner did not answer then): it will not come back under this identity.
    if (f?.leaving === true) {
      return { state: "Offline", reason: `its installation left this owner${ago} (svc workers leave on its machine; its goodbye arrived, not its leave): it will not call again; revoke it (svc workers revoke ${w.id})` }
    }
    return { state: "Offline", reason: `its svc serve stopped cleanly${ago} (it said so): back when it says hello again` }
  }
  if (silence === "hello") {
    const ago = f?.helloAt == null ? "" : ` ${Math.round((now - f.helloAt) / 1000)} s ago`
    return { state: "Offline", reason: `it said hello${ago} (a new session) and has not advertised in it yet: what it offers is not known until it does` }
  }
  const offer = w.advertisement
  if (silence === "unheard" || offer === null || f === undefined || f.lastAdvertisedAt === null) {
    return { state: "Offline", reason: "no advertisement since the owner started" }
  }
  if (!advertisementAlive(f, now)) {
    const advertised = f.advertisementHeardAt ?? f.lastAdvertisedAt
    return { state: "Offline", reason: `last advertisement ${Math.round((now - advertised) / 1000)} s ago (expires after 15 s)` }
  }
  const runnable = offer.artifacts.filter((a) => w.scope.length === 0 || w.scope.includes(a.address))
  if (!offer.capabilities.includes("node") || runnable.length === 0) {
    return {
      state: "Needs setup",
      reason:
        runnable.length === 0
          ? w.scope.length === 0
            ? "it holds no bag jobs: install bags on it with svc bag install"
            : `it holds none of the jobs in its scope (${w.scope.join(", ")})`
          : "it offers no node executor"
    }
  }
  // `used` counts the slots other work holds (f.busy) too: other owners' attempts, the worker's own runs.
  if (used > offer.capacity) {
    const waiting = waitingThere(used - f.busy, f.busy, offer.capacity)
    return {
      state: "Busy",
      reason: `all ${offer.capacity} slots in use${f.busy > 0 ? `, ${Math.min(f.busy, offer.capacity)} of them by other work` : ""}; ${waiting} attempt${waiting === 1 ? "" : "s"} of this owner placed there wait${waiting === 1 ? "s" : ""} for a slot`
    }
  }
  if (used === offer.capacity) return { state: "Busy", reason: `${used} of ${offer.capacity} slots in use${f.busy > 0 ? `, ${f.busy} of them by other work` : ""}` }
  return { state: "Ready", reason: `${offer.capacity - used} of ${offer.capacity} slots free${f.busy > 0 ? `; ${f.busy} in use by other work` : ""}` }
}
