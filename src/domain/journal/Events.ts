/**
 * The owner's facts, one `Schema` tagged union, each a past-tense event with a schema version
 * (docs/journal.md). Events carry hashes of secrets, never secrets. Times are epoch
 * milliseconds on the owner's clock, passed in by the command (the domain reads no clock).
 *
 * Streams: an invite and its redemption share the stream `invite-<id>` (so an expected
 * version makes a token redeemable once); everything after the join is on `worker-<id>`.
 */
import * as Schema from "effect/Schema"

const Millis = Schema.Number
const Sha256Hex = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

/** An artifact a worker holds: a versioned job and the digest of its bag. */
export const HeldArtifact = Schema.Struct({ address: Schema.String, digest: Schema.String })
export type HeldArtifact = typeof HeldArtifact.Type

export class WorkerInvited extends Schema.TaggedClass<WorkerInvited>()("WorkerInvited", {
  inviteId: Schema.String,
  tokenHash: Sha256Hex,
  name: Schema.NullOr(Schema.String),
  /** `BAG:JOB@VERSION` addresses the worker may claim; empty means unscoped. */
  scope: Schema.Array(Schema.String),
  /** When an unused invite expires; null: never (an unscoped invite without explicit expiry). */
  expiresAt: Schema.NullOr(Millis),
  actor: Schema.String,
  at: Millis
}) {}

export class WorkerJoined extends Schema.TaggedClass<WorkerJoined>()("WorkerJoined", {
  workerId: Schema.String,
  inviteId: Schema.String,
  name: Schema.String,
  credentialHash: Sha256Hex,
  scope: Schema.Array(Schema.String),
  at: Millis
}) {}

export class CredentialRotationRequested extends Schema.TaggedClass<CredentialRotationRequested>()("CredentialRotationRequested", {
  workerId: Schema.String,
  actor: Schema.String,
  at: Millis
}) {}

export class CredentialRotated extends Schema.TaggedClass<CredentialRotated>()("CredentialRotated", {
  workerId: Schema.String,
  credentialHash: Sha256Hex,
  previousHash: Sha256Hex,
  /** The old credential keeps working until then (5 minutes after the rotation). */
  previousValidUntil: Millis,
  at: Millis
}) {}

export class WorkerRevoked extends Schema.TaggedClass<WorkerRevoked>()("WorkerRevoked", {
  workerId: Schema.String,
  actor: Schema.String,
  at: Millis
}) {}

export class SessionStarted extends Schema.TaggedClass<SessionStarted>()("SessionStarted", {
  workerId: Schema.String,
  /** Larger than every earlier fence of this worker; calls carrying an older one are refused. */
  fence: Schema.Int.pipe(Schema.positive()),
  /** A live session of the same worker was displaced (a copied credential took it over). */
  takeover: Schema.Boolean,
  at: Millis
}) {}

/** Version 2: labels are `KEY=VALUE` strings (version 1 stored them as a map; see Upcasting). */
export class WorkerAdvertised extends Schema.TaggedClass<WorkerAdvertised>()("WorkerAdvertised", {
  workerId: Schema.String,
  capacity: Schema.Int.pipe(Schema.between(1, 100)),
  labels: Schema.Array(Schema.String),
  capabilities: Schema.Array(Schema.String),
  artifacts: Schema.Array(HeldArtifact),
  at: Millis
}) {}

export const Event = Schema.Union(
  WorkerInvited,
  WorkerJoined,
  CredentialRotationRequested,
  CredentialRotated,
  WorkerRevoked,
  SessionStarted,
  WorkerAdvertised
)
export type Event = typeof Event.Type
export type EventType = Event["_tag"]

/** The schema version each event type is written with now. */
export const CURRENT_VERSION: { readonly [K in EventType]: number } = {
  WorkerInvited: 1,
  WorkerJoined: 1,
  CredentialRotationRequested: 1,
  CredentialRotated: 1,
  WorkerRevoked: 1,
  SessionStarted: 1,
  WorkerAdvertised: 2
}

export const EVENT_TYPES = Object.keys(CURRENT_VERSION) as ReadonlyArray<EventType>

/** An event as the journal holds it: its place in the global order and in its stream. */
export interface Envelope {
  readonly sequence: number
  readonly stream: string
  readonly streamVersion: number
  readonly type: EventType
  readonly schemaVersion: number
  readonly recordedAt: number
  readonly event: Event
}

export const workerStream = (workerId: string) => `worker-${workerId}`
export const inviteStream = (inviteId: string) => `invite-${inviteId}`
