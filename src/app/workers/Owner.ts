/**
 * The owner side of the worker protocol: every rule of worker-protocol.md that a call must
 * pass (identity from the credential only, hashes compared in constant time, revocation,
 * rotation hand-over, fencing, advertisement freshness), decided by the pure deciders and
 * journaled through the live projections. The HTTP layer only decodes, calls `handle`, and
 * encodes. Secrets are minted here and leave only in the one answer that hands them over. The
 * operator's commands about workers (invite, rotate, revoke, status) are OperatorCommands.ts,
 * served beside the route over the same projections.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Envelope, WorkerJoined } from "../../domain/journal/Events.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { leftActor } from "../../domain/workers/Audit.js"
import * as Decide from "../../domain/workers/Decide.js"
import { ADVERTISEMENT_REFRESH_MS, offerCurrent } from "../../domain/workers/DisplayState.js"
import type { Registry, WorkerRecord } from "../../domain/workers/Registry.js"
import { base62FromBytes, credentialProblem, CREDENTIAL_PREFIX, makeCredential, parseJoinToken } from "../../domain/workers/Secrets.js"
import { Hashing } from "../journal/Hashing.js"
import { Projections } from "../journal/Projections.js"
import { Dispatcher, layer as DispatcherLayer, OwnerHost, stopsIn } from "../runs/Dispatcher.js"
import { heldCount } from "../runs/WorkerCalls.js"
import { Entropy } from "./Entropy.js"
import { Freshness, layer as FreshnessLayer } from "./Freshness.js"
import { makeOperatorCommands, type CommandError, type OperatorCommands, type OperatorRefusal } from "./OperatorCommands.js"
import { fenceRefusal, PROTOCOL_REVISION, Refusal, revokedRefusal, unavailableRefusal, type Ack, type Advertise, type Assignment, type Claim, type CredentialHandOver, type Hello, type Join, type Leave, type NoWork, type WorkerRequest, type WorkerResponse } from "./Protocol.js"

interface Authenticated {
  readonly worker: WorkerRecord
  readonly presentedHash: string
  readonly now: number
}

export type { PendingInvite, WorkerStatus } from "./OwnerViews.js"
export type { InviteOutcome, Revoked } from "./OperatorCommands.js"

/** Where workers reach this owner, and the certificate they pin: written into join tokens. */
export class OwnerAddress extends Context.Tag("svc/OwnerAddress")<OwnerAddress, { readonly url: string; readonly fingerprint: string }>() {}

