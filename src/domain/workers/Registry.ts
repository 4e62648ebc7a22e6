/**
 * The workers and invites the owner knows, folded from events (`initialRegistry`, `evolve`).
 * Pure: time comes from the events. What is not journaled (when a worker last called) is not
 * here: display states are computed at query time from this, freshness and now.
 */
import * as HashMap from "effect/HashMap"
import type * as Option from "effect/Option"
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
  /** The earlier identity of the same installation this worker replaced at its join, or null. */
  readonly replaces: string | null
  /**
   * SHA-256 of the join key its joiner sent (WorkerJoined.joinKeyHash). Absent rather than null
   * when there was none: the projections' canonical form, and so the snapshots and checkpoints
   * written before join keys, stay as they were.
   */
  readonly joinKeyHash?: string
  /** The current credential first. */
  readonly credentials: ReadonlyArray<CredentialRecord>
  readonly rotationPending: boolean
  readonly revokedAt: number | null
  /** The fence of the latest session; 0 before the first hello. */
  readonly fence: number
  readonly sessionStartedAt: number | null
  /** SHA-256 of the latest session's key (SessionStarted.keyHash); absent until a session had one. */
  readonly sessionKeyHash?: string
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
  /**
   * When and by whom it was revoked unused (`InviteRevoked`). Absent rather than null while it
   * is not: the projections' canonical form, and so the snapshots and checkpoints written before
   * invites could be revoked, stay as they were.
   */
  readonly revokedAt?: number
  readonly revokedBy?: string
  /** Version of the stream `invite-<id>`. */
  readonly streamVersion: number
}

export interface Registry {
  readonly workers: HashMap.HashMap<string, WorkerRecord>
  readonly invites: HashMap.HashMap<string, InviteRecord>
}

export const initialRegistry: Registry = { workers: HashMap.empty(), invites: HashMap.empty() }

/**
 * Where one event's changes to the registry go: read and replace a worker or an invite. The
 * registry's transitions are written once, against these; `evolveRegistry` backs them with the
 * persistent maps, and `OwnerState.fold` with plain mutable maps for a whole batch of events.
 */
export interface RegistryMaps {
  readonly worker: (id: string) => WorkerRecord | undefined
  readonly setWorker: (id: string, worker: WorkerRecord) => void
  /** Replaces `worker` (what `worker(id)` answered) with itself changed by `change`: `{ ...worker, ...change }`. */
  readonly updateWorker: (id: string, worker: WorkerRecord, change: Partial<WorkerRecord>) => void
  readonly invite: (id: string) => InviteRecord | undefined
  readonly setInvite: (id: string, invite: InviteRecord) => void
  readonly updateInvite: (id: string, invite: InviteRecord, change: Partial<InviteRecord>) => void
}

/** What one event does to the registry (an event for an unknown worker or invite changes nothing). */
export const applyRegistry = (maps: RegistryMaps, envelope: Envelope): void => {
  const e = envelope.event
  switch (e._tag) {
    case "WorkerInvited":
      maps.setInvite(e.inviteId, {
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
      return
    case "InviteRevoked": {
      const invite = maps.invite(e.inviteId)
      if (invite !== undefined) maps.updateInvite(e.inviteId, invite, { revokedAt: e.at, revokedBy: e.actor, streamVersion: envelope.streamVersion })
      return
    }
    case "WorkerJoined": {
      const invite = maps.invite(e.inviteId)
      if (invite !== undefined) maps.updateInvite(e.inviteId, invite, { redeemedBy: e.workerId, redeemedAt: e.at, streamVersion: envelope.streamVersion })
      maps.setWorker(e.workerId, {
        id: e.workerId,
        name: e.name,
        inviteId: e.inviteId,
        scope: e.scope,
        joinedAt: e.at,
        replaces: e.replaces,
        credentials: [{ hash: e.credentialHash, validUntil: null }],
        rotationPending: false,
        revokedAt: null,
        fence: 0,
        sessionStartedAt: null,
        advertisement: null,
        streamVersion: 0,
        ...(e.joinKeyHash === null ? {} : { joinKeyHash: e.joinKeyHash })
      })
      return
    }
    case "JoinAnsweredAgain":
    case "CredentialRotationRequested":
    case "CredentialRotated":
    case "WorkerRevoked":
    case "SessionStarted":
    case "WorkerAdvertised": {
      // One lookup and update of the worker's record.
      const w = maps.worker(e.workerId)
      if (w === undefined) return
      const streamVersion = envelope.streamVersion
      switch (e._tag) {
        case "JoinAnsweredAgain":
          // The credential nobody received is gone at once; a rotation asked for meanwhile is done.
          return maps.updateWorker(e.workerId, w, { credentials: [{ hash: e.credentialHash, validUntil: null }], rotationPending: false, streamVersion })
        case "CredentialRotationRequested":
          return maps.updateWorker(e.workerId, w, { rotationPending: true, streamVersion })
        case "CredentialRotated":
          return maps.updateWorker(e.workerId, w, {
            rotationPending: false,
            // The previous credential gets its grace window; older ones are gone.
            credentials: [
              { hash: e.credentialHash, validUntil: null },
              { hash: e.previousHash, validUntil: e.previousValidUntil }
            ],
            streamVersion
          })
        case "WorkerRevoked":
          return maps.updateWorker(e.workerId, w, { revokedAt: w.revokedAt ?? e.at, streamVersion })
        case "SessionStarted":
          return maps.updateWorker(e.workerId, w, {
            fence: Math.max(w.fence, e.fence),
            sessionStartedAt: e.at,
            // Kept only when the session has one, so that states from before it are unchanged (and their digests).
            ...(e.keyHash === undefined ? {} : { sessionKeyHash: e.keyHash }),
            streamVersion
          })
        case "WorkerAdvertised":
          return maps.updateWorker(e.workerId, w, {
            advertisement: { capacity: e.capacity, labels: e.labels, capabilities: e.capabilities, artifacts: e.artifacts, at: e.at },
            streamVersion
          })
      }
    }
  }
}

const orUndefined = <V>(found: Option.Option<V>): V | undefined => (found._tag === "Some" ? found.value : undefined)

export const evolveRegistry = (state: Registry, envelope: Envelope): Registry => {
  let { workers, invites } = state
  applyRegistry(
    {
      worker: (id) => orUndefined(HashMap.get(workers, id)),
      setWorker: (id, worker) => void (workers = HashMap.set(workers, id, worker)),
      updateWorker: (id, worker, change) => void (workers = HashMap.set(workers, id, { ...worker, ...change })),
      invite: (id) => orUndefined(HashMap.get(invites, id)),
      setInvite: (id, invite) => void (invites = HashMap.set(invites, id, invite)),
      updateInvite: (id, invite, change) => void (invites = HashMap.set(invites, id, { ...invite, ...change }))
    },
    envelope
  )
  return workers === state.workers && invites === state.invites ? state : { workers, invites }
}
