/**
 * The feasibility cache of placement (docs/placement.md) and `place`'s loop that uses it. Pure
 * data and functions: `place` reads and fills the cache, and answers the same with or without
 * it (a property test holds it to that); only the time differs.
 *
 * As Nomad caches feasibility per node class, the cache keeps layer 1's static part for each
 * host configuration and each set of job requirements, so a fleet of 10,000 is not re-checked
 * label by label for every activity. A configuration is known by the very same values (the
 * identity of its scope, labels, capabilities, programs and artifacts lists, and equal id,
 * name, owner and revoked flags): inputs are immutable, so a worker that advertises again,
 * changes scope or is revoked brings new values and is judged anew.
 *
 * Past that, a decision over 10,000 hosts is bound by memory, not by checks: reading each
 * candidate and a few objects of its own costs more than the checks. So the cache is kept as
 * columns indexed by the candidate's position in the list. A dispatcher lists the same hosts in
 * the same order decision after decision and hands over the very same candidate object for a
 * host whose view did not change (src/app/runs/Candidates.ts); when the object at a position
 * is the one seen there last, everything judged from it then still holds: its configuration,
 * its liveness, whether its slots are full, its labels as bits of the preferred labels met so
 * far, and the verdicts made for it (the excluded one per set of requirements, with its
 * advertisement expired or not; the one without room per state of the shared ledgers; the one
 * with room per preference count). Such a candidate is judged from the columns without reading
 * it. Anything else (another object at the position, a decline, a configuration not judged for
 * these requirements yet) is judged from the candidate as `place` does without a cache.
 */
import type { Activity, Candidate, CandidateVerdict, Exclusion, Outcome, Quotas } from "./Placement.js"
import { has, isExpired, Layer1, rulesOf, layer2Of, ledgerExclusions, NONE, noSlot, outcomeOf, preference, Ranking, slotsFull, tieBreakPrefix } from "./Layers.js"

/** What layer 1's static part reads of a candidate, one record per distinct configuration. */
export interface Configuration {
  readonly id: string
  readonly name: string
  readonly isOwner: boolean
  readonly revoked: boolean
  readonly scope: Candidate["scope"]
  readonly labels: Candidate["labels"]
  readonly capabilities: Candidate["capabilities"]
  readonly bins: Candidate["bins"]
  readonly artifacts: Candidate["artifacts"]
}

/** The shared ledgers' state in a decision (interned: equal states are one object). */
interface Ledger {
  readonly logical: Exclusion | undefined
  readonly endpoint: Exclusion | undefined
}


/** One set of job requirements' column: layer 1's static part for the configuration at each position. */
interface Requirements {
  readonly configuration: Array<Configuration | undefined>
  readonly fixed: Array<ReadonlyArray<Exclusion>>
  /** Whether `fixed` excludes it (its length, kept beside it: one object fewer to read per candidate). */
  readonly excluded: Array<boolean>
  /**
   * The whole verdict of an excluded configuration, made at first use, and the moment it was made
   * for (`silenceKey`): an expired advertisement's reason depends on the kind of silence (it said
   * bye, it lapsed, nothing heard), so a verdict made for one is not another's (a worker frozen
   * was recorded "stopped cleanly", its decision then diverging from its own inputs at audit).
   */
  readonly verdict: Array<CandidateVerdict | undefined>
  readonly verdictFor: Array<string>
  readonly byConfiguration: WeakMap<Configuration, ReadonlyArray<Exclusion>>
}