/** The operator's commands (OperatorCommands.ts) and the worker route, over one set of projections. */
export interface OwnerService extends Omit<OperatorCommands, "findWorker"> {
  /** One call of the worker route: the bearer as presented and the decoded body. */
  readonly handle: (bearer: string | undefined, request: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal>
  /**
   * The same call answered synchronously when it needs neither waiting nor recording: a
   * refusal of its credential or fence, or the ack of a refresh that changes nothing. Undefined
   * when it must go through `handle`. `handle` takes the same path first, so the two agree.
   */
  readonly answerNow: (bearer: string | undefined, request: WorkerRequest, now: number) => WorkerResponse | Refusal | undefined
  /** A worker by id or (unique) name. */
  readonly find: (worker: string) => Effect.Effect<WorkerRecord, OperatorRefusal>
}

export class Owner extends Context.Tag("svc/Owner")<Owner, OwnerService>() {}

/** How long a claim with no work waits before answering at most (the worker calls again). */
export const MAX_CLAIM_WAIT = Duration.seconds(30)

const refuse = (code: Refusal["code"], message: string, stopAll?: boolean) =>
  new Refusal(stopAll === undefined ? { code, message } : { code, message, stopAll })

export const make = Effect.gen(function* () {
  const projections = yield* Projections
  const hashing = yield* Hashing
  const entropy = yield* Entropy
  const address = yield* OwnerAddress
  const dispatcher = yield* Dispatcher

  // Credential hash -> worker id, kept beside the projections (built once, then per commit).
  const index = new Map<string, string>()
  const indexEnvelopes = (envelopes: ReadonlyArray<Envelope>) => {
    for (const { event } of envelopes) {
      if (event._tag === "WorkerJoined" || event._tag === "CredentialRotated" || event._tag === "JoinAnsweredAgain") index.set(event.credentialHash, event.workerId)
    }
  }
  for (const [, w] of (yield* projections.state).registry.workers) for (const c of w.credentials) index.set(c.hash, w.id)

  // Freshness is runtime state: when each worker last called and last advertised.
  const freshness = yield* Freshness
  const touch = freshness.touch

  const run = (decide: Parameters<typeof projections.execute>[0]) => Effect.tap(projections.execute(decide), (e) => Effect.sync(() => indexEnvelopes(e)))
  const nothing: ReadonlyArray<Envelope> = []
  /**
   * A decision with no events (the common unchanged advertisement refresh) changes nothing:
   * it is answered from the current state without going through the journal's command path
   * (the same decide, on the same state, as `projections.execute` would run first).
   */
  const execute = (decide: Parameters<typeof projections.execute>[0]) =>
    Effect.flatMap(projections.state, (s) => {
      const decision = decide(s.registry)
      return decision._tag === "Decided" && decision.events.length === 0 ? Effect.succeed(nothing) : run(decide)
    })
  const sha = (s: string) => hashing.sha256Hex(s)
  const registry = Effect.map(projections.state, (s) => s.registry)

  const commandRefusal = (code: Refusal["code"]) => (e: CommandError): Refusal =>
    e._tag === "CommandRejected" ? refuse(code, e.rejection.message) : unavailableRefusal(e.message)

  // What the operator asks of the owner (svc workers invite, rotate, revoke, status): OperatorCommands.ts.
  const { findWorker, invite, rotate, revoke, revokeWorkerOrInvite, noteCertificateChange, pendingInvites, status } = makeOperatorCommands({
    state: projections.state,
    execute,
    sha,
    entropy,
    address,
    dispatcher,
    freshness,
    holderOf: (hash: string) => index.get(hash),
    host: Option.getOrUndefined(yield* Effect.serviceOption(OwnerHost))
  })

  const join = ({ joinKey, name, previousCredential }: Join, bearer: string | undefined) =>
    Effect.gen(function* () {
      if (bearer === undefined) return yield* refuse("unauthenticated", "a join call carries the join token as its bearer")
      const token = parseJoinToken(bearer)
      if (typeof token === "string") return yield* refuse("unauthenticated", token)
      const now = yield* Clock.currentTimeMillis
      const workerId = `w${base62FromBytes(entropy.bytes(10), 10)}`
      const credential = makeCredential(entropy.bytes(30))
      const envelopes = yield* execute((r) =>
        Decide.decideRedeem(
          {
            inviteId: token.inviteId,
            tokenHash: sha(token.secret),
            workerId,
            name,
            credentialHash: sha(credential),
            // Only its hash is compared (and never kept): a credential that proves nothing is ignored.
            previousCredentialHash: previousCredential === undefined ? null : sha(previousCredential),
            ...(joinKey === undefined ? {} : { joinKeyHash: sha(joinKey) }),
            now
          },
          r
        )
      ).pipe(Effect.mapError(commandRefusal("join-refused")))
      const event = envelopes[0]!.event
      if (event._tag === "JoinAnsweredAgain") {
        // The worker the first answer named, as it is now (its name and scope do not change).
        const w = HashMap.unsafeGet((yield* registry).workers, event.workerId)
        return { kind: "joined" as const, workerId: w.id, name: w.name, credential, scope: w.scope, replaces: w.replaces, answeredAgain: true as const }
      }
      const joined = event as WorkerJoined
      return { kind: "joined" as const, workerId, name: joined.name, credential, scope: joined.scope, replaces: joined.replaces }
    })

  /**
   * Identity from the credential only; the body never names the worker. Plain code on the state
   * the call read: every authenticated call passes here, most of them an unchanged refresh.
   */
  const authenticateIn = (r: Registry, bearer: string | undefined, now: number): Authenticated | Refusal => {
    if (bearer === undefined) return refuse("unauthenticated", "the worker route needs Authorization: Bearer <worker credential>")
    if (!bearer.startsWith(CREDENTIAL_PREFIX)) return refuse("unauthenticated", "the bearer is not a worker credential (svc_wk_...)")
    const problem = credentialProblem(bearer)
    if (problem !== undefined) return refuse("unauthenticated", problem)
    const presentedHash = sha(bearer)
    const id = index.get(presentedHash)
    const found = id === undefined ? Option.none() : HashMap.get(r.workers, id)
    if (Option.isNone(found)) return refuse("unauthenticated", "this credential is not known to the owner")
    const worker = found.value
    if (worker.revokedAt !== null) return revokedRefusal()
    const standing = Decide.credentialStanding(worker, presentedHash, now)
    if (standing === "expired") return refuse("unauthenticated", "this credential was replaced and its 5 minutes of grace have passed: join again with a new token")
    if (standing === "unknown") {
      // Once this worker's, no longer one of its two latest: a later rotation, or a hand-over sent
      // again (a call with the credential before it came 35 s or more after, taken for a lost answer).
      return refuse(
        "unauthenticated",
        "this credential is no longer this worker's: newer ones were handed over since (a later rotation, one sent again when a call with the credential before this one came 35 s or more after its hand-over, or the join that made it answered again; another process may hold that one): join again with a new token"
      )
    }
    return { worker, presentedHash, now }
  }

  /** A pending rotation (or a lost hand-over) is answered with a new credential now. */
  const handOverDue = (worker: WorkerRecord, presentedHash: string, now: number) => Decide.handOverDue(worker, presentedHash, now) !== undefined
  const mintHandOver = (worker: WorkerRecord, presentedHash: string, now: number) =>
    Effect.gen(function* () {
      const credential = makeCredential(entropy.bytes(30))
      const envelopes = yield* execute((r) => Decide.decideHandOver({ workerId: worker.id, presentedHash, newHash: sha(credential), now }, r))
      const event = envelopes[0]?.event
      if (event === undefined || event._tag !== "CredentialRotated") return null
      return { credential, previousValidUntil: new Date(event.previousValidUntil).toISOString() } satisfies typeof CredentialHandOver.Type
    }).pipe(Effect.mapError(commandRefusal("unauthenticated")))

  const noHandOver = Effect.succeed(null)
  /** Most calls hand nothing over: answered without building the minting effect. */
  const handOver = (worker: WorkerRecord, presentedHash: string, now: number) => (handOverDue(worker, presentedHash, now) ? mintHandOver(worker, presentedHash, now) : noHandOver)

  const hello = ({ worker, presentedHash, now }: Authenticated, request: Hello) =>
    Effect.gen(function* () {
      const f = freshness.get(worker.id)
      const live = f !== undefined && f.lastSeenAt !== null && f.sessionEnded !== true && now - f.lastSeenAt < 15_000
      // The process that holds the latest session, saying hello again, proves it with the session's key.
      const resumes = request.resumes !== undefined && Decide.resumesSession(worker, request.resumes.fence, sha(request.resumes.key))
      const sessionKey = base62FromBytes(entropy.bytes(24), 24)
      const envelopes = yield* execute((r) =>
        Decide.decideStartSession({ workerId: worker.id, previousSessionLive: live, resumes, keyHash: sha(sessionKey), credentialHash: presentedHash, now }, r)
      ).pipe(Effect.mapError(commandRefusal("unauthenticated")))
      freshness.begin(worker.id, now)
      // The identity this installation had before it joined again (its credential proved it) is
      // no longer anyone's: revoked, so that it does not linger as a second worker of the same name.
      const replaced = worker.replaces === null ? undefined : Option.getOrUndefined(HashMap.get((yield* registry).workers, worker.replaces))
      if (replaced !== undefined && replaced.revokedAt === null) {
        yield* execute((r) => Decide.decideRevoke({ workerId: replaced.id, actor: `worker ${worker.id} (its installation joined again)`, now }, r)).pipe(Effect.ignore)
        yield* dispatcher.wakeClaims(replaced.id)
      }
      // Found by its id, as it just said hello (a refusal here would be the route's).
      const self = yield* findWorker(worker.id).pipe(Effect.mapError((e) => refuse("unauthenticated", e.message)))
      const newCredential = yield* handOver(self, presentedHash, now)
      const fence = (envelopes[0]!.event as { fence: number }).fence
      // What it still runs, against what the owner placed on it (slots are not leaked).
      const stop = yield* dispatcher.hello(worker, request.running, resumes)
      // The most a worker should let pass between advertisements (spec: refresh within 5 s); its
      // advertisement lapses only after 15 s (ADVERTISEMENT_LIFETIME_MS).
      const advertiseEverySeconds = ADVERTISEMENT_REFRESH_MS / 1000
      return { kind: "welcome" as const, workerId: worker.id, name: worker.name, fence, scope: worker.scope, advertiseEverySeconds, stop, newCredential, sessionKey, revision: PROTOCOL_REVISION } satisfies WorkerResponse
    })

  /** What an advertisement offers, as the decider takes it. */
  const offerOf = (worker: WorkerRecord, request: Advertise, now: number) => ({
    workerId: worker.id,
    fence: request.fence,
    capacity: request.capacity,
    labels: request.labels,
    capabilities: request.capabilities,
    artifacts: request.artifacts,
    now
  })

  /** Slots other work holds on the worker, as this advertisement or claim says (runtime state, not the offer). */
  const busyOf = (request: Advertise | Claim) => request.busy ?? 0

  const advertise = (worker: WorkerRecord, now: number, request: Advertise, newCredential: Ack["newCredential"]) => {
    const seen = freshness.get(worker.id)
    // Alive, and by the process that runs now: the first advertisement after a hello counts as a
    // worker back, whether or not it changed what the journal holds.
    const wasAlive = offerCurrent(seen, now)
    const freed = freshness.busyFell(worker.id, busyOf(request))
    const declined = freshness.declinedSince(worker.id)
    const offer = offerOf(worker, request, now)
    return execute((r) => Decide.decideAdvertise(offer, r)).pipe(
      // Fenced: a hello started a new session after the route checked this call's fence.
      Effect.mapError((e) => (e._tag === "CommandRejected" && e.rejection.code === "fenced" ? refuse("fenced", e.rejection.message) : commandRefusal("bad-request")(e))),
      Effect.flatMap((changed) => {
        touch(worker.id, now, true, busyOf(request))
        const ack = Effect.map(dispatcher.stopsFor(worker.id), (stop): Ack => ({ kind: "ack", stop, newCredential }))
        // A new offer, a worker back from silence, slots that other work gave back, or a decline
        // this advertisement lifts may let a waiting run be placed.
        return changed.length > 0 || !wasAlive || freed || declined ? Effect.zipRight(dispatcher.kick, ack) : ack
      })
    )
  }

  const assignmentOf = ({ attempt, runId, address, digest, input, timeoutMs, outputLimit }: Assignment): Assignment => ({
    attempt,
    runId,
    address,
    digest,
    input,
    timeoutMs,
    ...(outputLimit === undefined ? {} : { outputLimit })
  })

  /** Every call after hello, its fence checked: the credential hand-over if one is due, then the call. */
  const call = ({ worker, presentedHash, now }: Authenticated, request: Exclude<WorkerRequest, Join | Hello | Leave>) =>
    // Not in the answer to a claim that may wait: that answer can arrive after the worker's other
    // calls, with a credential older than one they brought (docs/protocol.md, "Rotation").
    Effect.flatMap((request.kind === "claim" && request.waitSeconds > 0) || request.kind === "bye" ? noHandOver : handOver(worker, presentedHash, now), (newCredential): Effect.Effect<WorkerResponse, Refusal> => {
      switch (request.kind) {
        case "bye":
          // A clean stop: its session and advertisement end now; what it held is placed again at the next round.
          freshness.end(worker.id, request.leaving === true, heldCount(projections.current(), worker.id))
          // Its claims still waiting are answered now (no work): the process that made them is going.
          // What it ran for this owner it stopped before saying so: placed again now, its slots
          // free. A bye that says it leaves is followed by the leave itself, which frees them and
          // says how many (svc workers leave tells its operator): placed again only, as before.
          return Effect.as(
            Effect.zipRight(dispatcher.endClaims(worker.id), request.leaving === true ? dispatcher.kick : dispatcher.ended(worker.id)),
            { kind: "ack", stop: [], newCredential } satisfies Ack
          )
        case "advertise":
          return advertise(worker, now, request, newCredential)
        case "heartbeat":
          touch(worker.id, now, false)
          return Effect.map(dispatcher.heartbeat(worker, request.running, request.output ?? [], request.waiting ?? []), (stop): Ack => ({ kind: "ack", stop, newCredential }))
        case "claim": {
          // A worker claims when it has a free slot: slots other work gave back since its last
          // advertisement may let a run waiting for this worker be placed now, into this claim.
          const freed = freshness.busyFell(worker.id, busyOf(request))
          touch(worker.id, now, false, busyOf(request))
          // Long poll: the call waits until work is placed on this worker, or the wait is over.
          // No work is handed out past the advertisement's life (placement needs it alive).
          const claim = Effect.map(
            dispatcher.claim(worker, request.fence, Duration.toMillis(Duration.min(Duration.seconds(request.waitSeconds), MAX_CLAIM_WAIT)), request.running),
            (work): WorkerResponse => (work === null ? ({ kind: "no-work", retryAfterSeconds: 0, newCredential } satisfies NoWork) : { ...work, newCredential })
          )
          return freed ? Effect.zipRight(dispatcher.kick, claim) : claim
        }
        case "decline":
          touch(worker.id, now, false)
          freshness.declined(worker.id)
          return Effect.as(dispatcher.decline(worker, request.attempt, request.reason), { kind: "ack", stop: [], newCredential } satisfies Ack)
        case "report": {
          touch(worker.id, now, false)
          const reported = dispatcher.report(worker, request.attempt, request.outcome, request.output)
          if (request.claimNext !== true) return Effect.as(reported, { kind: "ack", stop: [], newCredential } satisfies Ack)
          // And a claim that does not wait. The report is recorded whatever becomes of the claim:
          // a claim refused (the worker revoked meanwhile, say) is answered as no work, and the
          // worker's next call hears the refusal.
          return Effect.zipRight(
            reported,
            Effect.map(
              Effect.orElseSucceed(dispatcher.claim(worker, request.fence, 0, request.running, true), () => null),
              (work): Ack => ({ kind: "ack", stop: [], newCredential, next: work === null ? null : assignmentOf(work) })
            )
          )
        }
      }
    })

  /**
   * An advertisement that changes nothing, from a worker whose advertisement is alive and was made
   * by the process that runs now (not the first after a hello: `advertise` asks for a round then),
   * which is owed no credential, whose other work did not give slots back and which declined nothing
   * since it last advertised (either may let a waiting run be placed: `advertise` asks for a
   * round): the common refresh, answered from the state without recording.
   */
  const unchangedRefresh = (s: OwnerState, { worker, presentedHash, now }: Authenticated, request: Advertise): Ack | undefined => {
    if (handOverDue(worker, presentedHash, now) || !offerCurrent(freshness.get(worker.id), now) || freshness.busyFell(worker.id, busyOf(request)) || freshness.declinedSince(worker.id)) return undefined
    const decision = Decide.decideAdvertise(offerOf(worker, request, now), s.registry)
    if (decision._tag !== "Decided" || decision.events.length > 0) return undefined
    touch(worker.id, now, true, busyOf(request))
    return { kind: "ack", stop: stopsIn(s, worker.id), newCredential: null }
  }

  /** What every call after join passes first, on one state: authentication, the fence, the quick answer. */
  const quick = (s: OwnerState, bearer: string | undefined, request: Exclude<WorkerRequest, Join>, now: number) => {
    const authenticated = authenticateIn(s.registry, bearer, now)
    if (authenticated instanceof Refusal || request.kind === "hello" || request.kind === "leave") return { authenticated }
    const fenced = fenceRefusal(authenticated.worker, request.fence)
    if (fenced !== undefined) return { authenticated: fenced }
    return { authenticated, answer: request.kind === "advertise" ? unchangedRefresh(s, authenticated, request) : undefined }
  }

  const answerNow: OwnerService["answerNow"] = (bearer, request, now) => {
    if (request.kind === "join") return undefined
    const { authenticated, answer } = quick(projections.current(), bearer, request, now)
    return authenticated instanceof Refusal ? authenticated : answer
  }

  const handle: OwnerService["handle"] = (bearer, request) => {
    if (request.kind === "join") return join(request, bearer)
    return Effect.flatMap(projections.state, (s) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<WorkerResponse, Refusal> => {
        const { authenticated, answer } = quick(s, bearer, request, now)
        if (authenticated instanceof Refusal) return Effect.fail(authenticated)
        if (answer !== undefined) return Effect.succeed(answer)
        return request.kind === "hello" ? hello(authenticated, request) : request.kind === "leave" ? leave(authenticated, request) : call(authenticated, request)
      })
    )
  }

  /**
   * The installation left (`svc workers leave`): revoked as on the operator's word, the actor
   * saying so. With the list of what it still runs (its runtime stopped the rest first), the slots
   * of the rest are freed, as a hello's list frees them; without it they stay held until released.
   */
  const leave = ({ worker }: Authenticated, request: Leave) =>
    revoke(worker.id, leftActor(worker.id)).pipe(
      // On the worker route: what the operator's command would name a refusal is the route's `unauthenticated`.
      Effect.mapError((e) => (e._tag === "OperatorRefusal" ? refuse("unauthenticated", e.message) : commandRefusal("unauthenticated")(e))),
      Effect.zipRight(request.running === undefined ? Effect.succeed(undefined) : dispatcher.left(worker.id, request.running)),
      Effect.map((released) => ({ kind: "left" as const, workerId: worker.id, name: worker.name, ...(released === undefined ? {} : { released }) }) satisfies WorkerResponse)
    )

  // `find` serves release, which is for revoked workers too: a shared name is refused there.
  return Owner.of({ invite, handle, answerNow, rotate, revoke, revokeWorkerOrInvite, noteCertificateChange, status, pendingInvites, find: (ref) => findWorker(ref) })
})

export const layer = Layer.effect(Owner, make)

/** The owner with its runs, sharing one freshness: what `svc serve` runs. */
export const layerWithRuns = layer.pipe(Layer.provideMerge(DispatcherLayer), Layer.provideMerge(FreshnessLayer))
