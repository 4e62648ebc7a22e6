/**
 * The owner's rules for worker calls, with the real deciders and projections over the memory
 * journal, and Effect's TestClock for every time rule (15 s, 5 min, 24 h), at both sides of
 * each bound.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { Journal } from "../../../src/app/journal/Journal.js"
import { Projections } from "../../../src/app/journal/Projections.js"
import { ADVERTISE_EVERY } from "../../../src/app/workers/Link.js"
import { Owner } from "../../../src/app/workers/Owner.js"
import * as Presence from "../../../src/app/workers/Presence.js"
import { PROTOCOL_REVISION, Refusal, type WorkerRequest, type WorkerResponse } from "../../../src/app/workers/Protocol.js"
import * as Decide from "../../../src/domain/workers/Decide.js"
import { formatJoinToken, makeCredential, parseJoinToken } from "../../../src/domain/workers/Secrets.js"
import { capturingLogs } from "../../support/logs.js"
import { gatedJournal, hostHolding, memoryOwnerWith } from "../../support/runs.js"

/** An owner holding the job its workers advertise (as workers status judges what they hold against its own). */
const TestOwner = memoryOwnerWith(hostHolding({ "hasher:checksum@1.0.0": "sha256:x" }))

const call = (bearer: string | undefined, request: WorkerRequest) => Effect.flatMap(Owner, (o) => Effect.either(o.handle(bearer, request)))
const ok = <K extends WorkerResponse["kind"]>(r: Either.Either<WorkerResponse, { code: string; message: string }>, kind: K) => {
  if (Either.isLeft(r)) throw new Error(`refused: ${r.left.code}: ${r.left.message}`)
  expect(r.right.kind).toBe(kind)
  return r.right as Extract<WorkerResponse, { kind: K }>
}
const refusal = (r: Either.Either<WorkerResponse, { code: string; message: string }>) => (Either.isLeft(r) ? r.left.code : `answered ${r.right.kind}`)

const offer = (fence: number) => ({ kind: "advertise" as const, fence, capacity: 4, labels: ["os=linux"], capabilities: ["node"], artifacts: [{ address: "hasher:checksum@1.0.0", digest: "sha256:x" }] })

/** Invite, join and hello: a linked worker with its credential and fence. */
const linked = (scope: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const owner = yield* Owner
    const { token } = yield* owner.invite({ scope, expiresInMs: null, name: "lab-1", actor: "operator" })
    const joined = ok(yield* call(token, { kind: "join", name: "ignored" }), "joined")
    const welcome = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
    // It says what of the protocol it takes: a worker sends it nothing later revisions added.
    expect(welcome.revision).toBe(PROTOCOL_REVISION)
    return { token, credential: joined.credential, workerId: joined.workerId, fence: welcome.fence }
  })

const stateOf = (workerId: string) => Effect.map(Effect.flatMap(Owner, (o) => o.status), (all) => all.find((w) => w.id === workerId)!)

