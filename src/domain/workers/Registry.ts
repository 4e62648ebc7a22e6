/**
 * The workers and invites the owner knows, folded from events (`initialRegistry`, `evolve`).
 * Pure: time comes from the events. What is not journaled (when a worker last called) is not
 * here: display states are computed at query time from this, freshness and now.
 */
import * as HashMap from "effect/HashMap"
import type { Envelope, HeldArtifact } from "../journal/Events.js"

export interface CredentialRecord {
  readonly hash: string
  /** null while current; after a rotation, the end of the old credential's 5 minutes. */
  readonly validUntil: number | null
}

export interface AdvertisementRecord {
  readonly capacity: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<HeldArtifact>
  /** When this content was first journaled (an unchanged refresh is not journaled). */
  readonly at: number
}

export interface WorkerRecord {
  readonly id: string
  readonly name: string
  readonly inviteId: string
  readonly scope: ReadonlyArray<string>
  readonly joinedAt: number
  /** The current credential first. */
  readonly credentials: ReadonlyArray<CredentialRecord>
  readonly rotationPending: boolean
  readonly revokedAt: number | null
  /** The fence of the latest session; 0 before the first hello. */
  readonly fence: number
  readonly sessionStartedAt: number | null
  readonly advertisement: AdvertisementRecord | null
  /** Version of the stream `worker-<id>` (0 until the first event after the join). */
  readonly streamVersion: number
}

export interface InviteRecord {
  readonly id: string
  readonly tokenHash: string
  readonly name: string | null
  readonly scope: ReadonlyArray<string>
  readonly expiresAt: number | null
  readonly invitedAt: number
  readonly actor: string
  readonly redeemedBy: string | null
  readonly redeemedAt: number | null
  /** Version of the stream `invite-<id>`. */
  readonly streamVersion: number
}

export interface Registry {
  readonly workers: HashMap.HashMap<string, WorkerRecord>
  readonly invites: HashMap.HashMap<string, InviteRecord>
}

export const initialRegistry: Registry = { workers: HashMap.empty(), invites: HashMap.empty() }

/** One lookup and update of the worker's record (an event for an unknown worker changes nothing). */
const updateWorker = (state: Registry, id: string, envelope: Envelope, f: (w: WorkerRecord) => WorkerRecord): Registry => {
  const workers = HashMap.modify(state.workers, id, (w) => ({ ...f(w), streamVersion: envelope.streamVersion }))
  return workers === state.workers ? state : { ...state, workers }
}

export const evolveRegistry = (state: Registry, envelope: Envelope): Registry => {
  const e = envelope.event
  switch (e._tag) {
    case "WorkerInvited":
      return {
        ...state,
        invites: HashMap.set(state.invites, e.inviteId, {
          id: e.inviteId,
          tokenHash: e.tokenHash,
          name: e.name,
          scope: e.scope,
          expiresAt: e.expiresAt,
          invitedAt: e.at,
          actor: e.actor,
          redeemedBy: null,
          redeemedAt: null,
          streamVersion: envelope.streamVersion
        })
      }
    case "WorkerJoined": {
      const invites = HashMap.modify(state.invites, e.inviteId, (i) => ({ ...i, redeemedBy: e.workerId, redeemedAt: e.at, streamVersion: envelope.streamVersion }))
      const worker: WorkerRecord = {
        id: e.workerId,
        name: e.name,
        inviteId: e.inviteId,
        scope: e.scope,
        joinedAt: e.at,
        credentials: [{ hash: e.credentialHash, validUntil: null }],
        rotationPending: false,
        revokedAt: null,
        fence: 0,
        sessionStartedAt: null,
        advertisement: null,
        streamVersion: 0
      }
      return { invites, workers: HashMap.set(state.workers, e.workerId, worker) }
    }
    case "CredentialRotationRequested":
      return updateWorker(state, e.workerId, envelope, (w) => ({ ...w, rotationPending: true }))
    case "CredentialRotated":
      return updateWorker(state, e.workerId, envelope, (w) => ({
        ...w,
        rotationPending: false,
        // The previous credential gets its grace window; older ones are gone.
        credentials: [
          { hash: e.credentialHash, validUntil: null },
          { hash: e.previousHash, validUntil: e.previousValidUntil }
        ]
      }))
    case "WorkerRevoked":
      return updateWorker(state, e.workerId, envelope, (w) => ({ ...w, revokedAt: w.revokedAt ?? e.at }))
    case "SessionStarted":
      return updateWorker(state, e.workerId, envelope, (w) => ({ ...w, fence: Math.max(w.fence, e.fence), sessionStartedAt: e.at }))
    case "WorkerAdvertised":
      return updateWorker(state, e.workerId, envelope, (w) => ({
        ...w,
        advertisement: { capacity: e.capacity, labels: e.labels, capabilities: e.capabilities, artifacts: e.artifacts, at: e.at }
      }))
    default:
      return state
  }
}
