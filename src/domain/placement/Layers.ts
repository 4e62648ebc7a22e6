/**
 * The three layers of placement as pure functions (docs/placement.md), shared by `place`'s two
 * loops: without a cache (what the audit replays) and with one (what the dispatcher runs,
 * src/domain/placement/Feasibility.ts). Both must judge alike; a property test holds them to it.
 */
import type { Activity, CapacityCode, Candidate, CandidateVerdict, EligibilityCode, Exclusion, Outcome, Quotas } from "./Placement.js"

/** The revision of the placement rules an activity's decision is made by: one recorded before revisions is revision 1. */
export const rulesOf = (a: Pick<Activity, "rules">): number => a.rules ?? 1

/** The capability a host advertises when it can enforce a job's bounds. No executor has it yet. */
export const BOUNDS_CAPABILITY = "bounds"

/** The moment's first part of layer 1: a worker, not revoked, whose advertisement lapsed (the owner's never does). */
export const isExpired = (c: Candidate): boolean => !c.isOwner && !c.revoked && !c.advertisementAlive

export const has = (list: ReadonlyArray<string>, x: string) => list.includes(x)
export const NONE: ReadonlyArray<Exclusion> = []

const x = (code: EligibilityCode, text: string): Exclusion => ({ layer: "eligibility", code, text })

/**
 * Layer 1 for one activity, in two parts. The static part depends only on the activity's
 * requirements and the candidate's configuration (scope, advertisement, revocation), so a
 * feasibility cache may keep it between decisions; the moment's part (advertisement alive,
 * declined this activity) is judged every time. `eligibilityOf` joins them, in one order.
 *
 * The exclusion records depend only on the activity (and the label or program named), so each
 * is made once per decision and shared by every candidate it applies to. That keeps a decision
 * over 10,000 candidates from building 10,000 copies.
 */
export class Layer1 {
  // Records made at first use, then shared (plain fields, no closures or keys built per candidate).
  // A class, not closures made per decision: one call target for V8 across decisions.
  private revoked: Exclusion | undefined = undefined
  private expired: Exclusion | undefined = undefined
  private ended: Exclusion | undefined = undefined
  private unheard: Exclusion | undefined = undefined
  private never: Exclusion | undefined = undefined
  private hello: Exclusion | undefined = undefined
  private notRemote: Exclusion | undefined = undefined
  private outOfScope: Exclusion | undefined = undefined
  private notHeld: Exclusion | undefined = undefined
  private otherDigest: Exclusion | undefined = undefined
  private noExecutor: Exclusion | undefined = undefined
  private unenforceable: Exclusion | undefined = undefined
  private declined: Exclusion | undefined = undefined
  private ownerDeclined: Exclusion | undefined = undefined
  private readonly labels = new Map<string, Exclusion>()
  private readonly bins = new Map<string, Exclusion>()
  constructor(private readonly a: Activity) {}

  /** Everything but the moment's part (revoked comes first; `expired` goes right after it). */
  staticPart(c: Candidate): ReadonlyArray<Exclusion> {
    const a = this.a
    let out: Array<Exclusion> | undefined
    if (!c.isOwner) {
      if (c.revoked) (out ??= []).push((this.revoked ??= x("revoked", "revoked")))
      if (!a.remoteEligible) (out ??= []).push((this.notRemote ??= x("not-remote-eligible", `${a.address} is not remote-eligible: it stays on the owner`)))
      if (c.scope.length > 0 && !has(c.scope, a.address)) (out ??= []).push((this.outOfScope ??= x("out-of-scope", `${a.address} is outside its scope`)))
      // A job that stays on the owner is not advertised by the workers that hold it: whether one
      // does is not known, and revision 2 of the rules no longer says it does not.
      if (a.remoteEligible || rulesOf(a) < 2) {
        let held: Candidate["artifacts"][number] | undefined
        for (const h of c.artifacts) {
          if (h.address === a.address) {
            held = h
            break
          }
        }
        if (held === undefined) (out ??= []).push((this.notHeld ??= x("job-not-held", `it does not hold ${a.address}`)))
        else if (held.digest !== a.digest) (out ??= []).push((this.otherDigest ??= x("digest-mismatch", `it holds ${a.address} with another digest`)))
      }
    }
    if (!has(c.capabilities, a.executor)) (out ??= []).push((this.noExecutor ??= x("missing-capability", `lacks the ${a.executor} executor`)))
    for (const label of a.requiredLabels) {
      if (has(c.labels, label)) continue
      let e = this.labels.get(label)
      if (e === undefined) this.labels.set(label, (e = x("missing-label", `lacks label ${label}`)))
      ;(out ??= []).push(e)
    }
    for (const bin of a.requiredBins) {
      if (has(c.bins, bin)) continue
      let e = this.bins.get(bin)
      if (e === undefined) this.bins.set(bin, (e = x("missing-bin", `lacks program ${bin}`)))
      ;(out ??= []).push(e)
    }
    if (a.bounds.length > 0 && !has(c.capabilities, BOUNDS_CAPABILITY)) {
      ;(out ??= []).push((this.unenforceable ??= x("bounds-unenforceable", `cannot enforce the job's bounds (${a.bounds.join(", ")})`)))
    }
    return out ?? NONE
  }

