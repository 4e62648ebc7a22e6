/**
 * What the operator asks of the owner about its workers (`svc workers invite`, `rotate`,
 * `revoke`, `status`): minting invites, finding a worker by id, name or a credential pasted
 * in, revoking a worker or an unused invite (by its id or its pasted token). Journaled through
 * the live projections, as the worker route's calls are (Owner.ts, which serves both).
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { Envelope } from "../../domain/journal/Events.js"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import * as Decide from "../../domain/workers/Decide.js"
import type { InviteRecord, Registry, WorkerRecord } from "../../domain/workers/Registry.js"
import { base62FromBytes, credentialProblem, formatJoinToken, parseJoinToken, secretKindOf } from "../../domain/workers/Secrets.js"
import type { CommandRejected, ProjectionsService } from "../journal/Projections.js"
import type { JournalError, StreamConflict } from "../journal/Journal.js"
import type { DispatcherService, OwnerHostSettings } from "../runs/Dispatcher.js"
import type { Entropy } from "./Entropy.js"
import type { FreshnessService } from "./Freshness.js"
import { pendingInvitesOf, workerStatuses, type OwnerJobs, type PendingInvite, type WorkerStatus } from "./OwnerViews.js"

export interface InviteOutcome {
  readonly token: string
  readonly inviteId: string
  readonly scope: ReadonlyArray<string>
  readonly expiresAt: number | null
  /** What the operator may not expect: a scope naming a job this owner cannot run, a name a linked worker has, an expiry cut to 24 h. */
  readonly notes: ReadonlyArray<string>
}

/** What `svc workers revoke REF` revoked: a worker, or an invite not yet redeemed. */
export type Revoked = { readonly kind: "worker"; readonly worker: WorkerRecord } | { readonly kind: "invite"; readonly invite: InviteRecord }

export type CommandError = CommandRejected | StreamConflict | JournalError

export interface OperatorCommands {
  readonly invite: (i: { readonly scope: ReadonlyArray<string>; readonly expiresInMs: number | null; readonly name: string | null; readonly actor: string }) => Effect.Effect<InviteOutcome, CommandError>
  /** `pendingAlready`: a rotation asked for earlier was not taken yet (nothing more is recorded). */
  readonly rotate: (worker: string, actor: string) => Effect.Effect<{ readonly worker: WorkerRecord; readonly pendingAlready: boolean }, CommandError | OperatorRefusal>
  readonly revoke: (worker: string, actor: string) => Effect.Effect<WorkerRecord, CommandError | OperatorRefusal>
  /** A worker by id or name as `revoke`; else an unused invite by its id (its token then fails). */
  readonly revokeWorkerOrInvite: (ref: string, actor: string) => Effect.Effect<Revoked, CommandError | OperatorRefusal>
  /** The owner serves another certificate than before (fingerprints, hex): journaled for the audit (Certificate.ts). */
  readonly noteCertificateChange: (from: string, to: string, signed: boolean) => Effect.Effect<void, CommandError>
  readonly status: Effect.Effect<ReadonlyArray<WorkerStatus>>
  /** The invites whose tokens can still be redeemed, oldest first. */
  readonly pendingInvites: Effect.Effect<ReadonlyArray<PendingInvite>>
  /**
   * A worker by id, or by name. A name several identities share (a machine revoked and invited
   * again under the same name) is refused with their ids, unless `preferActive` and exactly one
   * of them is not revoked: what rotate and revoke can act on.
   */
  readonly findWorker: (ref: string, options?: { readonly preferActive?: boolean }) => Effect.Effect<WorkerRecord, OperatorRefusal>
}

export interface OperatorContext {
  readonly state: Effect.Effect<OwnerState>
  /** A decision journaled through the projections (a decision with no events writes nothing). */
  readonly execute: (decide: Parameters<ProjectionsService["execute"]>[0]) => Effect.Effect<ReadonlyArray<Envelope>, CommandError>
  readonly sha: (s: string) => string
  readonly entropy: Context.Tag.Service<Entropy>
  /** Where workers reach this owner, and the certificate they pin: written into join tokens. */
  readonly address: { readonly url: string; readonly fingerprint: string }
  readonly dispatcher: Pick<DispatcherService, "jobProblem" | "kick" | "wakeClaims">
  readonly freshness: FreshnessService
  /** The worker holding the credential with this hash, if one does. */
  readonly holderOf: (credentialHash: string) => string | undefined
  /** The owner's own bags, on an owner with runs (`layerWithRuns`): what its workers hold is judged against them in `status`. */
  readonly host: Pick<OwnerHostSettings, "resolve"> | undefined
}

/**
 * An operator's command refused for what it named (`svc workers rotate|revoke|release`), with a
 * code a script reads (`--json`): nothing by that name or credential or token (`not-found`),
 * several workers by that name (`ambiguous`), a join token where a worker is meant
 * (`not-a-worker`), a credential or token that cannot be read (`malformed`), an invite redeemed
 * already (`invite-redeemed`). Not the worker route's refusal: it concerns no worker's call.
 */
