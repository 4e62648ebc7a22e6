/**
 * The owner's facts, one `Schema` tagged union, each a past-tense event with a schema version
 * (docs/journal.md). Events carry hashes of secrets, never secrets. Times are epoch
 * milliseconds on the owner's clock, passed in by the command (the domain reads no clock).
 *
 * Streams: an invite and its redemption share the stream `invite-<id>` (so an expected
 * version makes a token redeemable once); everything after the join is on `worker-<id>`;
 * a run, its placement decisions and its attempts are on `run-<id>`.
 */
import * as Schema from "effect/Schema"

/** The latest instant a JavaScript `Date` can hold (8.64e15 ms, in the year 275760). */
export const LATEST_MILLIS = 8.64e15

/**
 * An instant in epoch milliseconds: a whole number a `Date` can hold. Checked when an event is
 * made, so that nothing is journaled that the owner could not show again (an invite's
 * `expiresAt` of 1e18 once made every later fold that formats it throw).
 */
const Millis = Schema.Number.pipe(
  Schema.filter((n) => (Number.isSafeInteger(n) && n >= 0 && n <= LATEST_MILLIS) || "must be a whole number of milliseconds since 1970 that a date can hold")
)
const Sha256Hex = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))
/** A job's run time as its host measured it: whole milliseconds, a year at most (a job's longest timeout). */
export const RanMs = Schema.Number.pipe(
  Schema.filter((n) => (Number.isSafeInteger(n) && n >= 0 && n <= 366 * 86_400_000) || "must be a whole number of milliseconds, a year at most", {
    jsonSchema: { type: "integer", minimum: 0, maximum: 366 * 86_400_000 }
  })
)
const isRanMs = Schema.is(RanMs)
/** An executor's measured run time as recorded: whole milliseconds, or undefined when it is no `RanMs`. */
export const ranMsOf = (durationMs: number): number | undefined => {
  const ran = Math.round(durationMs)
  return isRanMs(ran) ? ran : undefined
}

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

/** The operator withdrew an invite before it was redeemed: its token can no longer be. */
export class InviteRevoked extends Schema.TaggedClass<InviteRevoked>()("InviteRevoked", {
  inviteId: Schema.String,
  actor: Schema.String,
  at: Millis
}) {}

export class WorkerJoined extends Schema.TaggedClass<WorkerJoined>()("WorkerJoined", {
  workerId: Schema.String,
  inviteId: Schema.String,
  name: Schema.String,
  credentialHash: Sha256Hex,
  scope: Schema.Array(Schema.String),
  /**
   * The earlier identity of the same installation (v2): the join proved it held one of that
   * worker's credentials. The new identity's hello releases the slots the old one still holds.
   */
  replaces: Schema.NullOr(Schema.String),
  /**
   * SHA-256 of the join key the joining machine sent with its join (v3), or null (an svc from
   * before it sent none): that machine, and only it, can have the join answered again.
   */
  joinKeyHash: Schema.NullOr(Sha256Hex),
  at: Millis
}) {}

/**
 * A join answered again: its first answer never reached the joining machine (the connection
 * broke), which sent the same join key again before its worker had used the credential. The
 * worker's credential is replaced by a new one; the first, which nobody received, no longer
 * works. On the worker's stream, so a hello and this cannot both win.
 */
