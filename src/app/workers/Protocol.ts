/**
 * The messages of the single worker route, `POST /api/worker` (docs/protocol.md). One JSON
 * body per call, tagged by `kind`; strict (unknown fields are refused). Declared once as
 * Schema: the server decodes with it, the worker's client encodes with it, and the OpenAPI
 * document is generated from it.
 */
import * as Schema from "effect/Schema"
import { HeldArtifact, RanMs } from "../../domain/journal/Events.js"
import { joinKeyProblem, makeJoinKey } from "../../domain/workers/Secrets.js"
import { fenceProblem } from "../../domain/workers/Session.js"
import { LABEL, MAX_LABEL_LENGTH } from "../../domain/manifest/Formats.js"

export const PROTOCOL_VERSION = 1

/** The largest body the route takes, in bytes (docs/protocol.md, "Limits"). */
export const MAX_BODY_BYTES = 64 * 1024
/** An advertisement's lists at most (docs/protocol.md, "Limits"). */
export const MAX_LABELS = 100
export const MAX_ARTIFACTS = 1000

/** The bytes of `value` as a JSON body (UTF-8): what it weighs against `MAX_BODY_BYTES`. */
export const jsonBytes = (value: unknown): number => {
  const text = JSON.stringify(value) ?? ""
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) continue
    // Two bytes below U+0800, three up to U+FFFF; a surrogate pair (two units) is four.
    bytes += c < 0x800 ? 1 : c >= 0xd800 && c <= 0xdbff ? 1 : c >= 0xdc00 && c <= 0xdfff ? 1 : 2
  }
  return bytes
}

/**
 * A session's fence: a positive integer JSON carries exactly (`Schema.int` takes safe integers
 * only). One past 2^53 reads as a neighbour (9007199254740993 as ...992), and the default
 * message echoed that rounded number as the value sent.
 */
const fenceRule = { message: () => `a fence is a whole number from 1 to ${Number.MAX_SAFE_INTEGER}` }
const Fence = Schema.Number.pipe(Schema.int(fenceRule), Schema.positive(fenceRule)).annotations({ title: "fence", description: "the session's fence, from the welcome: a whole number from 1 to 2^53 - 1" })
/**
 * A joining worker's name: the transport takes up to 100 characters; the owner then refuses one
 * that is not a worker name (`join-refused`, saying the rule), which the document states.
 */
const Name = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(100, {
    jsonSchema: { maxLength: 63, pattern: "^[\\p{L}\\p{N}][\\p{L}\\p{N}._-]{0,62}$", description: "one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit" }
  })
)
const ShortList = <A, I>(item: Schema.Schema<A, I>, max: number) => Schema.Array(item).pipe(Schema.maxItems(max))
const Label = Schema.String.pipe(Schema.pattern(LABEL), Schema.maxLength(MAX_LABEL_LENGTH))

/** Redeem a join token (the bearer) for a worker identity and credential. */
export const Join = Schema.Struct({
  kind: Schema.Literal("join"),
  name: Name,
  /**
   * A credential this installation held from an earlier join to this owner (revoked or not):
   * proof that it was that worker, whose held slots the new identity's hello then releases.
   */
  previousCredential: Schema.optionalWith(
    // A secret: what is wrong with it is said without repeating it (the default messages quote the value).
    Schema.String.annotations({ message: () => "previousCredential must be a string" }).pipe(
      Schema.maxLength(200, { message: () => "previousCredential must be a worker credential (at most 200 characters)" })
    ),
    { exact: true }
  ),
  /**
   * Revision 5: a secret the joining machine made for this join (`svc_jk_…`, kept until its answer
   * arrives). The owner keeps its hash; sent again with the same token while the worker it made
   * has not said hello, it answers the join again with a new credential. Sent to any owner (a
   * join comes before a welcome says a revision): an owner before revision 5 refuses the field
   * (bad-request, nothing recorded), and the join is sent again without it.
   */
  joinKey: Schema.optionalWith(
    // A secret: what is wrong with it is said without repeating it (the default messages quote the value).
    Schema.String.annotations({ message: () => "joinKey must be a string" }).pipe(
      Schema.filter((key) => joinKeyProblem(key) ?? true, {
        jsonSchema: { pattern: "^svc_jk_[0-9A-Za-z]{36}$", description: "svc_jk_, 30 random base62 characters and a 6-character base62 CRC-32 of what precedes it" },
        // Generated as made (a random string would almost never carry its checksum).
        arbitrary: () => (fc) => fc.uint8Array({ minLength: 30, maxLength: 30 }).map(makeJoinKey)
      })
    ),
    { exact: true }
  )
})

