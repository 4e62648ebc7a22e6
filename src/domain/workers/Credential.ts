/**
 * A worker's credentials, pure: a rotation requested by the operator and completed, the
 * hand-over of a new credential in the answer to a call (and again when that answer was lost),
 * whether a presented credential opens the route now, and the worker's revocation, after which
 * none does. Secrets arrive as SHA-256 hashes: the owner never holds a worker's credential.
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { CredentialRotated, CredentialRotationRequested, WorkerRevoked, workerStream } from "../journal/Events.js"
import { decided, isRejection, liveWorker, reject, type Decision, type Rejection } from "./Decision.js"
import type { Registry, WorkerRecord } from "./Registry.js"

/** Spec: rotation keeps the old credential 5 minutes. */
export const ROTATION_GRACE_MS = 5 * 60 * 1000

/** Equality of two hex digests that takes the same time wherever they differ. */
export const sameDigest = (a: string, b: string): boolean => {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0)
  return diff === 0
}

export interface RequestRotation {
  readonly workerId: string
  readonly actor: string
  readonly now: number
}

export const decideRequestRotation = (c: RequestRotation, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  // Asked again before the worker's next call took the first: one new credential is handed over either way, and the journal (and audit) holds the request once.
  if (w.rotationPending) return decided(workerStream(w.id), w.streamVersion, [])
  return decided(workerStream(w.id), w.streamVersion, [new CredentialRotationRequested({ workerId: w.id, actor: c.actor, at: c.now })])
}

export interface CompleteRotation {
  readonly workerId: string
  /** SHA-256 of the new credential, minted in the answer to the worker's call. */
  readonly credentialHash: string
  readonly now: number
}

export const decideCompleteRotation = (c: CompleteRotation, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  if (!w.rotationPending) return reject("no-rotation-pending", `no rotation is pending for ${w.name}`)
  return decided(workerStream(w.id), w.streamVersion, [
    new CredentialRotated({
      workerId: w.id,
      credentialHash: c.credentialHash,
      previousHash: w.credentials[0]!.hash,
      previousValidUntil: c.now + ROTATION_GRACE_MS,
      at: c.now
    })
  ])
}

/**
 * How long after a hand-over a call with the previous credential is taken for one made before
 * that answer arrived, not for a lost answer: a worker's calls overlap (a claim waits at the
 * owner up to 30 s while its heartbeats and advertisements go on), and minting again for such a
 * call would replace the credential on its way to the worker. 35 s: the longest claim wait and
 * some margin. Past it, within the grace, the answer is taken as lost and another one minted.
 */
export const HAND_OVER_IN_FLIGHT_MS = 35_000

/**
 * Whether a call presenting `presentedHash` must be answered with a new credential now: a
 * rotation is pending and it presents the current one; or it presents the previous one, within
 * its grace and past the in-flight window of the hand-over (HAND_OVER_IN_FLIGHT_MS). The grace end
 * is set by the first hand-over of a rotation and never moves, so the window counts from it.
 */
export const handOverDue = (w: WorkerRecord, presentedHash: string, now: number): "rotation" | "lost" | undefined => {
  const [current, previous] = w.credentials
  if (w.rotationPending && current !== undefined && sameDigest(current.hash, presentedHash)) return "rotation"
  if (previous === undefined || previous.validUntil === null || now >= previous.validUntil || !sameDigest(previous.hash, presentedHash)) return undefined
  return now >= previous.validUntil - ROTATION_GRACE_MS + HAND_OVER_IN_FLIGHT_MS ? "lost" : undefined
}

export interface HandOverCredential {
  readonly workerId: string
  /** SHA-256 of the credential the worker presented on this call. */
  readonly presentedHash: string
  /** SHA-256 of a freshly minted credential, to be sent in this call's answer. */
  readonly newHash: string
  readonly now: number
}

/**
 * Whether this call's answer must carry a new credential, and the event that records it.
 * - A rotation is pending and the worker presents its current credential: the new one starts
 *   now and the old one works 5 more minutes.
 * - The worker presents the previous credential within its 5 minutes, and more than 35 s after
 *   the hand-over (before that the call may have been made before the answer arrived): the
 *   answer that carried the new one was lost (or the owner restarted before the worker saved
 *   it). Another new one is minted, replacing the unreceived one; the grace end stays where it
 *   was, so a lost answer never extends the old credential's life.
 * Otherwise nothing is handed over (no events). `handOverDue` says which, on its own.
 */
export const decideHandOver = (c: HandOverCredential, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  const [current, previous] = w.credentials
  const stream = workerStream(w.id)
  const due = handOverDue(w, c.presentedHash, c.now)
  if (due === "rotation") {
    return decided(stream, w.streamVersion, [
      new CredentialRotated({ workerId: w.id, credentialHash: c.newHash, previousHash: current!.hash, previousValidUntil: c.now + ROTATION_GRACE_MS, at: c.now })
    ])
  }
  if (due === "lost" && previous !== undefined && previous.validUntil !== null) {
    return decided(stream, w.streamVersion, [
      new CredentialRotated({ workerId: w.id, credentialHash: c.newHash, previousHash: previous.hash, previousValidUntil: previous.validUntil, at: c.now })
    ])
  }
  return decided(stream, w.streamVersion, [])
}

/** Whether a presented credential (by hash) opens the route for this worker now. */
export const credentialStanding = (w: WorkerRecord, presentedHash: string, now: number): "current" | "grace" | "expired" | "unknown" => {
  for (const c of w.credentials) {
    if (!sameDigest(c.hash, presentedHash)) continue
    if (c.validUntil === null) return "current"
    return now < c.validUntil ? "grace" : "expired"
  }
  return "unknown"
}

export interface RevokeWorker {
  readonly workerId: string
  readonly actor: string
  readonly now: number
}

export const decideRevoke = (c: RevokeWorker, state: Registry): Decision | Rejection => {
  const known = HashMap.get(state.workers, c.workerId)
  if (Option.isSome(known) && known.value.revokedAt !== null) return reject("worker-revoked", `worker ${known.value.name} is already revoked`)
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  return decided(workerStream(w.id), w.streamVersion, [new WorkerRevoked({ workerId: w.id, actor: c.actor, at: c.now })])
}
