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

import { placeWithCache, type FeasibilityCache } from "./Feasibility.js"
import { capacityOf, Layer1, NONE, outcomeOf, preference, Ranking, tieBreakPrefix } from "./Layers.js"

export { BOUNDS_CAPABILITY, capacity, capacityOf, eligibility, eligibilityOf, preference, tieBreak } from "./Layers.js"

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

export type Silence = "ended" | "unheard" | "never" | "hello"

/** What a host offers, as the owner sees it when placing (the owner itself is one). */
export interface Candidate {
  /** `owner`, or the worker id. */
  readonly id: string
  readonly name: string
  readonly isOwner: boolean
  readonly revoked: boolean
  readonly advertisementAlive: boolean
  /**
   * Why a worker's advertisement is not alive, when the owner knows better than "it lapsed":
   * `ended`, its svc serve said bye; `unheard`, nothing from it since the owner started;
   * `never`, it never advertised; `hello`, its svc serve started a new session (said hello) and
   * has not advertised in it yet, so what it offers now is not known (its last advertisement was
   * its previous process's). Absent: it lapsed (or a decision recorded before this field).
   */
  readonly silence?: Silence
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
  /**
   * Hosts that declined an earlier attempt of this activity: not offered it again. Since revision
   * 3, only those not heard advertising since their latest decline (or that declined it 3 times).
   */
  readonly declinedBy: ReadonlyArray<string>
  /**
   * The revision of the placement rules the decision is made by (docs/placement.md, "Rules
   * revisions"): absent in decisions recorded before there were revisions, which are judged by
   * revision 1 again when audited; a decision made now says `PLACEMENT_RULES`.
   */
  readonly rules?: number
}

/**
 * The placement rules' revision decisions are made by now. 2: a worker is not also said not to
 * hold a job that is not remote-eligible (it advertises only the jobs it may be given, so whether
 * it holds one that stays on the owner is not known; revision 1 said "it does not hold" it).
 * 3: a decline stands until the host is heard advertising after it, at most 3 declines (the owner
 * lists in `declinedBy` only the declines that stand: runs/Decide.ts `standingDeclines`), and
 * `declined` says so; the owner declines an attempt whose pinned bag it no longer holds.
 */
export const PLACEMENT_RULES = 3

export { rulesOf } from "./Layers.js"


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

/**
 * Places one activity: every candidate's verdict, in the candidates' order, and the outcome.
 * With a feasibility cache (the dispatcher's) the answer is the same, in less time over a
 * fleet that changes little between decisions; without one (the audit's) everything is judged
 * from the inputs alone.
 */
export const place = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas, cache?: FeasibilityCache): Outcome =>
  cache === undefined ? placeFromScratch(a, candidates, q) : placeWithCache(a, candidates, q, cache)

const placeFromScratch = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas): Outcome => {
  const layer1 = new Layer1(a)
  const room = capacityOf(q)
  const ranking = new Ranking(tieBreakPrefix(a.id))
  const verdicts: Array<CandidateVerdict> = []
  let eligibleSomewhere = false
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!
    const excluded = layer1.withMoment(c, layer1.staticPart(c))
    if (excluded.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: excluded, score: null })
      continue
    }
    eligibleSomewhere = true
    const full = room(c)
    if (full.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: full, score: null })
      continue
    }
    const score = preference(c, a)
    verdicts.push({ candidate: c.id, name: c.name, exclusions: NONE, score })
    ranking.consider(c.id, score.locality, score.preference)
  }
  return outcomeOf(ranking.best, eligibleSomewhere, verdicts)
}

/** A decision as recorded in the journal: the same data as an `Outcome`, with `host` null unless placed. */
export interface RecordedOutcome {
  readonly outcome: "placed" | "blocked" | "waiting"
  readonly host?: string | null
  readonly verdicts: ReadonlyArray<RecordedVerdict>
}

/**
 * A decision's verdicts read by index: what explaining a decision and keying it need of them.
 * A decision in memory answers from its verdicts; one read from the journal answers from its
 * stored (packed) rows, so a replay explains every decision without making its verdicts
 * (PlacementPacking.ts, `verdictTableOf`).
 */
export interface VerdictTable {
  readonly size: number
  candidate(i: number): string
  name(i: number): string
  exclusionCount(i: number): number
  exclusion(i: number, j: number): { readonly layer: string; readonly code: string; readonly text: string }
}