export class JoinAnsweredAgain extends Schema.TaggedClass<JoinAnsweredAgain>()("JoinAnsweredAgain", {
  workerId: Schema.String,
  inviteId: Schema.String,
  credentialHash: Sha256Hex,
  /** The credential the first answer carried, which no longer works. */
  previousHash: Sha256Hex,
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
  at: Millis,
  /**
   * SHA-256 of the session key handed to the process in its welcome (never the key): the same
   * process proves with it, in its next hello, that it resumes its own session (after losing the
   * owner, or the owner's restart), which is then no takeover. Absent from sessions started
   * before it existed.
   */
  keyHash: Schema.optionalWith(Schema.String, { exact: true })
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

/** What a submitted run needs, resolved on the owner from the installed bag at submission. */
export const RunJob = Schema.Struct({
  /** `BAG:JOB@VERSION` */
  address: Schema.String,
  bag: Schema.String,
  job: Schema.String,
  digest: Schema.String,
  executor: Schema.Literal("node", "process"),
  remoteEligible: Schema.Boolean,
  /** Why it is not remote-eligible (empty when it is). */
  ownerOnly: Schema.Array(Schema.String),
  requiredLabels: Schema.Array(Schema.String),
  requiredBins: Schema.Array(Schema.String),
  bounds: Schema.Array(Schema.String),
  timeoutMs: Schema.NullOr(Schema.Number)
})
export type RunJob = typeof RunJob.Type

export class RunSubmitted extends Schema.TaggedClass<RunSubmitted>()("RunSubmitted", {
  runId: Schema.String,
  job: RunJob,
  /** Valid against the job's input_schema (checked before admission). */
  input: Schema.Unknown,
  preferredLabels: Schema.Array(Schema.String),
  actor: Schema.String,
  /**
   * The submitter's idempotency key (`svc run --idempotency-key`), the run's id derived from it:
   * the same key submitted again answers this run. Version 2; absent from version 1 and from runs
   * submitted without one.
   */
  key: Schema.optionalWith(Schema.String, { exact: true }),
  at: Millis
}) {}

const PlacementActivity = Schema.Struct({
  id: Schema.String,
  address: Schema.String,
  digest: Schema.String,
  executor: Schema.String,
  remoteEligible: Schema.Boolean,
  requiredLabels: Schema.Array(Schema.String),
  requiredBins: Schema.Array(Schema.String),
  preferredLabels: Schema.Array(Schema.String),
  bounds: Schema.Array(Schema.String),
  declinedBy: Schema.Array(Schema.String),
  /** The placement rules' revision (absent before version 4: revision 1). */
  rules: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true })
})
const Ledger = Schema.Struct({ capacity: Schema.Number, used: Schema.Number })
const PlacementCandidate = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  isOwner: Schema.Boolean,
  revoked: Schema.Boolean,
  advertisementAlive: Schema.Boolean,
  /** Why it is not alive, when known (a decision recorded before this field has none: "it lapsed"). */
  silence: Schema.optionalWith(Schema.Literal("ended", "unheard", "never", "hello"), { exact: true }),
  scope: Schema.Array(Schema.String),
  labels: Schema.Array(Schema.String),
  capabilities: Schema.Array(Schema.String),
  bins: Schema.Array(Schema.String),
  artifacts: Schema.Array(HeldArtifact),
  slots: Ledger
})
/** One exclusion of a candidate, as a verdict records it. */
export const PlacementExclusion = Schema.Union(
  Schema.Struct({ layer: Schema.Literal("eligibility"), code: Schema.String, text: Schema.String }),
  Schema.Struct({
    layer: Schema.Literal("capacity"),
    code: Schema.String,
    text: Schema.String,
    requested: Schema.Number,
    used: Schema.Number,
    capacity: Schema.Number
  })
)
const PlacementVerdict = Schema.Struct({
  candidate: Schema.String,
  name: Schema.String,
  exclusions: Schema.Array(PlacementExclusion),
  score: Schema.NullOr(Schema.Struct({ locality: Schema.Number, preference: Schema.Number }))
})

/** The run placement record (spec): separate items, each null when it does not apply. */
export const PlacementRecord = Schema.Struct({
  executionHost: Schema.NullOr(Schema.String),
  inferenceEndpoint: Schema.NullOr(Schema.String),
  requestedModel: Schema.NullOr(Schema.String),
  resolvedModel: Schema.NullOr(Schema.String),
  /** How the host was chosen among those with room (locality, preference, tie-break). */
  selectionProvenance: Schema.String,
  limits: Schema.Struct({ timeoutMs: Schema.NullOr(Schema.Number), bounds: Schema.Array(Schema.String) })
})
export type PlacementRecord = typeof PlacementRecord.Type

/**
 * One placement decision with every input it was made from, so `svc journal replay --audit`
 * can run it again through the current placement code. A placed decision assigns `attempt`
 * to `host` and reserves one of its slots.
 */
export class PlacementDecided extends Schema.TaggedClass<PlacementDecided>()("PlacementDecided", {
  runId: Schema.String,
  /** The attempt a placed decision starts; null for blocked and waiting. */
  attempt: Schema.NullOr(Schema.Int),
  activity: PlacementActivity,
  candidates: Schema.Array(PlacementCandidate),
  quotas: Schema.Struct({ logical: Schema.NullOr(Ledger), endpoint: Schema.NullOr(Ledger) }),
  /** What the inputs leave out and why (no model, no detached-agent quota...). */
  notes: Schema.Array(Schema.String),
  outcome: Schema.Literal("placed", "blocked", "waiting"),
  host: Schema.NullOr(Schema.String),
  verdicts: Schema.Array(PlacementVerdict),
  record: PlacementRecord,
  at: Millis
}) {}

