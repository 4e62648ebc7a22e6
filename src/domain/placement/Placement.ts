/**
 * The placement core (spec, worker-protocol.md, "Placement rules"): three layers applied in
 * order, each a pure function that says, for every candidate host, why it is excluded.
 * A later layer never overrides an earlier one: only candidates that pass eligibility are
 * judged for capacity, and only those with room are ranked by preference.
 *
 * Pure: the inputs (the activity, each candidate's view, the ledgers) are values recorded with
 * the decision, so replaying a recorded decision through this code reproduces it (the audit
 * calls `place` without a feasibility cache; the live dispatcher with one).
 */

import { entriesFor, entryFor, type FeasibilityCache } from "./Feasibility.js"

/** Why a candidate was excluded; a closed set of codes, each with readable text. */
export type EligibilityCode =
  | "revoked"
  | "advertisement-expired"
  | "not-remote-eligible"
  | "out-of-scope"
  | "job-not-held"
  | "digest-mismatch"
  | "missing-capability"
  | "missing-label"
  | "missing-bin"
  | "bounds-unenforceable"
  | "declined"

export type CapacityCode = "no-logical-quota" | "no-physical-slot" | "no-endpoint-capacity"

export type Exclusion =
  | { readonly layer: "eligibility"; readonly code: EligibilityCode; readonly text: string }
  | {
      readonly layer: "capacity"
      readonly code: CapacityCode
      readonly text: string
      readonly requested: number
      readonly used: number
      readonly capacity: number
    }

/** What a host offers, as the owner sees it when placing (the owner itself is one). */
export interface Candidate {
  /** `owner`, or the worker id. */
  readonly id: string
  readonly name: string
  readonly isOwner: boolean
  readonly revoked: boolean
  readonly advertisementAlive: boolean
  /** `BAG:JOB@VERSION` the host may claim; empty: every job. */
  readonly scope: ReadonlyArray<string>
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly bins: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<{ readonly address: string; readonly digest: string }>
  readonly slots: { readonly capacity: number; readonly used: number }
}

export interface Activity {
  readonly id: string
  /** `BAG:JOB@VERSION` */
  readonly address: string
  readonly digest: string
  /** The executor the job needs (`node`, `process`). */
  readonly executor: string
  /** Remote eligibility (versioned, node, no secrets, no files): when false it stays on the owner. */
  readonly remoteEligible: boolean
  readonly requiredLabels: ReadonlyArray<string>
  readonly requiredBins: ReadonlyArray<string>
  /** Stated preferences, KEY=VALUE labels; each one a candidate has counts in its favour. */
  readonly preferredLabels: ReadonlyArray<string>
  /** The job's named bounds: a host runs it only if it can enforce bounds (capability `bounds`). */
  readonly bounds: ReadonlyArray<string>
  /** Hosts that declined an earlier attempt of this activity: not offered it again. */
  readonly declinedBy: ReadonlyArray<string>
}

/** The capability a host advertises when it can enforce a job's bounds. No executor has it yet. */
export const BOUNDS_CAPABILITY = "bounds"

/** The logical quota admission reserved, and a shared endpoint's aggregate cap, when used. */
export interface Quotas {
  readonly logical: { readonly capacity: number; readonly used: number } | null
  readonly endpoint: { readonly capacity: number; readonly used: number } | null
}

export interface CandidateVerdict {
  readonly candidate: string
  readonly name: string
  readonly exclusions: ReadonlyArray<Exclusion>
  /** Set for candidates that passed both earlier layers. */
  readonly score: { readonly locality: number; readonly preference: number } | null
}

export type Outcome =
  | { readonly outcome: "placed"; readonly host: string; readonly verdicts: ReadonlyArray<CandidateVerdict> }
  /** No candidate can ever run it as things are configured. */
  | { readonly outcome: "blocked"; readonly verdicts: ReadonlyArray<CandidateVerdict> }
  /** An eligible candidate exists, but none has room now. */
  | { readonly outcome: "waiting"; readonly verdicts: ReadonlyArray<CandidateVerdict> }

const has = (list: ReadonlyArray<string>, x: string) => list.includes(x)
const NONE: ReadonlyArray<Exclusion> = []

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
class Layer1 {
  // Records made at first use, then shared (plain fields, no closures or keys built per candidate).
  // A class, not closures made per decision: one call target for V8 across decisions.
  private revoked: Exclusion | undefined = undefined
  private expired: Exclusion | undefined = undefined
  private notRemote: Exclusion | undefined = undefined
  private outOfScope: Exclusion | undefined = undefined
  private notHeld: Exclusion | undefined = undefined
  private otherDigest: Exclusion | undefined = undefined
  private noExecutor: Exclusion | undefined = undefined
  private unenforceable: Exclusion | undefined = undefined
  private declined: Exclusion | undefined = undefined
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

  private isExpired(c: Candidate): boolean {
    return !c.isOwner && !c.revoked && !c.advertisementAlive
  }
  private isDeclined(c: Candidate): boolean {
    return this.a.declinedBy.length > 0 && has(this.a.declinedBy, c.id)
  }

  /** Whether the moment adds anything to a candidate's static exclusions. */
  momentApplies(c: Candidate): boolean {
    return this.isExpired(c) || this.isDeclined(c)
  }