export class OperatorRefusal extends Data.TaggedError("OperatorRefusal")<{
  readonly code: "not-found" | "ambiguous" | "not-a-worker" | "malformed" | "invite-redeemed"
  readonly message: string
}> {}

const refuse = (code: OperatorRefusal["code"], message: string) => new OperatorRefusal({ code, message })

export const makeOperatorCommands = ({ state, execute, sha, entropy, address, dispatcher, freshness, holderOf, host }: OperatorContext): OperatorCommands => {
  const registry = Effect.map(state, (s) => s.registry)

  const findWorker: OperatorCommands["findWorker"] = (ref, { preferActive = false } = {}) =>
    Effect.flatMap(registry, (r) => {
      // A credential pasted where a worker belongs names the worker holding it (a leaked one is
      // revoked this way); it is never repeated back.
      if (secretKindOf(ref) === "credential") {
        // Cut short or mistyped: said as such, as a join token's is.
        const malformed = credentialProblem(ref.trim())
        if (malformed !== undefined) return Effect.fail(refuse("malformed", `that looks like a worker credential (svc_wk_…), but it cannot be read: ${malformed}`))
        const id = holderOf(sha(ref.trim()))
        const holder = id === undefined ? Option.none() : HashMap.get(r.workers, id)
        if (Option.isSome(holder)) return Effect.succeed(holder.value)
        return Effect.fail(refuse("not-found", "that is a worker credential (svc_wk_…), and no worker of this owner holds it: name the worker by its name or id (svc workers status lists them)"))
      }
      if (secretKindOf(ref) === "join token") {
        return Effect.fail(refuse("not-a-worker", "that is a join token (svc_jt_…), not a worker: name the worker by its name or id (svc workers status lists them)"))
      }
      const byId = HashMap.get(r.workers, ref)
      if (Option.isSome(byId)) return Effect.succeed(byId.value)
      const byName = [...HashMap.values(r.workers)].filter((w) => w.name === ref)
      if (byName.length === 1) return Effect.succeed(byName[0]!)
      const active = byName.filter((w) => w.revokedAt === null)
      if (preferActive && active.length === 1) return Effect.succeed(active[0]!)
      return Effect.fail(
        refuse(
          byName.length > 1 ? "ambiguous" : "not-found",
          byName.length > 1
            ? `${byName.length} workers are named ${ref}: ${byName
                .sort((a, b) => a.joinedAt - b.joinedAt || a.id.localeCompare(b.id))
                .map((w) => `${w.id} (${w.revokedAt === null ? "linked" : "revoked"})`)
                .join(", ")}; use the worker id`
            : `no worker ${JSON.stringify(ref)} is linked to this owner`
        )
      )
    })

  const invite: OperatorCommands["invite"] = (i) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const inviteId = base62FromBytes(entropy.bytes(12), 12)
      const secret = base62FromBytes(entropy.bytes(40), 40)
      // The expiry asked for (whole milliseconds); a scoped invite may be given an earlier one.
      const asked = i.expiresInMs === null ? null : now + Math.round(i.expiresInMs)
      const envelopes = yield* execute((r) =>
        Decide.decideInvite(
          { inviteId, tokenHash: sha(secret), name: i.name, scope: i.scope, expiresAt: asked, actor: i.actor, now },
          r
        )
      )
      const event = envelopes[0]!.event as { expiresAt: number | null; scope: ReadonlyArray<string> }
      const notes: Array<string> = []
      for (const job of event.scope) {
        const problem = yield* dispatcher.jobProblem(job)
        if (problem !== undefined) notes.push(`the scope names ${job}, which no worker would run now (${problem})`)
      }
      const namesake = i.name === null ? undefined : [...HashMap.values((yield* registry).workers)].find((w) => w.name === i.name && w.revokedAt === null)
      if (namesake !== undefined) notes.push(`worker ${namesake.id} is already named ${i.name}: once this invite is redeemed, commands take their ids, not the name`)
      if (asked !== null && event.expiresAt !== null && event.expiresAt < asked) {
        notes.push("a scoped invite expires within 24 hours at most: the expiry asked for was cut to that")
      }
      return { token: formatJoinToken({ url: address.url, fingerprint: address.fingerprint, inviteId, secret }), inviteId, scope: event.scope, expiresAt: event.expiresAt, notes }
    })

  const rotate: OperatorCommands["rotate"] = (ref, actor) =>
    Effect.gen(function* () {
      const w = yield* findWorker(ref, { preferActive: true })
      const now = yield* Clock.currentTimeMillis
      const envelopes = yield* execute((r) => Decide.decideRequestRotation({ workerId: w.id, actor, now }, r))
      return { worker: yield* findWorker(w.id), pendingAlready: envelopes.length === 0 }
    })

  const revoke: OperatorCommands["revoke"] = (ref, actor) =>
    Effect.gen(function* () {
      const w = yield* findWorker(ref, { preferActive: true })
      const now = yield* Clock.currentTimeMillis
      yield* execute((r) => Decide.decideRevoke({ workerId: w.id, actor, now }, r))
      // Its attempts no longer count: the scheduler supersedes them and places their runs again now.
      yield* dispatcher.kick
      // A claim it has waiting is refused now (revoked), not answered with no work at its wait's end.
      yield* dispatcher.wakeClaims(w.id)
      return yield* findWorker(w.id)
    })

  /** The invite a pasted join token was made for, when it is this owner's (its secret's hash matches). */
  const inviteOfToken = (r: Registry, token: string) => {
    const content = parseJoinToken(token)
    if (typeof content === "string") return refuse("malformed", `that looks like a join token (svc_jt_…), but it cannot be read: ${content}`)
    const invite = Option.getOrUndefined(HashMap.get(r.invites, content.inviteId))
    if (invite === undefined || !Decide.sameDigest(invite.tokenHash, sha(content.secret))) return refuse("not-found", "that join token (svc_jt_…) was not made by this owner")
    return invite
  }

  const revokeWorkerOrInvite: OperatorCommands["revokeWorkerOrInvite"] = (ref, actor) =>
    Effect.gen(function* () {
      const r = yield* registry
      // A join token pasted (a leaked one, say) withdraws its invite; never repeated back.
      if (secretKindOf(ref) === "join token") {
        const invite = inviteOfToken(r, ref.trim())
        if (invite instanceof OperatorRefusal) return yield* invite
        if (invite.redeemedBy !== null) {
          // Its worker revoked already: nothing is left to stop (as the invite's id says it).
          return yield* refuse(
            "invite-redeemed",
            Decide.isRevoked(r, invite.redeemedBy)
              ? `that join token's invite ${invite.id} was redeemed already, by worker ${invite.redeemedBy}, which is revoked already: it cannot be used again, and nothing is left to revoke`
              : `that join token's invite ${invite.id} was redeemed already, by worker ${invite.redeemedBy}: it cannot be used again; to stop that worker: svc workers revoke ${invite.redeemedBy}`
          )
        }
        return yield* revokeWorkerOrInvite(invite.id, actor)
      }
      if (secretKindOf(ref) === "credential") return { kind: "worker" as const, worker: yield* revoke(ref, actor) }
      const isWorker = HashMap.has(r.workers, ref) || [...HashMap.values(r.workers)].some((w) => w.name === ref)
      if (isWorker) return { kind: "worker" as const, worker: yield* revoke(ref, actor) }
      if (!HashMap.has(r.invites, ref)) return yield* refuse("not-found", `no worker and no invite ${JSON.stringify(ref)} is known to this owner (svc workers status lists both)`)
      const now = yield* Clock.currentTimeMillis
      yield* execute((st) => Decide.decideRevokeInvite({ inviteId: ref, actor, now }, st))
      return { kind: "invite" as const, invite: Option.getOrThrow(HashMap.get((yield* registry).invites, ref)) }
    })

  const pendingInvites = Effect.map(Effect.zip(registry, Clock.currentTimeMillis), ([r, now]) => pendingInvitesOf(r, now))
  /**
   * The owner's digest of each job its live workers hold, when it has its bags (an owner with
   * runs: `OwnerHost`): a worker that can run none of them is shown as needing setup.
   */
  const ownerJobsOf = (s: OwnerState) =>
    Effect.suspend(() => {
      if (host === undefined) return Effect.succeed(undefined)
      const addresses = new Set<string>()
      for (const w of HashMap.values(s.registry.workers)) if (w.revokedAt === null) for (const a of w.advertisement?.artifacts ?? []) addresses.add(a.address)
      return Effect.map(
        Effect.forEach(addresses, (address) =>
          Effect.map(Effect.either(host.resolve(address)), (r) =>
            r._tag === "Right" ? ([address, r.right.job.digest] as const) : r.left.unreadable === true ? undefined : ([address, null] as const)
          )
        ),
        (entries): OwnerJobs => new Map(entries.filter((e) => e !== undefined))
      )
    })
  const status = Effect.flatMap(Effect.zip(state, Clock.currentTimeMillis), ([s, now]) => Effect.map(ownerJobsOf(s), (jobs) => workerStatuses(s, freshness.get, now, jobs)))

  const noteCertificateChange: OperatorCommands["noteCertificateChange"] = (from, to, signed) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.asVoid(execute(() => Decide.decideCertificateChange({ from, to, signed, now }))))

  return { invite, rotate, revoke, revokeWorkerOrInvite, noteCertificateChange, status, pendingInvites, findWorker }
}
