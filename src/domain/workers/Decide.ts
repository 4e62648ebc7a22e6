/**
 * Worker-protocol decisions, pure: `decide(command, registry)` answers the events to append
 * (with the stream and the version they were decided against) or a rejection. Time arrives in
 * the command (`now`); secrets arrive as SHA-256 hashes (the owner never holds a worker's
 * credential). The owner runtime (svc serve) calls these live; tests replay them.
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { JOB_ADDRESS } from "../manifest/JobAddress.js"
import {
  CredentialRotated,
  CredentialRotationRequested,
  InviteRevoked,
  inviteStream,
  SessionStarted,
  WorkerAdvertised,
  WorkerInvited,
  WorkerJoined,
  WorkerRevoked,
  workerStream,
  type Event,
  type HeldArtifact
} from "../journal/Events.js"
import type { InviteRecord, Registry, WorkerRecord } from "./Registry.js"
import { holdsSecret, secretRefusal } from "./Secrets.js"

/** Spec: an unused scoped invite expires after 24 hours; rotation keeps the old credential 5 minutes. */
export const SCOPED_INVITE_LIFETIME_MS = 24 * 60 * 60 * 1000
/** The furthest expiry an invite may be given: a year. An unscoped invite given none never expires. */
export const MAX_INVITE_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000
export const ROTATION_GRACE_MS = 5 * 60 * 1000
export const MAX_CAPACITY = 100

export type RejectionCode =
  | "invalid-scope"
  | "invalid-expiry"
  | "invalid-name"
  | "unknown-invite"
  | "invite-redeemed"
  | "invite-expired"
  | "invite-revoked"
  | "wrong-token"
  | "unknown-worker"
  | "worker-revoked"
  | "no-rotation-pending"
  | "invalid-advertisement"

export interface Rejection {
  readonly _tag: "Rejected"
  readonly code: RejectionCode
  readonly message: string
}

export interface Decision {
  readonly _tag: "Decided"
  readonly stream: string
  readonly expectedVersion: number
  /** Empty when nothing changed (an advertisement equal to the last one is not journaled). */
  readonly events: ReadonlyArray<Event>
}

const reject = (code: RejectionCode, message: string): Rejection => ({ _tag: "Rejected", code, message })
const decided = (stream: string, expectedVersion: number, events: ReadonlyArray<Event>): Decision => ({ _tag: "Decided", stream, expectedVersion, events })

/** Equality of two hex digests that takes the same time wherever they differ. */
export const sameDigest = (a: string, b: string): boolean => {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0)
  return diff === 0
}

export const inviteExpired = (invite: InviteRecord, now: number): boolean => invite.expiresAt !== null && now >= invite.expiresAt

// ---------------------------------------------------------------------------------------------

export interface InviteWorker {
  readonly inviteId: string
  readonly tokenHash: string
  readonly name: string | null
  readonly scope: ReadonlyArray<string>
  /** An explicit expiry, if the operator gave one. */
  readonly expiresAt: number | null
  readonly actor: string
  readonly now: number
}

/** A worker's name: what tables show and commands take, so one printable word. */
const WORKER_NAME = /^[\p{L}\p{N}][\p{L}\p{N}._-]{0,62}$/u

/**
 * Why `name` cannot name a worker, or undefined: it must be one word of at most 63 letters,
 * digits, dots, hyphens and underscores (a host name is), and not another worker's id, which
 * commands would take for that worker.
 */
export const workerNameProblem = (name: string, state: Registry): string | undefined => {
  if (holdsSecret(name)) return secretRefusal("the worker's name")
  if (!WORKER_NAME.test(name)) {
    return `a worker's name is one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit; ${JSON.stringify(name)} is not`
  }
  if (HashMap.has(state.workers, name)) return `${name} is the id of another worker: choose another name`
  return undefined
}

/**
 * A worker's name made from a host name, for a join that gives none: the host name when it is a
 * valid name, else its first label (an FQDN can be longer than 63 characters), with other
 * characters as hyphens, at most 63 characters; `worker` when nothing is left.
 */
export const workerNameFromHost = (host: string): string => {
  if (WORKER_NAME.test(host)) return host
  const label = (host.split(".")[0] ?? "").replace(/[^\p{L}\p{N}._-]/gu, "-").replace(/^[._-]+/, "").slice(0, 63)
  return WORKER_NAME.test(label) ? label : "worker"
}

export const decideInvite = (c: InviteWorker, state: Registry): Decision | Rejection => {
  if (c.scope.some(holdsSecret)) return reject("invalid-scope", secretRefusal("the scope"))
  const bad = c.scope.filter((s) => !JOB_ADDRESS.test(s))
  if (bad.length > 0) {
    return reject("invalid-scope", `a scope names versioned jobs as BAG:JOB@VERSION; ${bad.map((s) => JSON.stringify(s)).join(", ")} ${bad.length === 1 ? "is" : "are"} not`)
  }
  const badName = c.name === null ? undefined : workerNameProblem(c.name, state)
  if (badName !== undefined) return reject("invalid-name", badName)
  if (c.expiresAt !== null && !(c.expiresAt > c.now)) return reject("invalid-expiry", "the expiry must be in the future")
  if (c.expiresAt !== null && c.expiresAt - c.now > MAX_INVITE_LIFETIME_MS) {
    return reject("invalid-expiry", "an invite expires within 365 days at most (an unscoped invite given no expiry never expires)")
  }
  const scoped = c.scope.length > 0
  const expiresAt = scoped ? Math.min(c.expiresAt ?? Infinity, c.now + SCOPED_INVITE_LIFETIME_MS) : c.expiresAt
  return decided(inviteStream(c.inviteId), 0, [
    new WorkerInvited({ inviteId: c.inviteId, tokenHash: c.tokenHash, name: c.name, scope: [...new Set(c.scope)], expiresAt, actor: c.actor, at: c.now })
  ])
}