/** The host began the attempt: a worker's claim (with its session fence), or the owner itself. */
export class AttemptStarted extends Schema.TaggedClass<AttemptStarted>()("AttemptStarted", {
  runId: Schema.String,
  attempt: Schema.Int,
  host: Schema.String,
  fence: Schema.NullOr(Schema.Int),
  at: Millis
}) {}

export class AttemptDeclined extends Schema.TaggedClass<AttemptDeclined>()("AttemptDeclined", {
  runId: Schema.String,
  attempt: Schema.Int,
  host: Schema.String,
  reason: Schema.String,
  at: Millis
}) {}

export class AttemptReported extends Schema.TaggedClass<AttemptReported>()("AttemptReported", {
  runId: Schema.String,
  attempt: Schema.Int,
  host: Schema.String,
  ok: Schema.Boolean,
  /** Valid against the job's output_schema when ok (checked before it is recorded). */
  result: Schema.Unknown,
  error: Schema.NullOr(Schema.String),
  exitCode: Schema.NullOr(Schema.Int),
  /**
   * How long the job ran on its host, as the host measured it (optional: absent from reports
   * before it existed). `at` is when the report arrived, later than the job's end when the
   * owner could not be reached.
   */
  ranMs: Schema.optionalWith(RanMs, { exact: true }),
  at: Millis
}) {}

/** The attempt no longer counts (its host's advertisement lapsed, it was revoked...): placed again. */
export class AttemptSuperseded extends Schema.TaggedClass<AttemptSuperseded>()("AttemptSuperseded", {
  runId: Schema.String,
  attempt: Schema.Int,
  host: Schema.String,
  reason: Schema.String,
  at: Millis
}) {}

/** The owner observed that a superseded or stopped attempt no longer runs: its slot is free. */
export class AttemptCeased extends Schema.TaggedClass<AttemptCeased>()("AttemptCeased", {
  runId: Schema.String,
  attempt: Schema.Int,
  host: Schema.String,
  reason: Schema.String,
  at: Millis
}) {}

export class RunStopRequested extends Schema.TaggedClass<RunStopRequested>()("RunStopRequested", {
  runId: Schema.String,
  actor: Schema.String,
  at: Millis
}) {}

/**
 * The owner began serving another TLS certificate than the one it served before (docs/protocol.md,
 * "When the owner's certificate changes"): both SHA-256 fingerprints (hex), and whether the change
 * is signed with the key of the one before (linked workers follow a signed change; an unsigned one
 * they refuse, and join again with a new token). No secret: a certificate is public.
 */
export class OwnerCertificateChanged extends Schema.TaggedClass<OwnerCertificateChanged>()("OwnerCertificateChanged", {
  from: Sha256Hex,
  to: Sha256Hex,
  signed: Schema.Boolean,
  at: Millis
}) {}

export const Event = Schema.Union(
  WorkerInvited,
  InviteRevoked,
  WorkerJoined,
  JoinAnsweredAgain,
  CredentialRotationRequested,
  CredentialRotated,
  WorkerRevoked,
  SessionStarted,
  WorkerAdvertised,
  RunSubmitted,
  PlacementDecided,
  AttemptStarted,
  AttemptDeclined,
  AttemptReported,
  AttemptSuperseded,
  AttemptCeased,
  RunStopRequested,
  OwnerCertificateChanged
)
export type Event = typeof Event.Type
export type EventType = Event["_tag"]

/** The schema version each event type is written with now. */
export const CURRENT_VERSION: { readonly [K in EventType]: number } = {
  WorkerInvited: 1,
  InviteRevoked: 1,
  WorkerJoined: 3,
  JoinAnsweredAgain: 1,
  CredentialRotationRequested: 1,
  CredentialRotated: 1,
  WorkerRevoked: 1,
  SessionStarted: 1,
  WorkerAdvertised: 2,
  RunSubmitted: 2,
  PlacementDecided: 5,
  AttemptStarted: 1,
  AttemptDeclined: 1,
  AttemptReported: 1,
  AttemptSuperseded: 1,
  AttemptCeased: 1,
  RunStopRequested: 1,
  OwnerCertificateChanged: 1
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
/** Each change of the owner's certificate in a stream of its own (one event): `certificate-<to>-<at>`. */
export const certificateStream = (to: string, at: number) => `certificate-${to.slice(0, 16)}-${at}`
export const inviteStream = (inviteId: string) => `invite-${inviteId}`
/** Every run's stream name starts so. */
export const RUN_STREAM_PREFIX = "run-"
export const runStream = (runId: string) => `${RUN_STREAM_PREFIX}${runId}`