/** Start a session: answers the fence every later call carries. */
export const Hello = Schema.Struct({
  kind: Schema.Literal("hello"),
  protocol: Schema.Literal(PROTOCOL_VERSION),
  /** Activity attempts this process still runs (reconciled by placement). */
  running: ShortList(Schema.String, 100),
  /**
   * Sent by a process saying hello again (it lost the owner, or the owner restarted): the fence
   * and key of the session it held. When they are the worker's latest session's, the new session
   * resumes it, which is no takeover (docs/protocol.md, "Sessions and fencing").
   */
  resumes: Schema.optionalWith(Schema.Struct({ fence: Fence, key: Schema.String.pipe(Schema.maxLength(100)) }), { exact: true })
})
export type Hello = typeof Hello.Type
export type Join = typeof Join.Type

/** `os` and `arch` name the machine: given twice with two values, every placement on them would be a guess. */
const onceEach = (labels: ReadonlyArray<string>): string | true => {
  for (const key of ["os", "arch"]) {
    const given = [...new Set(labels.filter((l) => l.startsWith(`${key}=`)))]
    if (given.length > 1) return `labels give ${key} ${given.length} values (${given.join(", ")}): a machine has one`
  }
  return true
}

export const Advertise = Schema.Struct({
  kind: Schema.Literal("advertise"),
  fence: Fence,
  capacity: Schema.Int.pipe(Schema.between(1, 100)),
  labels: ShortList(Label, MAX_LABELS).pipe(Schema.filter(onceEach)),
  capabilities: ShortList(Schema.String.pipe(Schema.maxLength(100)), 100),
  artifacts: ShortList(HeldArtifact, MAX_ARTIFACTS),
  /**
   * Slots of the machine in use by other work as it advertises: attempts for other owners and its
   * own runs. Not part of the offer (never journaled): the owner counts them as used when it
   * places (docs/runs.md, "On a worker"). Absent: none.
   */
  busy: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100)), { exact: true })
})
export type Advertise = typeof Advertise.Type

/** Where a piece of a stream lies in the worker's copy of it: its first byte and the byte after its last. */
const PieceAt = Schema.Tuple(Schema.NonNegativeInt, Schema.NonNegativeInt)

/** Output an attempt printed since the last call, at most 64 KiB per stream per call. */
export const OutputDelta = Schema.Struct({
  attempt: Schema.String,
  stdout: Schema.String.pipe(Schema.maxLength(65_536)),
  stderr: Schema.String.pipe(Schema.maxLength(65_536)),
  /**
   * Revision 4: where each piece lies in the worker's copy (bytes), so that the owner writes once
   * a piece it is sent again (the answer that took it was lost) and the part of a longer piece
   * sent again that it has already (docs/runs.md, "Output").
   */
  at: Schema.optionalWith(Schema.Struct({ stdout: PieceAt, stderr: PieceAt }), { exact: true })
})
export type OutputDelta = typeof OutputDelta.Type

/** While it runs attempts: which ones, and their new output. */
export const Heartbeat = Schema.Struct({
  kind: Schema.Literal("heartbeat"),
  fence: Fence,
  running: ShortList(Schema.String, 100),
  output: Schema.optionalWith(ShortList(OutputDelta, 100), { exact: true }),
  /**
   * Those of `running` that wait on this machine for a free slot, not started yet (other work
   * took the slots between the claim and its answer); absent: none (docs/runs.md).
   */
  waiting: Schema.optionalWith(ShortList(Schema.String, 100), { exact: true })
})
export type Heartbeat = typeof Heartbeat.Type

export const Claim = Schema.Struct({
  kind: Schema.Literal("claim"),
  fence: Fence,
  /** How long the owner may hold the call open waiting for work (long poll). */
  waitSeconds: Schema.Int.pipe(Schema.between(0, 30)),
  /**
   * The attempts this worker runs (until their reports are answered). Sent by a worker that
   * has no other claim in flight: an attempt the owner started for it and it does not list
   * was handed out in an answer that never arrived, and is placed again (docs/protocol.md).
   */
  running: Schema.optionalWith(ShortList(Schema.String, 100), { exact: true }),
  /**
   * As on `advertise`: the machine's slots other work holds as it claims (absent: none). A worker
   * claims when a slot is free, so this is the freshest word of it the owner gets.
   */
  busy: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100)), { exact: true })
})
export type Claim = typeof Claim.Type

export const Decline = Schema.Struct({
  kind: Schema.Literal("decline"),
  fence: Fence,
  attempt: Schema.String,
  reason: Schema.String.pipe(Schema.maxLength(500))
})
export type Decline = typeof Decline.Type