export interface RedeemInvite {
  readonly inviteId: string
  /** SHA-256 of the secret presented. */
  readonly tokenHash: string
  readonly workerId: string
  readonly name: string
  readonly credentialHash: string
  /** SHA-256 of a credential from an earlier join that the joiner presented, if any. */
  readonly previousCredentialHash: string | null
  readonly now: number
}

/**
 * The worker one of whose credentials (its current one, or the one its last rotation replaced,
 * whether in grace or not; revoked or not) hashes to `hash`: the identity a re-joining
 * installation proves it was. Every candidate is compared in constant time; a join is rare,
 * so a scan is fine.
 */
export const previousIdentity = (state: Registry, hash: string): string | null => {
  let found: string | null = null
  for (const [id, w] of state.workers) for (const c of w.credentials) if (sameDigest(c.hash, hash) && found === null) found = id
  return found
}

export const decideRedeem = (c: RedeemInvite, state: Registry): Decision | Rejection => {
  const found = HashMap.get(state.invites, c.inviteId)
  if (Option.isNone(found)) return reject("unknown-invite", "this join token is not known to the owner")
  const invite = found.value
  if (!sameDigest(invite.tokenHash, c.tokenHash)) return reject("wrong-token", "this join token is not known to the owner")
  if (invite.redeemedBy !== null) return reject("invite-redeemed", "this join token was already redeemed; ask the owner for a new one")
  if (invite.revokedAt !== undefined) return reject("invite-revoked", "this join token was revoked by the owner's operator; ask the owner for a new one")
  if (inviteExpired(invite, c.now)) return reject("invite-expired", "this join token has expired; ask the owner for a new one")
  // The invite's name was checked when it was made; a name the joiner gives is checked here.
  const badName = invite.name === null ? workerNameProblem(c.name, state) : undefined
  if (badName !== undefined) return reject("invalid-name", `${badName} (give one with svc workers join --name)`)
  return decided(inviteStream(c.inviteId), invite.streamVersion, [
    new WorkerJoined({
      workerId: c.workerId,
      inviteId: c.inviteId,
      name: invite.name ?? c.name,
      credentialHash: c.credentialHash,
      scope: invite.scope,
      replaces: c.previousCredentialHash === null ? null : previousIdentity(state, c.previousCredentialHash),
      at: c.now
    })
  ])
}

export interface RevokeInvite {
  readonly inviteId: string
  readonly actor: string
  readonly now: number
}

/**
 * Withdraws an unused invite: its token can no longer be redeemed. Appended at the invite's
 * stream version, so of a revocation and a redemption made at once exactly one wins.
 */
export const decideRevokeInvite = (c: RevokeInvite, state: Registry): Decision | Rejection => {
  const found = HashMap.get(state.invites, c.inviteId)
  if (Option.isNone(found)) return reject("unknown-invite", `no invite ${JSON.stringify(c.inviteId)} was made by this owner`)
  const invite = found.value
  if (invite.redeemedBy !== null) {
    return reject("invite-redeemed", `invite ${invite.id} was redeemed by worker ${invite.redeemedBy}: revoke the worker instead (svc workers revoke ${invite.redeemedBy})`)
  }
  if (invite.revokedAt !== undefined) return reject("invite-revoked", `invite ${invite.id} is already revoked`)
  if (inviteExpired(invite, c.now)) return reject("invite-expired", `invite ${invite.id} has expired already: its token cannot be redeemed`)
  return decided(inviteStream(invite.id), invite.streamVersion, [new InviteRevoked({ inviteId: invite.id, actor: c.actor, at: c.now })])
}

const liveWorker = (state: Registry, workerId: string): WorkerRecord | Rejection => {
  const found = HashMap.get(state.workers, workerId)
  if (Option.isNone(found)) return reject("unknown-worker", `no worker ${JSON.stringify(workerId)} is linked to this owner`)
  if (found.value.revokedAt !== null) return reject("worker-revoked", `worker ${found.value.name} is revoked`)
  return found.value
}
const isRejection = (x: unknown): x is Rejection => typeof x === "object" && x !== null && (x as Rejection)._tag === "Rejected"

export interface RequestRotation {
  readonly workerId: string
  readonly actor: string
  readonly now: number
}

export const decideRequestRotation = (c: RequestRotation, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
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

export interface StartSession {
  readonly workerId: string
  /** Whether the worker's previous session was still live (runtime freshness, not journaled). */
  readonly previousSessionLive: boolean
  /**
   * The hello proved (fence and session key) that it comes from the process that holds the
   * latest session: it resumes it, which is no takeover however live that session was.
   */
  readonly resumes?: boolean
  /** SHA-256 of the key handed to the process in this session's welcome. */
  readonly keyHash?: string
  readonly now: number
}

/** Whether `key` (its SHA-256, `keyHash`) and `fence` prove the hello comes from the process holding `w`'s latest session. */
export const resumesSession = (w: WorkerRecord, fence: number, keyHash: string): boolean =>
  w.fence > 0 && fence === w.fence && w.sessionKeyHash !== undefined && sameDigest(w.sessionKeyHash, keyHash)

export const decideStartSession = (c: StartSession, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  return decided(workerStream(w.id), w.streamVersion, [
    new SessionStarted({
      workerId: w.id,
      fence: w.fence + 1,
      takeover: c.previousSessionLive && w.fence > 0 && c.resumes !== true,
      at: c.now,
      ...(c.keyHash === undefined ? {} : { keyHash: c.keyHash })
    })
  ])
}

export interface Advertise {
  readonly workerId: string
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
