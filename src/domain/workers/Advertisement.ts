/**
 * Advertisements, pure: what a worker offers (capacity, labels, capabilities, the artifacts it
 * holds), checked and kept as sets. Only a change is journaled: a refresh that says the same is
 * freshness, which is runtime state.
 */
import { WorkerAdvertised, workerStream, type HeldArtifact } from "../journal/Events.js"
import { decided, isRejection, liveWorker, reject, type Decision, type Rejection } from "./Decision.js"
import type { Registry } from "./Registry.js"
import { fenceProblem } from "./Session.js"

export const MAX_CAPACITY = 100

export interface Advertise {
  readonly workerId: string
  /** The session the advertisement was made in: only the latest session's offer is the worker's. */
  readonly fence: number
  readonly capacity: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<HeldArtifact>
  readonly now: number
}

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])
const sameArtifacts = (a: ReadonlyArray<HeldArtifact>, b: ReadonlyArray<HeldArtifact>) =>
  a.length === b.length && a.every((x, i) => x.address === b[i]!.address && x.digest === b[i]!.digest)

/** A set as a sorted list without repeats; a list that already is one is kept (workers send them so). */
const asSortedSet = (xs: ReadonlyArray<string>): ReadonlyArray<string> => {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1]! < xs[i]!)) return [...new Set(xs)].sort()
  return xs
}
/** Artifacts in address order (a stable sort: a list already in that order is kept). */
const byAddress = (as: ReadonlyArray<HeldArtifact>): ReadonlyArray<HeldArtifact> => {
  for (let i = 1; i < as.length; i++) {
    if (as[i - 1]!.address > as[i]!.address) return [...as].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0))
  }
  return as
}

/** Labels, capabilities and artifacts are sets: sorted, so the same offer is the same content. */
export const decideAdvertise = (c: Advertise, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  // Checked again here, where commands are decided one after another: a hello that committed
  // after the route checked this call's fence started a session whose process offers what it
  // says itself; the process taken over must not speak for it (nor end its wait for that offer).
  const stale = fenceProblem(w, c.fence)
  if (stale !== undefined) return reject("fenced", stale)
  if (!Number.isInteger(c.capacity) || c.capacity < 1 || c.capacity > MAX_CAPACITY) {
    return reject("invalid-advertisement", `capacity must be a whole number from 1 to ${MAX_CAPACITY}, not ${c.capacity}`)
  }
  const labels = asSortedSet(c.labels)
  const capabilities = asSortedSet(c.capabilities)
  const artifacts = byAddress(c.artifacts)
  const last = w.advertisement
  if (
    last !== null &&
    last.capacity === c.capacity &&
    sameList(last.labels, labels) &&
    sameList(last.capabilities, capabilities) &&
    sameArtifacts(last.artifacts, artifacts)
  ) {
    // A refresh that changes nothing must not grow the journal (freshness is runtime state).
    return decided(workerStream(w.id), w.streamVersion, [])
  }
  return decided(workerStream(w.id), w.streamVersion, [
    new WorkerAdvertised({ workerId: w.id, capacity: c.capacity, labels, capabilities, artifacts, at: c.now })
  ])
}
