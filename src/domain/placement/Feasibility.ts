/**
 * The feasibility cache of placement (docs/placement.md): layer 1's static part per worker and
 * per set of job requirements, kept between decisions. Pure data and functions; `place` reads
 * and fills it, and answers the same with or without it.
 */
import type { Activity, CandidateVerdict, Candidate, Exclusion } from "./Placement.js"

/**
 * A feasibility cache, as Nomad caches feasibility per node class: layer 1's static part for
 * each candidate and each set of job requirements, kept between decisions so a fleet of 10,000
 * is not re-checked label by label for every activity. An entry is used only while the
 * candidate's configuration is the very same values (identity of its scope, labels,
 * capabilities, programs and artifacts lists, and equal id, name, owner and revoked flags):
 * inputs are immutable, so a worker that advertises again, changes scope or is revoked brings
 * new values and its entry is recomputed. The moment's part (advertisement alive, declined),
 * capacity and preference are judged every time. With or without it, `place` answers the same
 * outcome (a property test holds it to that); only the time differs.
 */
export interface FeasibilityCache {
  readonly byRequirements: Map<string, Map<string, FeasibilityEntry>>
}
export interface FeasibilityEntry {
  // The configuration the entry was computed from (its own fields, not a reference to that
  // candidate: one object to read per candidate instead of two, in a loop over 10,000).
  readonly scope: Candidate["scope"]
  readonly labels: Candidate["labels"]
  readonly capabilities: Candidate["capabilities"]
  readonly bins: Candidate["bins"]
  readonly artifacts: Candidate["artifacts"]
  readonly revoked: boolean
  readonly isOwner: boolean
  readonly name: string
  readonly fixed: ReadonlyArray<Exclusion>
  /** For a statically excluded candidate the moment adds nothing to: its whole verdict. */
  verdict: CandidateVerdict | undefined
}

/** Distinct job requirements kept at most; past that the cache starts over (a bound, not an LRU). */
const MAX_REQUIREMENT_SETS = 256

export const makeFeasibilityCache = (): FeasibilityCache => ({ byRequirements: new Map() })

/** Everything layer 1's static part reads of the activity (so its records' texts too). */
const requirementsKey = (a: Activity) => JSON.stringify([a.address, a.digest, a.executor, a.remoteEligible, a.requiredLabels, a.requiredBins, a.bounds])

const sameConfiguration = (x: FeasibilityEntry, y: Candidate) =>
  x.labels === y.labels &&
  x.artifacts === y.artifacts &&
  x.capabilities === y.capabilities &&
  x.bins === y.bins &&
  x.scope === y.scope &&
  x.revoked === y.revoked &&
  x.isOwner === y.isOwner &&
  x.name === y.name

export const entriesFor = (cache: FeasibilityCache, a: Activity): Map<string, FeasibilityEntry> => {
  const key = requirementsKey(a)
  let entries = cache.byRequirements.get(key)
  if (entries === undefined) {
    if (cache.byRequirements.size >= MAX_REQUIREMENT_SETS) cache.byRequirements.clear()
    entries = new Map()
    cache.byRequirements.set(key, entries)
  }
  return entries
}

/** The candidate's entry, recomputed with `staticPart` when it has none or its configuration changed. */
export const entryFor = (entries: Map<string, FeasibilityEntry>, c: Candidate, staticPart: (c: Candidate) => ReadonlyArray<Exclusion>): FeasibilityEntry => {
  let entry = entries.get(c.id)
  if (entry === undefined || !sameConfiguration(entry, c)) {
    entry = {
      scope: c.scope,
      labels: c.labels,
      capabilities: c.capabilities,
      bins: c.bins,
      artifacts: c.artifacts,
      revoked: c.revoked,
      isOwner: c.isOwner,
      name: c.name,
      fixed: staticPart(c),
      verdict: undefined
    }
    entries.set(c.id, entry)
  }
  return entry
}