export type RecordedVerdict = {
  readonly candidate: string
  readonly name: string
  readonly exclusions: ReadonlyArray<{ readonly layer: string; readonly code: string; readonly text: string }>
}

/** The table of verdicts in memory. */
export class VerdictList implements VerdictTable {
  constructor(private readonly verdicts: ReadonlyArray<RecordedVerdict>) {}
  get size() {
    return this.verdicts.length
  }
  candidate(i: number) {
    return this.verdicts[i]!.candidate
  }
  name(i: number) {
    return this.verdicts[i]!.name
  }
  exclusionCount(i: number) {
    return this.verdicts[i]!.exclusions.length
  }
  exclusion(i: number, j: number) {
    return this.verdicts[i]!.exclusions[j]!
  }
}

/**
 * "placed on owner; excluded: worker 'lab-2' (eligibility: lacks label gpu=true), ...": every
 * excluded host, or the first `limit` of them and how many more.
 */
export const explain = (o: RecordedOutcome, limit = Infinity): string => explainTable(o.outcome, o.host ?? null, new VerdictList(o.verdicts), limit)

/**
 * A host as explanations name it: `owner`, or `worker 'lab-1'`; with its id when another host
 * carries the same name (`worker 'lab-1' (wIh51WqcT73)`): a machine that joined again has a new
 * identity under the old name, and its revoked one is still a candidate.
 */
export const hostWords = (id: string, name: string, withId = false): string => (id === "owner" ? "owner" : withId ? `worker '${name}' (${id})` : `worker '${name}'`)

/**
 * The names more than one worker carries (two ids, one name: a machine that joined again), or
 * undefined when each is unique, the usual case; the owner is never counted. Read by index
 * (`size` hosts, `idAt`, `nameAt`), so a verdict table, a run's attempts or the registry serve
 * without being copied: explanations, `runs show`, `runs list` and `journal history` all ask it.
 */
export const sharedNames = (size: number, idAt: (i: number) => string, nameAt: (i: number) => string): ReadonlySet<string> | undefined => {
  const firstId = new Map<string, string>()
  let shared: Set<string> | undefined
  for (let i = 0; i < size; i++) {
    const id = idAt(i)
    if (id === "owner") continue
    const name = nameAt(i)
    const first = firstId.get(name)
    if (first === undefined) firstId.set(name, id)
    else if (first !== id) (shared ??= new Set()).add(name)
  }
  return shared
}

/** `explain` of an outcome whose verdicts are read from `t`. */
export const explainTable = (outcome: RecordedOutcome["outcome"], host: string | null, t: VerdictTable, limit = Infinity): string => {
  const shared = sharedNames(t.size, (i) => t.candidate(i), (i) => t.name(i))
  const words = (i: number) => hostWords(t.candidate(i), t.name(i), shared?.has(t.name(i)) === true)
  const named: Array<string> = []
  let excluded = 0
  let revokedLeft = 0
  let hostWordsOf: string | undefined
  const name = (i: number, n: number) => {
    const texts: Array<string> = []
    for (let j = 0; j < n; j++) texts.push(t.exclusion(i, j).text)
    named.push(`${words(i)} (${t.exclusion(i, 0).layer}: ${texts.join("; ")})`)
  }
  // Revoked identities are named after the others (since projection form 6): a day of revocations
  // and joins again filled a bounded explanation with them, and a live worker was only counted.
  const revoked: Array<number> = []
  for (let i = 0; i < t.size; i++) {
    if (hostWordsOf === undefined && t.candidate(i) === host) hostWordsOf = words(i)
    const n = t.exclusionCount(i)
    if (n === 0) continue
    excluded++
    if (t.exclusion(i, 0).code === "revoked") revoked.push(i)
    else if (named.length < limit) name(i, n)
  }
  for (const i of revoked) {
    if (named.length < limit) name(i, t.exclusionCount(i))
    else revokedLeft++
  }
  const more = excluded - named.length
  const placedOn = outcome === "placed" ? host : null
  const head = placedOn === null ? outcome : `placed on ${hostWordsOf ?? hostWords(placedOn, placedOn)}`
  if (excluded === 0) return head
  const ofThem = revokedLeft === 0 ? "" : revokedLeft === more ? `, all revoked` : `, ${revokedLeft} of them revoked`
  return `${head}; excluded: ${named.join(", ")}${more === 0 ? "" : `, and ${more} more host${more === 1 ? "" : "s"}${ofThem} (every verdict: svc journal export)`}`
}
