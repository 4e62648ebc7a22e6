/**
 * The candidates of a placement as the owner sees them now: the owner itself (its settings, its
 * reserved slots) and every worker (its last journaled advertisement, scope, revocation,
 * freshness and reserved slots). Built for each decision, from lists kept per advertisement so
 * that consecutive decisions share them (the feasibility cache and the journal's packing rely on
 * that sharing to do less; they stay correct without it).
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import type { Candidate } from "../../domain/placement/Placement.js"
import type { RunRecord } from "../../domain/runs/Runs.js"
import type { AdvertisementRecord, WorkerRecord } from "../../domain/workers/Registry.js"

export const makeCandidates = (
  host: { readonly labels: ReadonlyArray<string>; readonly capabilities: ReadonlyArray<string>; readonly capacity: number },
  workerAlive: (w: WorkerRecord, now: number) => boolean
) => {
  /**
   * Each advertisement's lists as candidates carry them (executors apart from programs; the
   * programs and artifacts a job asks about), made once per advertisement record and job, so
   * that consecutive decisions see the very same values and the feasibility cache can keep a
   * worker's layer-1 verdict until it advertises something else.
   */
  const EMPTY: ReadonlyArray<never> = []
  const views = new WeakMap<AdvertisementRecord, { capabilities: ReadonlyArray<string>; bins: ReadonlyArray<string>; byJob: Map<string, { bins: ReadonlyArray<string>; artifacts: Candidate["artifacts"] }> }>()
  const viewOf = (ad: AdvertisementRecord, job: RunRecord["job"]) => {
    let v = views.get(ad)
    if (v === undefined) {
      v = {
        capabilities: ad.capabilities.filter((c) => !c.startsWith("bin:")),
        bins: ad.capabilities.filter((c) => c.startsWith("bin:")).map((c) => c.slice(4)),
        byJob: new Map()
      }
      views.set(ad, v)
    }
    const key = `${job.address}\u0000${job.requiredBins.join("\u0000")}`
    let j = v.byJob.get(key)
    if (j === undefined) {
      j = { bins: v.bins.filter((b) => job.requiredBins.includes(b)), artifacts: ad.artifacts.filter((a) => a.address === job.address) }
      v.byJob.set(key, j)
    }
    return { capabilities: v.capabilities, ...j }
  }
  /** The registry's workers by id, sorted once per version of the registry's map (it is persistent). */
  let sorted: { readonly of: OwnerState["registry"]["workers"]; readonly list: ReadonlyArray<WorkerRecord> } | undefined
  const sortedWorkers = (workers: OwnerState["registry"]["workers"]) => {
    if (sorted === undefined || sorted.of !== workers) sorted = { of: workers, list: [...HashMap.values(workers)].sort((a, b) => (a.id < b.id ? -1 : 1)) }
    return sorted.list
  }

  /** `promised`: slots promised by placements decided but not in `s` yet, per host (counted as used). */
  const candidatesFor = (s: OwnerState, job: RunRecord["job"], now: number, ownerBins: ReadonlyArray<string>, promised?: ReadonlyMap<string, number>): Array<Candidate> => {
    const reserved = (id: string) => Option.match(HashMap.get(s.ledger.physical, id), { onNone: () => 0, onSome: (p) => p.reserved }) + (promised?.get(id) ?? 0)
    const owner: Candidate = {
      id: "owner",
      name: "owner",
      isOwner: true,
      revoked: false,
      advertisementAlive: true,
      scope: [],
      labels: host.labels,
      capabilities: host.capabilities,
      bins: ownerBins,
      artifacts: [],
      slots: { capacity: host.capacity, used: reserved("owner") }
    }
    const workers = sortedWorkers(s.registry.workers).map((w): Candidate => {
      const ad = w.advertisement
      const view = ad === null ? undefined : viewOf(ad, job)
      return {
        id: w.id,
        name: w.name,
        isOwner: false,
        revoked: w.revokedAt !== null,
        advertisementAlive: workerAlive(w, now),
        scope: w.scope,
        labels: ad?.labels ?? EMPTY,
        capabilities: view?.capabilities ?? EMPTY,
        bins: view?.bins ?? EMPTY,
        artifacts: view?.artifacts ?? EMPTY,
        slots: { capacity: ad?.capacity ?? 0, used: reserved(w.id) }
      }
    })
    return [owner, ...workers]
  }

  return { candidatesFor }
}