export interface FeasibilityCache {
  // Columns by position in the list: the candidate object last seen there and what was judged of it.
  readonly candidate: Array<Candidate | undefined>
  readonly configuration: Array<Configuration>
  readonly id: Array<string>
  readonly name: Array<string>
  readonly expired: Array<boolean>
  /** Whether its slots were full (the record then), else undefined. */
  readonly noSlot: Array<Exclusion | undefined>
  /**
   * Its verdicts with room, one column per preference count (the score is its locality and that
   * count, and the verdict with the same score is the same), made at first use: after a few
   * decisions a candidate with room costs no allocation, whatever the stated preferences.
   */
  readonly roomByCount: Array<Array<CandidateVerdict | undefined>>
  readonly locality: Array<number>
  /**
   * Which of the preferred labels seen so far (`preferredBits`) it has, one bit each, as of
   * when `maskOf` had that many: a decision's preference count is then a population count.
   */
  readonly mask: Array<number>
  readonly maskOf: Array<number>
  /** Its verdict without room, for the ledgers' state in `fullFor`. */
  readonly fullVerdict: Array<CandidateVerdict | undefined>
  readonly fullFor: Array<Ledger | undefined>
  /** The latest configuration of each host, by id, and the position it was last seen at. */
  readonly configurations: Map<string, Configuration>
  readonly positionOfId: Map<string, number>
  readonly requirements: Map<string, Requirements>
  readonly ledgers: Map<string, Ledger>
  /** Each preferred label met, with its bit (at most MAX_PREFERRED_BITS; past that, counted label by label). */
  readonly preferredBits: Map<string, number>
  readonly slotRecords: Map<string, Exclusion>
}

/** Distinct keys kept at most in each of the cache's maps; past that the map starts over (a bound, not an LRU). */
const MAX_KEYS = 256
const MAX_PREFERRED_BITS = 30

export const makeFeasibilityCache = (): FeasibilityCache => ({
  candidate: [],
  configuration: [],
  id: [],
  name: [],
  expired: [],
  noSlot: [],
  roomByCount: [],
  locality: [],
  mask: [],
  maskOf: [],
  fullVerdict: [],
  fullFor: [],
  configurations: new Map(),
  positionOfId: new Map(),
  requirements: new Map(),
  ledgers: new Map(),
  preferredBits: new Map(),
  slotRecords: new Map()
})

const bounded = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  let v = map.get(key)
  if (v === undefined) {
    if (map.size >= MAX_KEYS) map.clear()
    map.set(key, (v = make()))
  }
  return v
}

/** Everything layer 1's static part reads of the activity (so its records' texts too). */
const requirementsKey = (a: Activity) => JSON.stringify([a.address, a.digest, a.executor, a.remoteEligible, a.requiredLabels, a.requiredBins, a.bounds, rulesOf(a)])

const sameConfiguration = (x: Configuration, y: Candidate) =>
  x.id === y.id &&
  x.labels === y.labels &&
  x.artifacts === y.artifacts &&
  x.capabilities === y.capabilities &&
  x.bins === y.bins &&
  x.scope === y.scope &&
  x.revoked === y.revoked &&
  x.isOwner === y.isOwner &&
  x.name === y.name

/** Another object at position `i`: what the columns know of it, judged from it. */
const see = (cache: FeasibilityCache, i: number, c: Candidate): void => {
  const before = cache.configuration[i]
  let configuration = before !== undefined && sameConfiguration(before, c) ? before : cache.configurations.get(c.id)
  if (configuration === undefined || !sameConfiguration(configuration, c)) {
    configuration = { id: c.id, name: c.name, isOwner: c.isOwner, revoked: c.revoked, scope: c.scope, labels: c.labels, capabilities: c.capabilities, bins: c.bins, artifacts: c.artifacts }
    if (cache.configurations.size >= 4 * MAX_KEYS && cache.configurations.size >= 2 * cache.candidate.length) cache.configurations.clear()
    cache.configurations.set(c.id, configuration)
  }
  if (cache.id[i] !== c.id) {
    if (cache.positionOfId.size >= 4 * MAX_KEYS && cache.positionOfId.size >= 2 * cache.candidate.length) cache.positionOfId.clear()
    cache.positionOfId.set(c.id, i)
  }
  cache.candidate[i] = c
  cache.configuration[i] = configuration
  cache.id[i] = c.id
  cache.name[i] = c.name
  cache.expired[i] = isExpired(c)
  cache.noSlot[i] = slotsFull(c.slots) ? bounded(cache.slotRecords, `${c.slots.used}/${c.slots.capacity}`, () => noSlot(c.slots)) : undefined
  for (const column of cache.roomByCount) column[i] = undefined
  cache.locality[i] = c.isOwner ? 1 : 0
  cache.mask[i] = 0
  cache.maskOf[i] = -1
  cache.fullVerdict[i] = undefined
  cache.fullFor[i] = undefined
}