  /** Why a worker's advertisement is not alive, in words: one code, `advertisement-expired`, whatever the cause. */
  private expiry(c: Candidate): Exclusion {
    switch (c.silence) {
      case "ended":
        return (this.ended ??= x("advertisement-expired", "its svc serve stopped cleanly (it said so)"))
      case "unheard":
        return (this.unheard ??= x("advertisement-expired", "no advertisement from it since the owner started"))
      case "never":
        return (this.never ??= x("advertisement-expired", "it has not advertised yet"))
      case "hello":
        return (this.hello ??= x("advertisement-expired", "it started a new session (said hello) and has not advertised in it yet: what it offers now is not known"))
      default:
        return (this.expired ??= x("advertisement-expired", "its advertisement expired (no refresh for 15 s)"))
    }
  }

  /** Whether the candidate with this id declined an earlier attempt of the activity. */
  isDeclined(id: string): boolean {
    return this.a.declinedBy.length > 0 && has(this.a.declinedBy, id)
  }

  /** The static exclusions with the moment's: `expired` in the place after `revoked`, `declined` last. */
  withMoment(c: Candidate, fixed: ReadonlyArray<Exclusion>): ReadonlyArray<Exclusion> {
    const expired = isExpired(c)
    const declined = this.isDeclined(c.id)
    if (!expired && !declined) return fixed
    // Nothing advertised (or nothing by the process that runs now: its last advertisement was
    // its previous process's): what it lacks (jobs, executors, labels) is only that, said once.
    if (expired && (c.silence === "never" || c.silence === "hello")) return [this.expiry(c)]
    const out: Array<Exclusion> = []
    if (expired) out.push(this.expiry(c))
    for (const e of fixed) out.push(e)
    if (declined) {
      // Since revision 3 it says until when: a worker's decline stands until it advertises again;
      // the owner declines only an attempt whose bag it no longer holds (runs/LocalRuns.ts).
      if (rulesOf(this.a) < 3) out.push((this.declined ??= x("declined", "it declined an earlier attempt of this activity")))
      else if (c.isOwner) out.push((this.ownerDeclined ??= x("declined", "it declined an earlier attempt of this activity: the bag the run pins is no longer installed on it")))
      else out.push((this.declined ??= x("declined", "it declined an earlier attempt of this activity, and has not advertised since (or declined it 3 times)")))
    }
    return out
  }
}

/** Layer 1 for one activity: every reason each candidate can never run it as configured. */
export const eligibilityOf = (a: Activity): ((c: Candidate) => ReadonlyArray<Exclusion>) => {
  const layer1 = new Layer1(a)
  return (c) => layer1.withMoment(c, layer1.staticPart(c))
}

/** Layer 1: every reason this candidate can never run this activity as configured. */
export const eligibility = (c: Candidate, a: Activity): ReadonlyArray<Exclusion> => eligibilityOf(a)(c)

const full = (code: CapacityCode, what: string, used: number, cap: number): Exclusion => ({
  layer: "capacity",
  code,
  text: `${what}: ${used} of ${cap} in use`,
  requested: 1,
  used,
  capacity: cap
})

/** The shared ledgers' exclusions for one decision: each one without room, or undefined. */
export const ledgerExclusions = (q: Quotas): { readonly logical: Exclusion | undefined; readonly endpoint: Exclusion | undefined } => ({
  logical: q.logical !== null && q.logical.used + 1 > q.logical.capacity ? full("no-logical-quota", "logical quota", q.logical.used, q.logical.capacity) : undefined,
  endpoint: q.endpoint !== null && q.endpoint.used + 1 > q.endpoint.capacity ? full("no-endpoint-capacity", "inference endpoint", q.endpoint.used, q.endpoint.capacity) : undefined
})