export const Report = Schema.Struct({
  kind: Schema.Literal("report"),
  fence: Fence,
  attempt: Schema.String,
  outcome: Schema.Struct({
    ok: Schema.Boolean,
    result: Schema.optionalWith(Schema.Unknown, { exact: true }),
    error: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(2000)), { exact: true }),
    exitCode: Schema.optionalWith(Schema.NullOr(Schema.Int), { exact: true }),
    /** How long the job ran, as the worker measured it (its report can arrive much later, the owner being away). */
    durationMs: Schema.optionalWith(RanMs, { exact: true })
  }),
  /** The output not yet sent with a heartbeat. */
  output: Schema.optionalWith(OutputDelta, { exact: true }),
  /**
   * And claim, without waiting: once the report is recorded, an attempt already placed on this
   * worker is started and handed over in the answer (`next`), so a busy worker needs one call
   * per attempt instead of two. Sent by a worker whose freed slot would take it
   * (docs/protocol.md, "Report and claim the next").
   */
  claimNext: Schema.optionalWith(Schema.Boolean, { exact: true }),
  /**
   * With `claimNext`, as a claim's `running`: the attempts the worker runs besides the one
   * reported, sent when no other call that lists them is in flight; an attempt the owner
   * started for it that the list leaves out was handed out in an answer that never arrived.
   */
  running: Schema.optionalWith(ShortList(Schema.String, 100), { exact: true })
})
export type Report = typeof Report.Type

/**
 * This installation stops working for the owner (`svc workers leave`): the owner revokes the
 * worker as it would on its operator's word, saying it left. No session needed (no fence): the
 * command is not the runtime. `running`, when given: the attempts it still runs for this owner,
 * as a hello lists them, said once its own runtime has stopped the link's work (normally none):
 * the owner frees the slots of the others, which it would otherwise hold until its operator
 * released them. Without it, the installation cannot say (no runtime running here).
 */
export const Leave = Schema.Struct({ kind: Schema.Literal("leave"), running: Schema.optional(ShortList(Schema.String, 100)) })
export type Leave = typeof Leave.Type

/**
 * The worker's process stops cleanly (`svc serve` asked to stop), having stopped what it ran for
 * the owner: its session ends now rather than when its advertisement lapses, so the owner places
 * that work again at once, and the process that starts next is no takeover (docs/protocol.md,
 * "Sessions and fencing"). Answered with an ack.
 */
export const Bye = Schema.Struct({
  kind: Schema.Literal("bye"),
  fence: Fence,
  /** Revision 3: the link ends because this installation leaves the owner (`svc workers leave`), not for a stop of its runtime. */
  leaving: Schema.optionalWith(Schema.Literal(true), { exact: true })
})
export type Bye = typeof Bye.Type

/** The body of a call, told apart by `kind`. */
export const WorkerRequest = Schema.Union(Join, Hello, Advertise, Heartbeat, Claim, Decline, Report, Leave, Bye)
export type WorkerRequest = typeof WorkerRequest.Type

/** A new credential, handed over in the answer to the worker's next call after a rotation. */
export const CredentialHandOver = Schema.Struct({
  credential: Schema.String,
  /** Until when the credential the worker presented keeps working. */
  previousValidUntil: Schema.String
})

export const Joined = Schema.Struct({
  kind: Schema.Literal("joined"),
  workerId: Schema.String,
  name: Schema.String,
  /** Printed once, here; the owner keeps only its SHA-256. */
  credential: Schema.String,
  scope: Schema.Array(Schema.String),
  /** The earlier identity this join replaces (see Join.previousCredential), or null. */
  replaces: Schema.NullOr(Schema.String),
  /** Revision 5: true when this answers a join again (Join.joinKey): its first answer never arrived. */
  answeredAgain: Schema.optionalWith(Schema.Literal(true), { exact: true })
})
export type Joined = typeof Joined.Type

export const Welcome = Schema.Struct({
  kind: Schema.Literal("welcome"),
  workerId: Schema.String,
  name: Schema.String,
  fence: Fence,
  scope: Schema.Array(Schema.String),
  advertiseEverySeconds: Schema.Number,
  /** Attempts the hello listed that this worker must stop (superseded, stopped or unknown). */
  stop: Schema.Array(Schema.String),
  newCredential: Schema.NullOr(CredentialHandOver),
  /** This session's key: kept by the process in memory only, presented in its next hello (`resumes`). */
  sessionKey: Schema.optionalWith(Schema.String, { exact: true }),
  /** What of the protocol the owner takes (`PROTOCOL_REVISION`); absent: an owner from before revisions, 1. */
  revision: Schema.optionalWith(Schema.Int, { exact: true })
})
export type Welcome = typeof Welcome.Type

/**
 * The protocol's revision (docs/protocol.md, "Revisions"). The route refuses fields it does not
 * know, so what a revision adds to a worker's messages is sent only to an owner whose welcome
 * says that revision or a later one; an owner from before revisions (none in its welcome) takes
 * revision 1's. Revision 2 added a report's `outcome.durationMs` and the `bye` message; revision
 * 3, bye's `leaving`; revision 4, an output delta's `at`; revision 5, a join's `joinKey` (sent
 * before any welcome: see Join).
 */