/** The list is shorter than before: the columns past its end go (they would only hold on to old candidates). */
const truncate = (cache: FeasibilityCache, n: number): void => {
  for (const column of [cache.candidate, cache.configuration, cache.id, cache.name, cache.expired, cache.noSlot, ...cache.roomByCount, cache.locality, cache.mask, cache.maskOf, cache.fullVerdict, cache.fullFor]) {
    column.length = n
  }
  for (const r of cache.requirements.values()) {
    if (r.configuration.length > n) {
      r.configuration.length = n
      r.fixed.length = n
      r.excluded.length = n
      r.verdict.length = n
      r.verdictFor.length = n
    }
  }
}

/** The column of verdicts with room for a preference count, and the columns for every count below it. */
const roomColumn = (cache: FeasibilityCache, count: number): Array<CandidateVerdict | undefined> => {
  while (cache.roomByCount.length <= count) cache.roomByCount.push(new Array<CandidateVerdict | undefined>(cache.candidate.length).fill(undefined))
  return cache.roomByCount[count]!
}

/**
 * The positions of the hosts that declined an earlier attempt, found through the cache and
 * checked against this list; undefined when one cannot be found that way (then each candidate's
 * id is compared, as without the cache).
 */
const declinedPositions = (cache: FeasibilityCache, a: Activity, candidates: ReadonlyArray<Candidate>): Array<number> | undefined => {
  const out: Array<number> = []
  for (const id of a.declinedBy) {
    const i = cache.positionOfId.get(id)
    if (i === undefined || candidates[i]?.id !== id) return undefined
    out.push(i)
  }
  return out
}

/**
 * The bits of a decision's preferred labels (each label given one the first time it is met), or
 * undefined when they cannot all have one or one is listed twice (then counted label by label).
 */
const preferredMask = (cache: FeasibilityCache, labels: ReadonlyArray<string>): number | undefined => {
  let mask = 0
  for (const label of labels) {
    let bit = cache.preferredBits.get(label)
    if (bit === undefined) {
      if (cache.preferredBits.size >= MAX_PREFERRED_BITS) return undefined
      cache.preferredBits.set(label, (bit = 1 << cache.preferredBits.size))
    }
    if ((mask & bit) !== 0) return undefined
    mask |= bit
  }
  return mask
}

/** The position's labels as bits, recomputed when labels were given bits since. */
const maskAt = (cache: FeasibilityCache, i: number): number => {
  if (cache.maskOf[i] === cache.preferredBits.size) return cache.mask[i]!
  let mask = 0
  for (const label of cache.configuration[i]!.labels) mask |= cache.preferredBits.get(label) ?? 0
  cache.mask[i] = mask
  cache.maskOf[i] = cache.preferredBits.size
  return mask
}

const bitCount = (x: number): number => {
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24
}

/** What a cached verdict of an excluded candidate was made for: its advertisement alive, or which silence. */
const ALIVE = "alive"
const silenceKey = (c: Candidate, expired: boolean): string => (expired ? (c.silence ?? "lapsed") : ALIVE)

/** Whether the host at `i` declined, by its id; found so, its position is noted for the next decision. */
const declinedHere = (cache: FeasibilityCache, a: Activity, i: number): boolean => {
  const id = cache.id[i]!
  if (!has(a.declinedBy, id)) return false
  cache.positionOfId.set(id, i)
  return true
}