/** Whether a host's slots leave no room for one more activity. */
export const slotsFull = (slots: Candidate["slots"]): boolean => slots.used + 1 > slots.capacity
/** The record of slots without room: `requested` 1, `used` of `capacity` in use. */
export const noSlot = (slots: Candidate["slots"]): Exclusion => full("no-physical-slot", "slots", slots.used, slots.capacity)

/** Layer 2's exclusions in their one order: the logical quota, the host's slots, the endpoint. */
export const layer2Of = (logical: Exclusion | undefined, slot: Exclusion | undefined, endpoint: Exclusion | undefined): ReadonlyArray<Exclusion> => {
  if (logical === undefined && slot === undefined && endpoint === undefined) return NONE
  const out: Array<Exclusion> = []
  if (logical !== undefined) out.push(logical)
  if (slot !== undefined) out.push(slot)
  if (endpoint !== undefined) out.push(endpoint)
  return out
}

/** Layer 2 for one decision: the shared ledgers are judged once; a host's slots per distinct count. */
export const capacityOf = (q: Quotas): ((c: Candidate) => ReadonlyArray<Exclusion>) => {
  const { logical, endpoint } = ledgerExclusions(q)
  const slots = new Map<string, Exclusion>()
  return (c) => {
    if (!slotsFull(c.slots)) return layer2Of(logical, undefined, endpoint)
    const k = `${c.slots.used}/${c.slots.capacity}`
    let e = slots.get(k)
    if (e === undefined) slots.set(k, (e = noSlot(c.slots)))
    return layer2Of(logical, e, endpoint)
  }
}

/** Layer 2: every ledger without room, with requested, used and capacity. */
export const capacity = (c: Candidate, q: Quotas): ReadonlyArray<Exclusion> => capacityOf(q)(c)

/** Layer 3: locality first (the owner keeps what it can run), then stated preferences. */
export const preference = (c: Candidate, a: Activity) => {
  let matched = 0
  for (const l of a.preferredLabels) if (has(c.labels, l)) matched++
  return { locality: c.isOwner ? 1 : 0, preference: matched }
}

const FNV_OFFSET = 0x811c9dc5
export const fnv = (h: number, s: string): number => {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}
/** The hash of `activityId` and the separator: the common prefix of every candidate's tie-break. */
export const tieBreakPrefix = (activityId: string) => fnv(fnv(FNV_OFFSET, activityId), "\u0000")

/** A deterministic tie-break: FNV-1a of activity and candidate, so a replay picks the same host. */
export const tieBreak = (activityId: string, candidateId: string): number => fnv(tieBreakPrefix(activityId), candidateId)

/**
 * The best host of a decision, found in one pass: locality, then preference, then the
 * tie-break (hashed only on a tie), then id. Fields of numbers only, set from the start: a hash
 * (a uint32, often past the small-integer range) stored into a field that held `undefined`
 * changed the object's shape, and V8 threw away `place`'s optimized code over it again and
 * again (`--trace-deopt`: "wrong map").
 */
export class Ranking {
  best: string | undefined = undefined
  private locality = 0
  private preference = 0
  /** The best's tie-break hash, -1 until a tie needs it. */
  private tie = -1
  constructor(private readonly prefix: number) {}

  consider(id: string, locality: number, preference: number): void {
    const best = this.best
    const byRank = best === undefined ? 1 : locality - this.locality || preference - this.preference
    if (byRank < 0) return
    if (byRank === 0) {
      if (this.tie < 0) this.tie = fnv(this.prefix, best!)
      const tie = fnv(this.prefix, id)
      if (tie > this.tie || (tie === this.tie && id > best!)) return
      this.tie = tie
    } else this.tie = -1
    this.best = id
    this.locality = locality
    this.preference = preference
  }
}

/** Placed on the best host; else waiting when some candidate was eligible, blocked when none was. */
export const outcomeOf = (best: string | undefined, eligibleSomewhere: boolean, verdicts: ReadonlyArray<CandidateVerdict>): Outcome =>
  best === undefined ? { outcome: eligibleSomewhere ? "waiting" : "blocked", verdicts } : { outcome: "placed", host: best, verdicts }