export const PROTOCOL_REVISION = 5
/** The revision an owner's welcome says it takes. */
export const revisionOf = (welcome: Welcome): number => welcome.revision ?? 1

/** An attempt handed to a worker: run the job it names, with this input. */
const AssignmentFields = {
  attempt: Schema.String,
  runId: Schema.String,
  /** `BAG:JOB@VERSION`, pinned by the digest of the bag the worker must hold. */
  address: Schema.String,
  digest: Schema.String,
  input: Schema.Unknown,
  timeoutMs: Schema.NullOr(Schema.Number),
  /**
   * The most bytes of each stream of its output the owner keeps (its SVC_WORKFLOW_OUTPUT_LIMIT):
   * the worker keeps and sends no more, nor more than its own limit. Absent: an owner from before it.
   */
  outputLimit: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { exact: true })
}
export const Assignment = Schema.Struct(AssignmentFields)
export type Assignment = typeof Assignment.Type

export const Ack = Schema.Struct({
  kind: Schema.Literal("ack"),
  /** Activity attempts the worker must stop (after a `runs stop`, or on revocation). */
  stop: Schema.Array(Schema.String),
  newCredential: Schema.NullOr(CredentialHandOver),
  /** To a report with `claimNext`: the attempt started for this worker, or null when none was placed on it. */
  next: Schema.optionalWith(Schema.NullOr(Assignment), { exact: true })
})
export type Ack = typeof Ack.Type

export const NoWork = Schema.Struct({
  kind: Schema.Literal("no-work"),
  retryAfterSeconds: Schema.Number,
  newCredential: Schema.NullOr(CredentialHandOver)
})
export type NoWork = typeof NoWork.Type

/** An attempt handed to the claiming worker: run the job it names, with this input. */
export const Work = Schema.Struct({
  kind: Schema.Literal("work"),
  ...AssignmentFields,
  newCredential: Schema.NullOr(CredentialHandOver)
})
export type Work = typeof Work.Type

/** The answer to `leave`: the worker is revoked; its credential opens nothing any more. */
export const Left = Schema.Struct({
  kind: Schema.Literal("left"),
  workerId: Schema.String,
  name: Schema.String,
  /** With a `running` list in the leave: how many slots the owner freed (attempts it no longer runs). */
  released: Schema.optional(Schema.Number)
})
export type Left = typeof Left.Type

export const WorkerResponse = Schema.Union(Joined, Welcome, Ack, NoWork, Work, Left)
export type WorkerResponse = typeof WorkerResponse.Type

/**
 * Every refusal: a stable code, one sentence, and for `revoked` the instruction to stop all
 * running work. Status codes are in docs/protocol.md.
 */
export const RefusalCode = Schema.Literal(
  "bad-request",
  "unauthenticated",
  "join-refused",
  "revoked",
  "fenced",
  "out-of-scope",
  "unknown-activity",
  "superseded",
  "payload-too-large",
  "unsupported-media-type",
  "unavailable"
)
export type RefusalCode = typeof RefusalCode.Type

export class Refusal extends Schema.TaggedError<Refusal>()("Refusal", {
  code: RefusalCode,
  message: Schema.String,
  stopAll: Schema.optionalWith(Schema.Boolean, { exact: true })
}) {}

/**
 * The refusal of a call the owner could not record for want of its store (a full disk, an I/O
 * error), not for anything the call said: nothing changed, and the same call made again may be
 * taken. A worker treats it as the owner not reachable for now (it keeps a report and sends it
 * again); a worker from before it (revision 3) reads an unknown code, and does the same.
 */
export const unavailableRefusal = (reason: string) => new Refusal({ code: "unavailable", message: `the owner cannot record this now (${reason}); nothing was changed: call again` })

/** The refusal of a revoked worker's call: it must stop all its work. */
export const revokedRefusal = () => new Refusal({ code: "revoked", message: "this worker is revoked (by the owner's operator, or as its installation left or joined again): stop all its work", stopAll: true })

/** The refusal of a call under a fence that is not the worker's current session's, if it is not. */
export const fenceRefusal = (worker: { readonly fence: number }, fence: number): Refusal | undefined => {
  const problem = fenceProblem(worker, fence)
  return problem === undefined ? undefined : new Refusal({ code: "fenced", message: problem })
}

export const STATUS: Readonly<Record<RefusalCode, number>> = {
  "bad-request": 400,
  unauthenticated: 401,
  "join-refused": 403,
  revoked: 403,
  "out-of-scope": 403,
  "unknown-activity": 404,
  fenced: 409,
  superseded: 409,
  "payload-too-large": 413,
  "unsupported-media-type": 415,
  unavailable: 503
}