  /** The static exclusions with the moment's: `expired` in the place after `revoked`, `declined` last. */
  withMoment(c: Candidate, fixed: ReadonlyArray<Exclusion>): ReadonlyArray<Exclusion> {
    const expired = this.isExpired(c)
    const declined = this.isDeclined(c)
    if (!expired && !declined) return fixed
    const out: Array<Exclusion> = []
    if (expired) out.push((this.expired ??= x("advertisement-expired", "its advertisement expired (no refresh for 15 s)")))
    for (const e of fixed) out.push(e)
    if (declined) out.push((this.declined ??= x("declined", "it declined an earlier attempt of this activity")))
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

/** Layer 2 for one decision: the shared ledgers are judged once; a host's slots per distinct count. */
export const capacityOf = (q: Quotas): ((c: Candidate) => ReadonlyArray<Exclusion>) => {
  const logical = q.logical !== null && q.logical.used + 1 > q.logical.capacity ? full("no-logical-quota", "logical quota", q.logical.used, q.logical.capacity) : undefined
  const endpoint = q.endpoint !== null && q.endpoint.used + 1 > q.endpoint.capacity ? full("no-endpoint-capacity", "inference endpoint", q.endpoint.used, q.endpoint.capacity) : undefined
  const slots = new Map<string, Exclusion>()
  return (c) => {
    const noSlot = c.slots.used + 1 > c.slots.capacity
    if (logical === undefined && endpoint === undefined && !noSlot) return NONE
    const out: Array<Exclusion> = []
    if (logical !== undefined) out.push(logical)
    if (noSlot) {
      const k = `${c.slots.used}/${c.slots.capacity}`
      let e = slots.get(k)
      if (e === undefined) {
        e = full("no-physical-slot", "slots", c.slots.used, c.slots.capacity)
        slots.set(k, e)
      }
      out.push(e)
    }
    if (endpoint !== undefined) out.push(endpoint)
    return out
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
const fnv = (h: number, s: string): number => {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}
/** The hash of `activityId` and the separator: the common prefix of every candidate's tie-break. */
const tieBreakPrefix = (activityId: string) => fnv(fnv(FNV_OFFSET, activityId), "\u0000")

/** A deterministic tie-break: FNV-1a of activity and candidate, so a replay picks the same host. */
export const tieBreak = (activityId: string, candidateId: string): number => fnv(tieBreakPrefix(activityId), candidateId)

export const place = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas, cache?: FeasibilityCache): Outcome => {
  const layer1Parts = new Layer1(a)
  const entries = cache === undefined ? undefined : entriesFor(cache, a)
  const staticPart = (c: Candidate) => layer1Parts.staticPart(c)
  const room = capacityOf(q)
  const prefix = tieBreakPrefix(a.id)
  const verdicts: Array<CandidateVerdict> = []
  let eligibleSomewhere = false
  // The best so far, in one pass: locality, then preference, then the tie-break (hashed only on a tie), then id.
  let best: { readonly c: Candidate; readonly score: { locality: number; preference: number }; tie: number | undefined } | undefined
  for (const c of candidates) {
    let layer1: ReadonlyArray<Exclusion>
    if (entries === undefined) layer1 = layer1Parts.withMoment(c, layer1Parts.staticPart(c))
    else {
      const entry = entryFor(entries, c, staticPart)
      if (entry.fixed.length > 0 && !layer1Parts.momentApplies(c)) {
        verdicts.push((entry.verdict ??= { candidate: c.id, name: c.name, exclusions: entry.fixed, score: null }))
        continue
      }
      layer1 = layer1Parts.withMoment(c, entry.fixed)
    }
    if (layer1.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: layer1, score: null })
      continue
    }
    eligibleSomewhere = true
    const layer2 = room(c)
    if (layer2.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: layer2, score: null })
      continue
    }
    const score = preference(c, a)
    verdicts.push({ candidate: c.id, name: c.name, exclusions: NONE, score })
    if (best === undefined) {
      best = { c, score, tie: undefined }
      continue
    }
    const byRank = score.locality - best.score.locality || score.preference - best.score.preference
    if (byRank < 0) continue
    if (byRank > 0) {
      best = { c, score, tie: undefined }
      continue
    }
    best.tie ??= fnv(prefix, best.c.id)
    const tie = fnv(prefix, c.id)
    if (tie < best.tie || (tie === best.tie && c.id < best.c.id)) best = { c, score, tie }
  }
  if (best === undefined) return { outcome: eligibleSomewhere ? "waiting" : "blocked", verdicts }
  return { outcome: "placed", host: best.c.id, verdicts }
}

/** A decision as recorded in the journal: the same data as an `Outcome`, with `host` null unless placed. */
export interface RecordedOutcome {
  readonly outcome: "placed" | "blocked" | "waiting"
  readonly host?: string | null
  readonly verdicts: ReadonlyArray<{ readonly candidate: string; readonly name: string; readonly exclusions: ReadonlyArray<{ readonly layer: string; readonly text: string }> }>
}

/** "placed on owner; excluded: worker 'lab-2' (eligibility: lacks label gpu=true), ..." */
export const explain = (o: RecordedOutcome): string => {
  const who = (id: string, name: string) => (id === "owner" ? "owner" : `worker '${name}'`)
  const excluded = o.verdicts
    .filter((v) => v.exclusions.length > 0)
    .map((v) => `${who(v.candidate, v.name)} (${v.exclusions[0]!.layer}: ${v.exclusions.map((e) => e.text).join("; ")})`)
  const host = o.outcome === "placed" ? (o.host ?? null) : null
  const head = host === null ? o.outcome : `placed on ${who(host, o.verdicts.find((v) => v.candidate === host)?.name ?? host)}`
  return excluded.length === 0 ? head : `${head}; excluded: ${excluded.join(", ")}`
}
