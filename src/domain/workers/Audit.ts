/**
 * Audit rows (spec: the owner keeps audit rows for invites, joins, rotations, revocations and
 * takeovers), derived from the journal: each row is one event, with its time, worker and actor.
 */
import * as Chunk from "effect/Chunk"
import type { Envelope } from "../journal/Events.js"

export type AuditKind = "invite" | "join" | "rotation" | "revocation" | "takeover" | "certificate"

/** Who changes the owner's certificate, as its audit row says: the owner's runtime, at its start. */
export const CERTIFICATE_ACTOR = "svc serve (at its start)"

export interface AuditRow {
  readonly sequence: number
  readonly at: number
  readonly kind: AuditKind
  readonly workerId: string | null
  readonly inviteId: string | null
  /** Who did it: the operator for owner commands, the worker for what a worker did. */
  readonly actor: string
  readonly detail: string
}

export type AuditLog = Chunk.Chunk<AuditRow>

/** The actor of a worker's revocation when its installation left (`svc workers leave`). */
export const leftActor = (workerId: string) => `worker ${workerId} (it left)`
export const initialAudit: AuditLog = Chunk.empty()

export const auditRowOf = (envelope: Envelope): AuditRow | undefined => {
  const e = envelope.event
  const row = (kind: AuditKind, workerId: string | null, inviteId: string | null, actor: string, detail: string): AuditRow => ({
    sequence: envelope.sequence,
    at: e.at,
    kind,
    workerId,
    inviteId,
    actor,
    detail
  })
  switch (e._tag) {
    case "WorkerInvited":
      return row(
        "invite",
        null,
        e.inviteId,
        e.actor,
        `invite ${e.inviteId}${e.name === null ? "" : ` for ${e.name}`}; scope ${e.scope.length === 0 ? "all jobs" : e.scope.join(", ")}; ${e.expiresAt === null ? "no expiry" : `expires ${new Date(e.expiresAt).toISOString()}`}`
      )
    case "InviteRevoked":
      return row("revocation", null, e.inviteId, e.actor, `invite ${e.inviteId} revoked unused; its token can no longer be redeemed`)
    case "WorkerJoined":
      return row("join", e.workerId, e.inviteId, `worker ${e.workerId}`, `${e.name} joined with invite ${e.inviteId}${e.replaces === null ? "" : `, replacing worker ${e.replaces}`}`)
    case "JoinAnsweredAgain":
      return row(
        "join",
        e.workerId,
        e.inviteId,
        `worker ${e.workerId}`,
        `join with invite ${e.inviteId} answered again with a new credential: its first answer never reached the joining machine, and the credential it carried no longer works`
      )
    case "CredentialRotationRequested":
      return row("rotation", e.workerId, null, e.actor, "rotation requested; the new credential is issued on the worker's next call")
    case "CredentialRotated":
      return row("rotation", e.workerId, null, `worker ${e.workerId}`, `new credential issued; the old one works until ${new Date(e.previousValidUntil).toISOString()}`)
    case "WorkerRevoked":
      return row("revocation", e.workerId, null, e.actor, "revoked; its next call is refused")
    case "SessionStarted":
      return e.takeover ? row("takeover", e.workerId, null, `worker ${e.workerId}`, `a new process took the session over with fence ${e.fence}; the old one is fenced out`) : undefined
    case "OwnerCertificateChanged":
      return row(
        "certificate",
        null,
        null,
        CERTIFICATE_ACTOR,
        e.signed
          ? `the owner serves another TLS certificate (sha256 ${e.to}, before ${e.from}); the change is signed with the key of the one before, so linked workers follow it`
          : `the owner serves another TLS certificate (sha256 ${e.to}, before ${e.from}); the change could not be signed with the key of the one before: linked workers refuse it, and must join again with a new token`
      )
    case "WorkerAdvertised":
      return undefined
  }
}

export const evolveAudit = (log: AuditLog, envelope: Envelope): AuditLog => {
  const row = auditRowOf(envelope)
  return row === undefined ? log : Chunk.append(log, row)
}
