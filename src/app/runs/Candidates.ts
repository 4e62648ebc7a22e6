/**
 * The candidates of a placement as the owner sees them now: the owner itself (its settings, its
 * reserved slots) and every worker but those revoked long ago that hold nothing (its last
 * journaled advertisement, scope, revocation,
 * freshness, and as used slots those it reserved plus those the worker's last advertisement said
 * other work holds: docs/runs.md, "On a worker"). Built for each decision, from lists kept per
 * advertisement so that consecutive decisions share them (the feasibility cache and the
 * journal's packing rely on that sharing to do less; they stay correct without it).
 */
import * as HashMap from "effect/HashMap"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import type { Candidate, Silence } from "../../domain/placement/Placement.js"
import type { RunRecord } from "../../domain/runs/Runs.js"
import type { AdvertisementRecord, WorkerRecord } from "../../domain/workers/Registry.js"

/**
 * A revoked identity is a candidate, excluded as revoked, while it holds slots and for a day
 * after its revocation; then no longer: a machine that joins again each day would otherwise add
 * an identity to every decision for ever (journal and explanations growing, the live workers'
 * reasons pushed past what an explanation names). docs/placement.md, "Candidates".
 */
export const REVOKED_CANDIDATE_MS = 24 * 60 * 60 * 1000

/** Whether an identity revoked at `revokedAt` (ms; null: not revoked), holding `held` slots, is past counting at `now`: placement leaves it out, `svc workers status` folds it away. */
export const pastRevocation = (revokedAt: number | null, held: number, now: number): boolean =>
  revokedAt !== null && held === 0 && now - revokedAt >= REVOKED_CANDIDATE_MS

