/**
 * Invites and joining, pure: an operator's invite (its scope, name and expiry), its redemption
 * by a joining installation, and its revocation while unused. An invite lives on its own stream,
 * so of a redemption and a revocation made at once exactly one wins. The worker's name is
 * checked here because it is given at the invite or at the join.
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { JOB_ADDRESS } from "../manifest/JobAddress.js"
import { InviteRevoked, inviteStream, JoinAnsweredAgain, WorkerInvited, WorkerJoined, workerStream } from "../journal/Events.js"
import { sameDigest } from "./Credential.js"
import { decided, reject, type Decision, type Rejection } from "./Decision.js"
import type { InviteRecord, Registry } from "./Registry.js"
import { holdsSecret, secretRefusal } from "./Secrets.js"

/** Spec: an unused scoped invite expires after 24 hours. */
export const SCOPED_INVITE_LIFETIME_MS = 24 * 60 * 60 * 1000
/** The furthest expiry an invite may be given: a year. An unscoped invite given none never expires. */
export const MAX_INVITE_LIFETIME_MS = 365 * 24 * 60 * 60 * 1000

export const inviteExpired = (invite: InviteRecord, now: number): boolean => invite.expiresAt !== null && now >= invite.expiresAt

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
  const shape = workerNameShapeProblem(name)
  if (shape !== undefined) return shape
  if (HashMap.has(state.workers, name)) return `${name} is the id of another worker: choose another name`
  return undefined
}

/** Why `name` is not shaped as a worker's name, or undefined: what a command can say before it asks the owner. */
export const workerNameShapeProblem = (name: string): string | undefined => {
  if (holdsSecret(name)) return secretRefusal("the worker's name")
  if (!WORKER_NAME.test(name)) {
    return `a worker's name is one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit; ${JSON.stringify(name)} is not`
  }
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
  /**
   * SHA-256 of the join key the joiner sent; absent when it sent none (an svc from before join
   * keys). A join of a redeemed invite with the key of its redemption is answered again.
   */
  readonly joinKeyHash?: string
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
  if (invite.redeemedBy !== null) return decideJoinAgain(c, invite, state)
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
      joinKeyHash: c.joinKeyHash ?? null,
      at: c.now
    })
  ])
}

/**
 * A join of an invite already redeemed. Answered again, with a new credential for the worker it
 * made, when the joiner shows the join key of that redemption and the worker has not used its
 * credential yet (no hello: the first answer never arrived) nor been revoked; the credential the
 * first answer carried stops working. Appended at the worker's stream version, so of this and
 * the worker's first hello exactly one wins. Anything else is refused as redeemed.
 */
const decideJoinAgain = (c: RedeemInvite, invite: InviteRecord, state: Registry): Decision | Rejection => {
  const redeemed = reject("invite-redeemed", "this join token was already redeemed; ask the owner for a new one")
  const found = HashMap.get(state.workers, invite.redeemedBy ?? "")
  if (Option.isNone(found) || c.joinKeyHash === undefined) return redeemed
  const w = found.value
  if (w.joinKeyHash === undefined || !sameDigest(w.joinKeyHash, c.joinKeyHash)) return redeemed
  if (w.revokedAt !== null) {
    return reject("invite-redeemed", `this join token was redeemed already by this machine, as worker ${w.name} (${w.id}), which was revoked since; ask the owner for a new one`)
  }
  if (w.sessionStartedAt !== null) {
    return reject(
      "invite-redeemed",
      `this join token was redeemed already by this machine, as worker ${w.name} (${w.id}), which has used its credential since: it is joined (svc workers status lists its link); to join again, ask the owner for a new token`
    )
  }
  return decided(workerStream(w.id), w.streamVersion, [
    new JoinAnsweredAgain({ workerId: w.id, inviteId: invite.id, credentialHash: c.credentialHash, previousHash: w.credentials[0]!.hash, at: c.now })
  ])
}

export interface RevokeInvite {
  readonly inviteId: string
  readonly actor: string
  readonly now: number
}

/** Whether `workerId` names a worker of `state` that is revoked. */
export const isRevoked = (state: Registry, workerId: string): boolean => Option.getOrUndefined(HashMap.get(state.workers, workerId))?.revokedAt != null

/**
 * Withdraws an unused invite: its token can no longer be redeemed. Appended at the invite's
 * stream version, so of a revocation and a redemption made at once exactly one wins.
 */
export const decideRevokeInvite = (c: RevokeInvite, state: Registry): Decision | Rejection => {
  const found = HashMap.get(state.invites, c.inviteId)
  if (Option.isNone(found)) return reject("unknown-invite", `no invite ${JSON.stringify(c.inviteId)} was made by this owner`)
  const invite = found.value
  if (invite.redeemedBy !== null) {
    // The worker it made, revoked already, has nothing left to revoke: not advised again.
    return reject(
      "invite-redeemed",
      isRevoked(state, invite.redeemedBy)
        ? `invite ${invite.id} was redeemed by worker ${invite.redeemedBy}, which is revoked already: nothing is left to revoke`
        : `invite ${invite.id} was redeemed by worker ${invite.redeemedBy}: revoke the worker instead (svc workers revoke ${invite.redeemedBy})`
    )
  }
  if (invite.revokedAt !== undefined) return reject("invite-revoked", `invite ${invite.id} is already revoked`)
  if (inviteExpired(invite, c.now)) return reject("invite-expired", `invite ${invite.id} has expired already: its token cannot be redeemed`)
  return decided(inviteStream(invite.id), invite.streamVersion, [new InviteRevoked({ inviteId: invite.id, actor: c.actor, at: c.now })])
}