describe("joining", () => {
  it.effect("a token joins once; the worker gets an svc_wk_ credential and the invite's name and scope", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const { token } = yield* owner.invite({ scope: ["hasher:checksum@1.0.0"], expiresInMs: null, name: "lab-1", actor: "operator" })
      expect(token).toMatch(/^svc_jt_/)
      expect(parseJoinToken(token)).toMatchObject({ url: "https://owner.test:7443", fingerprint: "ab".repeat(32) })
      const joined = ok(yield* call(token, { kind: "join", name: "mybox" }), "joined")
      expect(joined.credential).toMatch(/^svc_wk_[0-9A-Za-z]{36}$/)
      expect(joined).toMatchObject({ name: "lab-1", scope: ["hasher:checksum@1.0.0"] })
      expect(refusal(yield* call(token, { kind: "join", name: "again" }))).toBe("join-refused")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a scoped invite joins 1 ms before 24 hours, not at 24 hours", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const a = yield* owner.invite({ scope: ["hasher:checksum@1.0.0"], expiresInMs: null, name: null, actor: "op" })
      const b = yield* owner.invite({ scope: ["hasher:checksum@1.0.0"], expiresInMs: null, name: null, actor: "op" })
      yield* TestClock.adjust(24 * 3_600_000 - 1)
      ok(yield* call(a.token, { kind: "join", name: "a" }), "joined")
      yield* TestClock.adjust("1 millis")
      const late = yield* call(b.token, { kind: "join", name: "b" })
      expect(refusal(late)).toBe("join-refused")
      expect(Either.isLeft(late) && late.left.message).toBe("this join token has expired; ask the owner for a new one")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an unscoped invite without an explicit expiry still joins after a year", () =>
    Effect.gen(function* () {
      const { token } = yield* (yield* Owner).invite({ scope: [], expiresInMs: null, name: null, actor: "op" })
      yield* TestClock.adjust("365 days")
      ok(yield* call(token, { kind: "join", name: "a" }), "joined")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("pending invites are those whose tokens still work: not redeemed, revoked nor expired (24 h for a scoped one)", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const scoped = yield* owner.invite({ scope: ["hasher:checksum@1.0.0"], expiresInMs: null, name: "lab-2", actor: "op" })
      const used = yield* owner.invite({ scope: [], expiresInMs: null, name: null, actor: "op" })
      const withdrawn = yield* owner.invite({ scope: [], expiresInMs: null, name: "spare", actor: "op" })
      const open = yield* owner.invite({ scope: [], expiresInMs: null, name: null, actor: "op" })
      ok(yield* call(used.token, { kind: "join", name: "box" }), "joined")
      expect(yield* owner.revokeWorkerOrInvite(withdrawn.inviteId, "op")).toMatchObject({ kind: "invite", invite: { id: withdrawn.inviteId, name: "spare", revokedBy: "op" } })
      const late = yield* call(withdrawn.token, { kind: "join", name: "x" })
      expect(Either.isLeft(late) && late.left.message).toBe("this join token was revoked by the owner's operator; ask the owner for a new one")
      // Oldest first; made in the same millisecond here, so in id order.
      expect((yield* owner.pendingInvites).map((i) => i.id)).toEqual([scoped.inviteId, open.inviteId].sort())
      expect((yield* owner.pendingInvites).find((i) => i.id === scoped.inviteId)).toEqual({
        id: scoped.inviteId,
        name: "lab-2",
        scope: ["hasher:checksum@1.0.0"],
        invitedAt: "1970-01-01T00:00:00.000Z",
        expiresAt: "1970-01-02T00:00:00.000Z",
        actor: "op"
      })
      yield* TestClock.adjust("24 hours")
      expect((yield* owner.pendingInvites).map((i) => i.id)).toEqual([open.inviteId])
      // A worker's name or id is revoked as a worker; a name neither worker nor invite has is refused.
      expect(yield* owner.revokeWorkerOrInvite("box", "op")).toMatchObject({ kind: "worker", worker: { name: "box" } })
      const none = yield* Effect.flip(owner.revokeWorkerOrInvite("nobody", "op"))
      expect(none.message).toBe('no worker and no invite "nobody" is known to this owner (svc workers status lists both)')
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a secret pasted where a worker or invite belongs: acted on when it is this owner's, and never repeated in a refusal", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const secrets: Array<string> = []
      const neverSaid = (message: string) => {
        for (const s of secrets) expect(message).not.toContain(s.slice(7, 20))
      }
      // A leaked, unredeemed token withdraws its invite.
      const leaked = yield* owner.invite({ scope: [], expiresInMs: null, name: "spare", actor: "op" })
      secrets.push(leaked.token)
      expect(yield* owner.revokeWorkerOrInvite(leaked.token, "op")).toMatchObject({ kind: "invite", invite: { id: leaked.inviteId, revokedBy: "op" } })
      expect(Either.isLeft(yield* call(leaked.token, { kind: "join", name: "x" }))).toBe(true)
      // A redeemed one cannot be used again: said so, with the worker that redeemed it.
      const w = yield* linked()
      secrets.push(w.token, w.credential)
      const redeemed = yield* Effect.flip(owner.revokeWorkerOrInvite(w.token, "op"))
      expect(redeemed.message).toMatch(new RegExp(`^that join token's invite \\w+ was redeemed already, by worker ${w.workerId}: it cannot be used again; to stop that worker: svc workers revoke ${w.workerId}$`))
      neverSaid(redeemed.message)
      // Its worker revoked already: not advised to revoke it again.
      const gone = yield* linked()
      secrets.push(gone.token, gone.credential)
      yield* owner.revoke(gone.workerId, "op")
      const spent = yield* Effect.flip(owner.revokeWorkerOrInvite(gone.token, "op"))
      expect(spent.message).toMatch(new RegExp(`^that join token's invite \\w+ was redeemed already, by worker ${gone.workerId}, which is revoked already: it cannot be used again, and nothing is left to revoke$`))
      // Another owner's token (same shape, other secret), and one edited.
      const foreign = formatJoinToken({ url: "https://elsewhere:7443", fingerprint: "ab".repeat(32), inviteId: leaked.inviteId, secret: "x".repeat(40) })
      secrets.push(foreign)
      const notOurs = yield* Effect.flip(owner.revokeWorkerOrInvite(foreign, "op"))
      expect(notOurs.message).toBe("that join token (svc_jt_…) was not made by this owner")
      const edited = yield* Effect.flip(owner.revokeWorkerOrInvite(`${w.token.slice(0, -3)}aaa`, "op"))
      expect(edited.message).toMatch(/^that looks like a join token \(svc_jt_…\), but it cannot be read: /)
      neverSaid(edited.message)
      // A credential names the worker that holds it: rotate and revoke act on it.
      expect(yield* owner.rotate(w.credential, "op")).toMatchObject({ worker: { id: w.workerId }, pendingAlready: false })
      // Asked again before the worker took it: said, and recorded once.
      const rotations = (yield* Effect.flatMap(Journal, (j) => j.read(0, 1_000))).filter((e) => e.event._tag === "CredentialRotationRequested").length
      expect(yield* owner.rotate(w.credential, "op")).toMatchObject({ worker: { id: w.workerId }, pendingAlready: true })
      expect((yield* Effect.flatMap(Journal, (j) => j.read(0, 1_000))).filter((e) => e.event._tag === "CredentialRotationRequested")).toHaveLength(rotations)
      const unknown = makeCredential(new Uint8Array(30).fill(7))
      secrets.push(unknown)
      const nobody = yield* Effect.flip(owner.rotate(unknown, "op"))
      expect(nobody.message).toBe("that is a worker credential (svc_wk_…), and no worker of this owner holds it: name the worker by its name or id (svc workers status lists them)")
      // Cut short: said as such.
      const short = yield* Effect.flip(owner.rotate(w.credential.slice(0, -2), "op"))
      expect(short.message).toBe("that looks like a worker credential (svc_wk_…), but it cannot be read: a worker credential is svc_wk_ followed by 36 letters and digits")
      neverSaid(short.message)
      expect(yield* owner.revokeWorkerOrInvite(w.credential, "op")).toMatchObject({ kind: "worker", worker: { id: w.workerId, revokedAt: expect.any(Number) } })
      // A token where only a worker goes.
      expect((yield* Effect.flip(owner.rotate(leaked.token, "op"))).message).toBe("that is a join token (svc_jt_…), not a worker: name the worker by its name or id (svc workers status lists them)")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an invite notes what the operator may not expect: a job this owner cannot run, a name a linked worker has, an expiry cut to 24 h", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const plain = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab-2", actor: "op" })
      expect(plain.notes).toEqual([])
      const w = yield* linked()
      const noted = yield* owner.invite({ scope: ["nosuch:job@9.0.0"], expiresInMs: 48 * 3_600_000, name: "lab-1", actor: "op" })
      expect(noted.notes).toEqual([
        "the scope names nosuch:job@9.0.0, which no worker would run now (no bag holds nosuch:job@9.0.0 here)",
        `worker ${w.workerId} is already named lab-1: once this invite is redeemed, commands take their ids, not the name`,
        "a scoped invite expires within 24 hours at most: the expiry asked for was cut to that"
      ])
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an edited or mistyped token is refused before any lookup", () =>
    Effect.gen(function* () {
      const { token } = yield* (yield* Owner).invite({ scope: [], expiresInMs: null, name: null, actor: "op" })
      const edited = token.slice(0, 20) + (token[20] === "A" ? "B" : "A") + token.slice(21)
      const r = yield* call(edited, { kind: "join", name: "x" })
      expect(refusal(r)).toBe("unauthenticated")
      expect(Either.isLeft(r) && r.left.message).toMatch(/checksum does not match/)
      expect(refusal(yield* call(undefined, { kind: "join", name: "x" }))).toBe("unauthenticated")
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("credentials", () => {
  it.effect("identity comes from the credential only; a malformed or unknown one is refused", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      expect(refusal(yield* call(w.credential.slice(0, -1) + (w.credential.endsWith("a") ? "b" : "a"), offer(w.fence)))).toBe("unauthenticated")
      expect(refusal(yield* call("svc_wk_" + "A".repeat(36), offer(w.fence)))).toBe("unauthenticated")
      expect(refusal(yield* call(undefined, offer(w.fence)))).toBe("unauthenticated")
      ok(yield* call(w.credential, offer(w.fence)), "ack")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("rotation: calls that overlap the hand-over keep the credential on its way; a waiting claim hands nothing over", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const owner = yield* Owner
      yield* owner.rotate(w.workerId, "operator")
      // A claim that may wait carries no credential: its answer could arrive after another call's.
      const waiting = yield* Effect.fork(call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 1 }))
      yield* TestClock.adjust("1 second")
      expect(ok(yield* Fiber.join(waiting), "no-work").newCredential).toBeNull()
      const handed = ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack").newCredential!.credential
      // Calls made with the old credential before that answer arrived: answered, nothing minted
      // (once, minting again here replaced the credential on its way, and the worker was refused).
      yield* TestClock.adjust(Decide.HAND_OVER_IN_FLIGHT_MS - 1)
      const overlapping = ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      expect(overlapping.newCredential).toBeNull()
      ok(yield* call(handed, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      // Past the window, within the grace: the answer is taken as lost, and another one minted.
      yield* TestClock.adjust("1 millis")
      const lost = ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      expect(lost.newCredential?.credential).toMatch(/^svc_wk_/)
      const replaced = yield* call(handed, { kind: "heartbeat", fence: w.fence, running: [] })
      expect(refusal(replaced)).toBe("unauthenticated")
      // Not "its 5 minutes of grace have passed": it never had any.
      expect(Either.isLeft(replaced) && replaced.left.message).toMatch(/^this credential is no longer this worker's: newer ones were handed over since/)
      // The old one's grace is what passes.
      yield* TestClock.adjust(5 * 60_000)
      const expired = yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] })
      expect(Either.isLeft(expired) && expired.left.message).toMatch(/its 5 minutes of grace have passed/)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("rotation: the next call carries the new credential; the old one works for 5 minutes, not more", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const owner = yield* Owner
      yield* owner.rotate(w.workerId, "operator")
      const answer = ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      const fresh = answer.newCredential!.credential
      expect(fresh).toMatch(/^svc_wk_/)
      expect(fresh).not.toBe(w.credential)
      ok(yield* call(fresh, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      yield* TestClock.adjust(5 * 60_000 - 1)
      // The old credential still works, and (its answer may have been lost) gets another new one.
      const again = ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      expect(again.newCredential).not.toBeNull()
      yield* TestClock.adjust("1 millis")
      expect(refusal(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }))).toBe("unauthenticated")
      ok(yield* call(again.newCredential!.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("leave: the installation says it leaves, and is revoked as on the operator's word, the audit saying it left", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      // No session needed: the command that leaves is not the runtime.
      expect(ok(yield* call(w.credential, { kind: "leave" }), "left")).toEqual({ kind: "left", workerId: w.workerId, name: "lab-1" })
      expect(refusal(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }))).toBe("revoked")
      expect(refusal(yield* call(w.credential, { kind: "leave" }))).toBe("revoked")
      const audit = [...(yield* Effect.flatMap(Projections, (p) => p.state)).audit]
      expect(audit.at(-1)).toMatchObject({ kind: "revocation", workerId: w.workerId, actor: `worker ${w.workerId} (it left)` })
      // Its row says it left, not that an operator revoked it.
      expect(yield* stateOf(w.workerId)).toMatchObject({
        state: "Offline",
        reason: "it left (svc workers leave on its machine): its calls are refused",
        revoked: true,
        revokedBy: `worker ${w.workerId} (it left)`
      })
      expect(refusal(yield* call(undefined, { kind: "leave" }))).toBe("unauthenticated")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("revocation: the next call is refused and told to stop all work", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      expect(yield* stateOf(w.workerId)).toMatchObject({ revokedBy: null, revokedAt: null })
      yield* TestClock.adjust("90 seconds")
      yield* (yield* Owner).revoke("lab-1", "operator ada")
      expect(yield* stateOf(w.workerId)).toMatchObject({ reason: "revoked by operator ada: its calls are refused", revokedBy: "operator ada", revokedAt: new Date(90_000).toISOString() })
      const r = yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] })
      expect(refusal(r)).toBe("revoked")
      expect(Either.isLeft(r) && r.left.stopAll).toBe(true)
      expect(refusal(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }))).toBe("revoked")
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("names", () => {
  it.effect("a name shared with a revoked identity (the machine invited again under it) names the linked one for rotate and revoke; release's lookup and two revoked ones ask for the id", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const first = yield* linked()
      yield* owner.revoke("lab-1", "operator")
      yield* TestClock.adjust("1 minute")
      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab-1", actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "ignored", previousCredential: first.credential }), "joined")
      expect(joined.replaces).toBe(first.workerId)
      ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      // The old row says where its installation went.
      expect((yield* stateOf(first.workerId)).reason).toBe(`revoked: its calls are refused; its installation joined again as ${joined.workerId}`)
      expect((yield* stateOf(joined.workerId)).reason).not.toContain("joined again")
      // Listed before it: revoked identities come last.
      expect((yield* owner.status).map((w) => w.id)).toEqual([joined.workerId, first.workerId])
      // Rotate and revoke act on the identity that can still call.
      expect((yield* owner.rotate("lab-1", "operator")).worker.id).toBe(joined.workerId)
      // Release (which is for revoked workers too) does not guess.
      const both = `2 workers are named lab-1: ${first.workerId} (revoked), ${joined.workerId} (linked); use the worker id`
      expect(yield* Effect.flip(owner.find("lab-1"))).toMatchObject({ message: both })
      expect((yield* owner.revoke("lab-1", "operator")).id).toBe(joined.workerId)
      // Both revoked: nothing to prefer.
      expect(yield* Effect.flip(owner.rotate("lab-1", "operator"))).toMatchObject({
        message: `2 workers are named lab-1: ${first.workerId} (revoked), ${joined.workerId} (revoked); use the worker id`
      })
      expect((yield* owner.find(first.workerId)).id).toBe(first.workerId)
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("sessions", () => {
  it.effect("a hello with a copied credential takes the session over; the old fence is refused", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const second = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(second.fence).toBe(w.fence + 1)
      const old = yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] })
      expect(refusal(old)).toBe("fenced")
      ok(yield* call(w.credential, { kind: "heartbeat", fence: second.fence, running: [] }), "ack")
      const status = yield* stateOf(w.workerId)
      expect(status.name).toBe("lab-1")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an advertisement of the process taken over, decided after the takeover's hello committed, is refused and speaks for no one", () => {
    const gated = gatedJournal()
    return Effect.gen(function* () {
      const journal = yield* Journal
      const w = yield* linked()
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      const before = yield* stateOf(w.workerId)
      // The copy's hello is decided and waits at the journal; the old process's advertisement (a
      // change: it now has a GPU) passes the route's fence check meanwhile and waits behind it.
      gated.hold("SessionStarted")
      gated.hold("WorkerAdvertised")
      const hello = yield* Effect.fork(call(w.credential, { kind: "hello", protocol: 1, running: [] }))
      yield* gated.arrived("SessionStarted")
      const old = yield* Effect.fork(call(w.credential, { ...offer(w.fence), labels: ["gpu=true", "os=linux"] }))
      yield* gated.arrived("WorkerAdvertised")
      yield* gated.release("SessionStarted")
      const welcome = ok(yield* Fiber.join(hello), "welcome")
      yield* gated.release("WorkerAdvertised")
      const refused = yield* Fiber.join(old)
      expect(Either.isLeft(refused) && refused.left).toMatchObject({
        code: "fenced",
        message: `another process took this worker's session over (fence ${welcome.fence}); this process (fence ${w.fence}) must stop`
      })
      // Its offer was not journaled, and the new session is still waiting for its own.
      const ads = (yield* journal.readStream(`worker-${w.workerId}`)).filter((e) => e.event._tag === "WorkerAdvertised")
      expect(ads.map((e) => (e.event as { labels: ReadonlyArray<string> }).labels)).toEqual([["os=linux"]])
      const waiting = yield* stateOf(w.workerId)
      expect(waiting.state).not.toBe(before.state)
      // The same offer unchanged, from the old process: refused too (nothing to journal, still not its to make).
      expect(refusal(yield* call(w.credential, offer(w.fence)))).toBe("fenced")
      ok(yield* call(w.credential, offer(welcome.fence)), "ack")
      expect((yield* stateOf(w.workerId)).state).toBe(before.state)
    }).pipe(Effect.provide(memoryOwnerWith(hostHolding({ "hasher:checksum@1.0.0": "sha256:x" }), gated.layer)))
  })

  it.effect("a claim long-polls for its wait, then answers no work", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const fiber = yield* Effect.fork(call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 10 }))
      yield* TestClock.adjust("9 seconds")
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 seconds")
      const r = fiber.unsafePoll()
      expect(r?._tag === "Success" && Either.isRight(r.value) && r.value.right.kind).toBe("no-work")
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("display states", () => {
  it.effect("Needs setup before the first advertisement; Ready while fresh; Offline 15 s after the last one", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      expect((yield* stateOf(w.workerId)).state).toBe("Needs setup")
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Ready", capacity: 4, free: 4, labels: ["os=linux"] })
      yield* TestClock.adjust(15_000 - 1)
      expect((yield* stateOf(w.workerId)).state).toBe("Ready")
      yield* TestClock.adjust("1 millis")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Offline", capacity: 0 })
      // Refreshing within 5 s keeps it Ready indefinitely, without growing the journal.
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust("5 seconds")
        ok(yield* call(w.credential, offer(w.fence)), "ack")
        expect((yield* stateOf(w.workerId)).state).toBe("Ready")
      }
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the welcome gives the most a worker should let pass between advertisements (the spec's 5 s), which svc's own link keeps inside (every 4 s)", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab-1", actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "ignored" }), "joined")
      const welcome = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(welcome.advertiseEverySeconds).toBe(5)
      expect(Duration.toSeconds(ADVERTISE_EVERY)).toBe(4)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the owner's log says once when a worker starts advertising and once when it goes Offline; a revoked one is left out", () =>
    Effect.gen(function* () {
      // The audit rows the same log carries are the next test's.
      const all: Array<string> = []
      const logs = { get length() { return all.filter((l) => !l.includes(" audit: ")).length }, slice: (n: number) => all.filter((l) => !l.includes(" audit: ")).slice(n) }
      const capture = capturingLogs(all)
      yield* Effect.gen(function* () {
        const w = yield* linked()
        yield* TestClock.adjust("1 second")
        expect(logs.slice(0)).toEqual([])
        ok(yield* call(w.credential, offer(w.fence)), "ack")
        yield* TestClock.adjust("1 second")
        expect(logs.slice(0)).toEqual([`INFO worker lab-1 (${w.workerId}) is advertising: it can take work`])
        // No refresh: Offline once the 15 s pass, said once.
        yield* TestClock.adjust("15 seconds")
        expect(logs.slice(1)).toEqual([`WARN worker lab-1 (${w.workerId}) is Offline: no advertisement for 15 s`])
        yield* TestClock.adjust("30 seconds")
        expect(logs).toHaveLength(2)
        ok(yield* call(w.credential, offer(w.fence)), "ack")
        yield* TestClock.adjust("1 second")
        expect(logs.slice(2)).toEqual([`INFO worker lab-1 (${w.workerId}) is advertising: it can take work`])
        // Advertising what is not in its scope (nothing): it needs setup, said as the status says it, once; then back.
        ok(yield* call(w.credential, { ...offer(w.fence), artifacts: [] }), "ack")
        yield* TestClock.adjust("1 second")
        expect(logs.slice(3)).toEqual([`INFO worker lab-1 (${w.workerId}) is advertising, but needs setup before it can take work: it holds no bag jobs: install bags on it with svc bag install`])
        ok(yield* call(w.credential, { ...offer(w.fence), artifacts: [] }), "ack")
        yield* TestClock.adjust("1 second")
        expect(logs).toHaveLength(4)
        ok(yield* call(w.credential, offer(w.fence)), "ack")
        yield* TestClock.adjust("1 second")
        expect(logs.slice(4)).toEqual([`INFO worker lab-1 (${w.workerId}) is advertising: it can take work`])
        yield* (yield* Owner).revoke(w.workerId, "operator")
        yield* TestClock.adjust("30 seconds")
        expect(logs).toHaveLength(5)
      }).pipe(Effect.provide(Presence.layer.pipe(Layer.provideMerge(TestOwner))), Effect.provide(capture))
    })
  )

  it.effect("a hello that proves it holds the latest session (its fence and key) resumes it: no takeover; a copy without the key takes over", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab-1", actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "ignored" }), "joined")
      const first = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(first.sessionKey).toMatch(/^[0-9A-Za-z]{24}$/)
      ok(yield* call(joined.credential, offer(first.fence)), "ack")
      const takeovers = Effect.map(Effect.flatMap(Projections, (p) => p.state), (s) => [...s.audit].filter((a) => a.kind === "takeover").length)
      // The same process, its session live (it called just now), says hello again: it resumes.
      const again = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [], resumes: { fence: first.fence, key: first.sessionKey! } }), "welcome")
      expect(again.fence).toBe(first.fence + 1)
      expect(again.sessionKey).not.toBe(first.sessionKey)
      expect(yield* takeovers).toBe(0)
      // An old key, a wrong key, or none: another process, which takes the live session over.
      let fence = again.fence
      for (const resumes of [{ fence: first.fence, key: first.sessionKey! }, { fence: again.fence + 1, key: "x".repeat(24) }, undefined]) {
        ok(yield* call(joined.credential, offer(fence)), "ack")
        const before = yield* takeovers
        fence = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [], ...(resumes === undefined ? {} : { resumes }) }), "welcome").fence
        expect(yield* takeovers).toBe(before + 1)
      }
      // The journal holds the key's hash, never the key.
      const journaled = JSON.stringify([...(yield* Effect.flatMap(Projections, (p) => p.state)).registry.workers])
      expect(journaled).not.toContain(again.sessionKey!)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the slots other work holds count only while the worker advertises: not once it is revoked or silent", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      ok(yield* call(w.credential, { ...offer(w.fence), busy: 3 }), "ack")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Ready", used: 3, elsewhere: 3, lastSeen: "1970-01-01T00:00:00.000Z", everSeen: true })
      // Silent past 15 s: Offline, offering nothing, holding none of this owner's slots.
      yield* TestClock.adjust("16 seconds")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Offline", used: 0, elsewhere: 0, capacity: 0 })
      ok(yield* call(w.credential, { ...offer(w.fence), busy: 3 }), "ack")
      yield* (yield* Owner).revoke(w.workerId, "operator")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Offline", revoked: true, used: 0, elsewhere: 0 })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a bye ends the session and the advertisement at once: Offline now, and the next process is no takeover", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      expect((yield* stateOf(w.workerId)).state).not.toBe("Offline")
      // A bye with a fence that is not the session's is refused as any such call is.
      expect(refusal(yield* call(w.credential, { kind: "bye", fence: w.fence - 1 }))).toBe("fenced")
      ok(yield* call(w.credential, { kind: "bye", fence: w.fence }), "ack")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Offline", reason: "its svc serve stopped cleanly 0 s ago (it said so): back when it says hello again", capacity: 0 })
      // Calls of that session still in flight when the bye arrived are answered, and do not bring it back.
      yield* TestClock.adjust("1 second")
      ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }), "ack")
      ok(yield* call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 0, running: [] }), "no-work")
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      expect(yield* stateOf(w.workerId)).toMatchObject({ state: "Offline", reason: "its svc serve stopped cleanly 0 s ago (it said so): back when it says hello again", capacity: 0 })
      const takeovers = Effect.map(Effect.flatMap(Projections, (p) => p.state), (st) => [...st.audit].filter((a) => a.kind === "takeover").length)
      // A new process (no session key) says hello within 15 s of the last call: no takeover, its predecessor said goodbye.
      ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(yield* takeovers).toBe(0)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the owner's log carries each audit row as it is recorded, a takeover and a revocation as warnings; not those from before it started", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const owner = yield* Owner
      const early = yield* owner.invite({ scope: [], expiresInMs: null, name: null, actor: "operator" })
      yield* Effect.gen(function* () {
        yield* TestClock.adjust("1 second")
        expect(logs).toEqual([])
        const w = yield* linked()
        const copy = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
        yield* owner.revoke(w.workerId, "operator")
        yield* owner.revokeWorkerOrInvite(early.inviteId, "operator")
        yield* TestClock.adjust("1 second")
        // Each line says when its row was recorded (the line's own time is when it was logged).
        const recorded = / \(recorded (\d{4}-\d\d-\d\dT[\d:.]+Z)\)$/
        const audits = logs.filter((l) => l.includes(" audit: "))
        for (const line of audits) expect(line).toMatch(recorded)
        const rows = [...(yield* Effect.flatMap(Projections, (p) => p.state)).audit]
        expect(audits.map((l) => recorded.exec(l)![1])).toEqual(rows.slice(-audits.length).map((r) => new Date(r.at).toISOString()))
        const bare = audits.map((l) => l.replace(recorded, ""))
        const invite = bare.find((l) => l.includes("audit: invite"))!
        expect(invite).toMatch(/^INFO audit: invite: invite \w+ for lab-1; scope all jobs; no expiry; by operator$/)
        expect(bare).toEqual([
          invite,
          expect.stringMatching(new RegExp(`^INFO audit: join of worker lab-1 \\(${w.workerId}\\): lab-1 joined with invite \\w+; by worker ${w.workerId}$`)),
          `WARN audit: takeover of worker lab-1 (${w.workerId}): a new process took the session over with fence ${copy.fence}; the old one is fenced out; by worker ${w.workerId}`,
          `WARN audit: revocation of worker lab-1 (${w.workerId}): revoked; its next call is refused; by operator`,
          `WARN audit: revocation: invite ${early.inviteId} revoked unused; its token can no longer be redeemed; by operator`
        ])
        // Each once.
        yield* TestClock.adjust("10 seconds")
        expect(logs.filter((l) => l.includes(" audit: "))).toHaveLength(5)
      }).pipe(Effect.provide(Presence.layer), Effect.provide(capturingLogs(logs)))
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("Needs setup when it holds none of the jobs in its scope", () =>
    Effect.gen(function* () {
      const w = yield* linked(["other:job@2"])
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      const s = yield* stateOf(w.workerId)
      expect(s).toMatchObject({ state: "Needs setup", artifacts: [{ address: "hasher:checksum@1.0.0", inScope: false }] })
      expect(s.reason).toBe("it holds none of the jobs in its scope (other:job@2)")
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("quick answers (what the route answers without a fiber)", () => {
  it.effect("an unchanged refresh is acked at once and journals nothing; anything else goes through handle", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const owner = yield* Owner
      const journal = yield* Journal
      const now = () => Effect.map(TestClock.currentTimeMillis, (t) => t)
      // The first advertisement records the offer: not quick.
      expect(owner.answerNow(w.credential, offer(w.fence), yield* now())).toBeUndefined()
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      const head = yield* journal.head
      yield* TestClock.adjust("5 seconds")
      expect(owner.answerNow(w.credential, offer(w.fence), yield* now())).toEqual({ kind: "ack", stop: [], newCredential: null })
      expect(yield* journal.head).toBe(head)
      // It counts as a refresh: still Ready 14 s after it.
      yield* TestClock.adjust("14 seconds")
      expect((yield* stateOf(w.workerId)).state).toBe("Ready")
      // A changed offer, a heartbeat, a claim: not quick.
      expect(owner.answerNow(w.credential, { ...offer(w.fence), capacity: 2 }, yield* now())).toBeUndefined()
      expect(owner.answerNow(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }, yield* now())).toBeUndefined()
      // After 15 s of silence the refresh brings the worker back: through handle (it may wake the scheduler).
      yield* TestClock.adjust("15 seconds")
      expect(owner.answerNow(w.credential, offer(w.fence), yield* now())).toBeUndefined()
      // A rotation pending: the next call must hand the credential over, so not quick.
      ok(yield* call(w.credential, offer(w.fence)), "ack")
      yield* owner.rotate(w.workerId, "operator")
      expect(owner.answerNow(w.credential, offer(w.fence), yield* now())).toBeUndefined()
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("refusals are quick and the same as handle's: unknown credential, stale fence, revoked", () =>
    Effect.gen(function* () {
      const w = yield* linked()
      const owner = yield* Owner
      const at = yield* TestClock.currentTimeMillis
      const same = (bearer: string | undefined, request: WorkerRequest) =>
        Effect.gen(function* () {
          const quick = owner.answerNow(bearer, request, at)
          const slow = yield* call(bearer, request)
          expect(quick).toBeInstanceOf(Refusal)
          expect(Either.isLeft(slow) && slow.left).toEqual(quick)
          return (quick as Refusal).code
        })
      expect(yield* same(undefined, offer(w.fence))).toBe("unauthenticated")
      expect(yield* same(`svc_wk_${"A".repeat(36)}`, offer(w.fence))).toBe("unauthenticated")
      expect(yield* same(w.credential, offer(w.fence + 1))).toBe("fenced")
      yield* owner.revoke(w.workerId, "operator")
      expect(yield* same(w.credential, offer(w.fence))).toBe("revoked")
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("the owner's certificate", () => {
  const [A, B] = ["a".repeat(64), "b".repeat(64)]
  it.effect("a change is journaled in a stream of its own, and audited: signed or not; the same certificate is no change", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const audit = Effect.map(Effect.flatMap(Projections, (p) => p.state), (s) => [...s.audit].filter((a) => a.kind === "certificate"))
      yield* TestClock.adjust("2 seconds")
      yield* owner.noteCertificateChange(A, B, true)
      yield* owner.noteCertificateChange(B, B, true)
      yield* TestClock.adjust("1 second")
      yield* owner.noteCertificateChange(B, A, false)
      expect(yield* audit).toEqual([
        expect.objectContaining({
          at: 2_000,
          workerId: null,
          inviteId: null,
          actor: "svc serve (at its start)",
          detail: `the owner serves another TLS certificate (sha256 ${B}, before ${A}); the change is signed with the key of the one before, so linked workers follow it`
        }),
        expect.objectContaining({
          at: 3_000,
          detail: `the owner serves another TLS certificate (sha256 ${A}, before ${B}); the change could not be signed with the key of the one before: linked workers refuse it, and must join again with a new token`
        })
      ])
      const events = yield* Effect.flatMap(Journal, (j) => j.read(0, 10))
      expect(events.map((e) => [e.stream, e.streamVersion, e.type])).toEqual([
        [`certificate-${B.slice(0, 16)}-2000`, 1, "OwnerCertificateChanged"],
        [`certificate-${A.slice(0, 16)}-3000`, 1, "OwnerCertificateChanged"]
      ])
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("presence lines", () => {
  it("an Offline worker's line says how many attempts it held are placed again", () => {
    const gone = { id: "w1", name: "lab-1", alive: false }
    expect(Presence.lineOf(gone, 0)).toBe("worker lab-1 (w1) is Offline: no advertisement for 15 s")
    expect(Presence.lineOf(gone, 1)).toBe("worker lab-1 (w1) is Offline: no advertisement for 15 s; the attempt it held is placed again")
    expect(Presence.lineOf(gone, 3)).toBe("worker lab-1 (w1) is Offline: no advertisement for 15 s; the 3 attempts it held are placed again")
    expect(Presence.lineOf({ ...gone, ended: true }, 1)).toBe("worker lab-1 (w1) is Offline: its svc serve stopped cleanly (it said so); the attempt it held is placed again")
    // An audit row is a warning when it is one an operator must not miss; a worker's own leave or re-join is not.
    const row = { sequence: 1, at: 1, workerId: "w1", inviteId: null, detail: "d" } as const
    expect(Presence.auditLevel({ ...row, kind: "revocation", actor: "operator root" })).toBe("warning")
    expect(Presence.auditLevel({ ...row, kind: "takeover", actor: "worker w1" })).toBe("warning")
    expect(Presence.auditLevel({ ...row, kind: "revocation", actor: "worker w1 (it left)" })).toBe("info")
    expect(Presence.auditLevel({ ...row, kind: "revocation", actor: "worker w2 (its installation joined again)" })).toBe("info")
    expect(Presence.auditLevel({ ...row, kind: "join", actor: "worker w1" })).toBe("info")
  })

  it("a worker first seen silent is no news; first seen advertising, or changed since (its setup too), is", () => {
    const before = Presence.shownNow([
      { id: "w1", name: "a", alive: true },
      { id: "w2", name: "b", alive: false },
      { id: "w5", name: "e", alive: true, setup: "it offers no node executor" },
      { id: "w6", name: "f", alive: true, setup: "it offers no node executor" }
    ])
    expect(
      Presence.presenceChanges(before, [
        { id: "w1", name: "a", alive: false },
        { id: "w2", name: "b", alive: false },
        { id: "w3", name: "c", alive: false },
        { id: "w4", name: "d", alive: true },
        { id: "w5", name: "e", alive: true },
        { id: "w6", name: "f", alive: true, setup: "it offers no node executor" }
      ])
    ).toEqual([
      { id: "w1", name: "a", alive: false },
      { id: "w4", name: "d", alive: true },
      { id: "w5", name: "e", alive: true }
    ])
    expect(Presence.lineOf({ id: "w5", name: "e", alive: true, setup: "it offers no node executor" }, 0)).toBe("worker e (w5) is advertising, but needs setup before it can take work: it offers no node executor")
  })
})