export const placeWithCache = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas, cache: FeasibilityCache): Outcome => {
  const n = candidates.length
  if (cache.candidate.length > n) truncate(cache, n)
  const layer1 = new Layer1(a)
  const r = bounded(cache.requirements, requirementsKey(a), (): Requirements => ({ configuration: [], fixed: [], excluded: [], verdict: [], verdictFor: [], byConfiguration: new WeakMap() }))
  const shared = ledgerExclusions(q)
  const ledger = bounded(cache.ledgers, `${shared.logical?.text ?? ""}\u0000${shared.endpoint?.text ?? ""}`, () => shared)
  const ledgerFull = ledger.logical !== undefined || ledger.endpoint !== undefined
  const preferred = a.preferredLabels.length === 0 ? 0 : preferredMask(cache, a.preferredLabels)
  const declined = a.declinedBy.length === 0 ? [] : declinedPositions(cache, a, candidates)
  const ranking = new Ranking(tieBreakPrefix(a.id))
  const verdicts = new Array<CandidateVerdict>(n)
  let eligibleSomewhere = false
  for (let i = 0; i < n; i++) {
    const c = candidates[i]!
    if (cache.candidate[i] !== c) see(cache, i, c)
    const configuration = cache.configuration[i]!
    // Layer 1's static part for this configuration and these requirements.
    let fixed: ReadonlyArray<Exclusion>
    if (r.configuration[i] === configuration) fixed = r.fixed[i]!
    else {
      let known = r.byConfiguration.get(configuration)
      if (known === undefined) r.byConfiguration.set(configuration, (known = layer1.staticPart(c)))
      fixed = known
      r.configuration[i] = configuration
      r.fixed[i] = fixed
      r.excluded[i] = fixed.length > 0
      r.verdict[i] = undefined
      r.verdictFor[i] = ALIVE
    }
    // The moment: a decline or an expired advertisement excludes it, with its static exclusions.
    if (declined === undefined ? declinedHere(cache, a, i) : declined.length > 0 && declined.includes(i)) {
      verdicts[i] = { candidate: c.id, name: c.name, exclusions: layer1.withMoment(c, fixed), score: null }
      continue
    }
    const expired = cache.expired[i]!
    if (expired || r.excluded[i]) {
      let v = r.verdict[i]
      const moment = silenceKey(c, expired)
      if (v === undefined || r.verdictFor[i] !== moment) {
        v = { candidate: cache.id[i]!, name: cache.name[i]!, exclusions: expired ? layer1.withMoment(c, fixed) : fixed, score: null }
        r.verdict[i] = v
        r.verdictFor[i] = moment
      }
      verdicts[i] = v
      continue
    }
    eligibleSomewhere = true
    const slot = cache.noSlot[i]
    if (ledgerFull || slot !== undefined) {
      let v = cache.fullVerdict[i]
      if (v === undefined || cache.fullFor[i] !== ledger) {
        v = { candidate: cache.id[i]!, name: cache.name[i]!, exclusions: layer2Of(ledger.logical, slot, ledger.endpoint), score: null }
        cache.fullVerdict[i] = v
        cache.fullFor[i] = ledger
      }
      verdicts[i] = v
      continue
    }
    // With room: its score is its locality and how many preferred labels it has.
    const count = preferred === undefined ? preference(c, a).preference : preferred === 0 ? 0 : bitCount(maskAt(cache, i) & preferred)
    // (Columns for counts up to MAX_PREFERRED_BITS only: a run listing hundreds of preferences gets fresh verdicts.)
    const column = count > MAX_PREFERRED_BITS ? undefined : (cache.roomByCount[count] ?? roomColumn(cache, count))
    let v = column?.[i]
    if (v === undefined) {
      v = { candidate: cache.id[i]!, name: cache.name[i]!, exclusions: NONE, score: { locality: cache.locality[i]!, preference: count } }
      if (column !== undefined) column[i] = v
    }
    verdicts[i] = v
    ranking.consider(cache.id[i]!, cache.locality[i]!, count)
  }
  return outcomeOf(ranking.best, eligibleSomewhere, verdicts)
}