export const makeCandidates = (
  host: { readonly labels: ReadonlyArray<string>; readonly capabilities: ReadonlyArray<string>; readonly capacity: number },
  workerAlive: (w: WorkerRecord, now: number) => boolean,
  /** Slots of a worker held by other work (other owners, its own runs), as it last advertised. */
  busyElsewhere: (workerId: string) => number = () => 0,
  /** Why a worker whose advertisement is not alive is silent, when known better than "it lapsed". */
  silenceOf: (w: WorkerRecord) => Silence | undefined = () => undefined
) => {
  /**
   * Each advertisement's lists as candidates carry them (executors apart from programs; the
   * programs and artifacts a job asks about), made once per advertisement record and job, so
   * that consecutive decisions see the very same values and the feasibility cache can keep a
   * worker's layer-1 verdict until it advertises something else.
   */
  const EMPTY: ReadonlyArray<never> = []
  type View = { readonly capabilities: ReadonlyArray<string>; readonly bins: ReadonlyArray<string>; readonly artifacts: Candidate["artifacts"] }
  const views = new WeakMap<AdvertisementRecord, { capabilities: ReadonlyArray<string>; bins: ReadonlyArray<string>; byJob: Map<string, View> }>()
  const viewOf = (ad: AdvertisementRecord, job: RunRecord["job"], jobKey: string): View => {
    let v = views.get(ad)
    if (v === undefined) {
      v = {
        capabilities: ad.capabilities.filter((c) => !c.startsWith("bin:")),
        bins: ad.capabilities.filter((c) => c.startsWith("bin:")).map((c) => c.slice(4)),
        byJob: new Map()
      }
      views.set(ad, v)
    }
    let j = v.byJob.get(jobKey)
    if (j === undefined) {
      j = { capabilities: v.capabilities, bins: v.bins.filter((b) => job.requiredBins.includes(b)), artifacts: ad.artifacts.filter((a) => a.address === job.address) }
      v.byJob.set(jobKey, j)
    }
    return j
  }
  const NO_VIEW: View = { capabilities: EMPTY, bins: EMPTY, artifacts: EMPTY }
  /** The registry's workers by id, sorted once per version of the registry's map (it is persistent). */
  let sorted: { readonly of: OwnerState["registry"]["workers"]; readonly list: ReadonlyArray<WorkerRecord> } | undefined
  const sortedWorkers = (workers: OwnerState["registry"]["workers"]) => {
    if (sorted === undefined || sorted.of !== workers) sorted = { of: workers, list: [...HashMap.values(workers)].sort((a, b) => (a.id < b.id ? -1 : 1)) }
    return sorted.list
  }

  /**
   * The last candidate made for each host and job: a host whose view did not change since (the
   * same lists, or lists of the same strings and artifact records, the same slots, freshness and
   * revocation) is the very same object in the next decision, so a
   * decision over a quiet fleet makes almost nothing (and the journal's packing finds every list
   * it saw already).
   */
  const MAX_JOBS = 256
  const lastByJob = new Map<string, Map<string, Candidate>>()
  const sameList = <A>(a: ReadonlyArray<A>, b: ReadonlyArray<A>): boolean => {
    if (a === b) return true
    if (a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
    return true
  }
  /**
   * The host's candidate: the last one made for it when nothing it holds changed, else a new one
   * (remembered). Compared before it is made: over a quiet fleet a decision allocates nothing per
   * host.
   */
  const candidate = (
    last: Map<string, Candidate>,
    id: string,
    name: string,
    isOwner: boolean,
    revoked: boolean,
    advertisementAlive: boolean,
    silence: Silence | undefined,
    scope: ReadonlyArray<string>,
    labels: ReadonlyArray<string>,
    capabilities: ReadonlyArray<string>,
    bins: ReadonlyArray<string>,
    artifacts: Candidate["artifacts"],
    capacity: number,
    used: number
  ): Candidate => {
    const before = last.get(id)
    if (
      before !== undefined &&
      before.name === name &&
      before.revoked === revoked &&
      before.advertisementAlive === advertisementAlive &&
      before.silence === silence &&
      sameList(before.scope, scope) &&
      sameList(before.labels, labels) &&
      sameList(before.capabilities, capabilities) &&
      sameList(before.bins, bins) &&
      sameList(before.artifacts, artifacts) &&
      before.slots.capacity === capacity &&
      before.slots.used === used
    ) {
      return before
    }
    const made: Candidate =
      silence === undefined
        ? { id, name, isOwner, revoked, advertisementAlive, scope, labels, capabilities, bins, artifacts, slots: { capacity, used } }
        : { id, name, isOwner, revoked, advertisementAlive, silence, scope, labels, capabilities, bins, artifacts, slots: { capacity, used } }
    last.set(id, made)
    return made
  }

  /** `promised`: slots promised by placements decided but not in `s` yet, per host (counted as used). */
  const candidatesFor = (s: OwnerState, job: RunRecord["job"], now: number, ownerBins: ReadonlyArray<string>, promised?: ReadonlyMap<string, number>): Array<Candidate> => {
    const physical = s.ledger.physical
    const reserved = (id: string) => {
      const p = HashMap.get(physical, id)
      return (p._tag === "Some" ? p.value.reserved : 0) + (promised?.get(id) ?? 0)
    }
    const jobKey = `${job.address}\u0000${job.requiredBins.join("\u0000")}`
    let last = lastByJob.get(jobKey)
    if (last === undefined) {
      if (lastByJob.size >= MAX_JOBS) lastByJob.clear()
      last = new Map()
      lastByJob.set(jobKey, last)
    }
    const workers = sortedWorkers(s.registry.workers)
    const out: Array<Candidate> = [
      candidate(last, "owner", "owner", true, false, true, undefined, EMPTY, host.labels, host.capabilities, ownerBins, EMPTY, host.capacity, reserved("owner"))
    ]
    for (let i = 0; i < workers.length; i++) {
      const w = workers[i]!
      if (w.revokedAt !== null && pastRevocation(w.revokedAt, reserved(w.id), now)) continue
      const ad = w.advertisement
      const view = ad === null ? NO_VIEW : viewOf(ad, job, jobKey)
      const alive = workerAlive(w, now)
      out.push(
        candidate(
          last,
          w.id,
          w.name,
          false,
          w.revokedAt !== null,
          alive,
          alive || w.revokedAt !== null ? undefined : silenceOf(w),
          w.scope,
          ad?.labels ?? EMPTY,
          view.capabilities,
          view.bins,
          view.artifacts,
          ad?.capacity ?? 0,
          reserved(w.id) + busyElsewhere(w.id)
        )
      )
    }
    return out
  }

  return { candidatesFor }
}
