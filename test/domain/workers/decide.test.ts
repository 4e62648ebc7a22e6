/**
 * Worker-protocol deciders, given / when / then: given past events, when a command, then these
 * events or this rejection. Time bounds (24 h, 5 min) are tested at both sides.
 */
import * as HashMap from "effect/HashMap"
import { describe, expect, it } from "vitest"
import type { Envelope, Event, WorkerAdvertised } from "../../../src/domain/journal/Events.js"
import { CURRENT_VERSION, InviteRevoked, JoinAnsweredAgain, WorkerInvited } from "../../../src/domain/journal/Events.js"
import { evolve, initialState } from "../../../src/domain/journal/OwnerState.js"
import * as D from "../../../src/domain/workers/Decide.js"
import type { Registry } from "../../../src/domain/workers/Registry.js"
import { advertised, hash, invited, joined, revoked, rotated, rotationRequested, session } from "../../support/events.js"

/** Folds events as the journal would number them (one stream per event's subject). */
const given = (...events: ReadonlyArray<Event>): Registry => {
  const versions = new Map<string, number>()
  let state = initialState
  events.forEach((event, i) => {
    const stream = event._tag === "WorkerInvited" || event._tag === "InviteRevoked" || event._tag === "WorkerJoined" ? `invite-${event.inviteId}` : "workerId" in event ? `worker-${event.workerId}` : "runId" in event ? `run-${event.runId}` : `certificate-${event.to}`
    const v = (versions.get(stream) ?? 0) + 1
    versions.set(stream, v)
    const envelope: Envelope = { sequence: i + 1, stream, streamVersion: v, type: event._tag, schemaVersion: CURRENT_VERSION[event._tag], recordedAt: 0, event }
    state = evolve(state, envelope)
  })
  return state.registry
}

const HOUR = 3_600_000
const events = (d: D.Decision | D.Rejection) => {
  if (d._tag === "Rejected") throw new Error(`rejected: ${d.message}`)
  return d.events
}
const rejection = (d: D.Decision | D.Rejection) => (d._tag === "Rejected" ? d.code : "decided")

describe("invite", () => {
  const invite = (scope: ReadonlyArray<string>, expiresAt: number | null = null, now = 0) =>
    D.decideInvite({ inviteId: "i", tokenHash: hash("t"), name: null, scope, expiresAt, actor: "op", now }, given())

  it("a scoped invite expires 24 hours after it was made, or earlier when asked", () => {
    expect(events(invite(["hasher:checksum@1.0.0"]))[0]).toMatchObject({ expiresAt: 24 * HOUR, scope: ["hasher:checksum@1.0.0"] })
    expect(events(invite(["hasher:checksum@1.0.0"], 2 * HOUR))[0]).toMatchObject({ expiresAt: 2 * HOUR })
    expect(events(invite(["hasher:checksum@1.0.0"], 48 * HOUR))[0]).toMatchObject({ expiresAt: 24 * HOUR })
  })

  it("an unscoped invite expires only at an explicit expiry", () => {
    expect(events(invite([]))[0]).toMatchObject({ expiresAt: null })
    expect(events(invite([], 72 * HOUR))[0]).toMatchObject({ expiresAt: 72 * HOUR })
  })

  it("a scope names versioned jobs only; an expiry must be in the future", () => {
    const bad = invite(["hasher:checksum", "hasher:checksum@1.0.0", "*"])
    expect(bad).toMatchObject({ _tag: "Rejected", code: "invalid-scope" })
    expect(bad._tag === "Rejected" && bad.message).toBe('a scope names versioned jobs as BAG:JOB@VERSION; "hasher:checksum", "*" are not')
    expect(rejection(invite([], 0, 10))).toBe("invalid-expiry")
  })

  it("an expiry is at most 365 days away, so every journaled one is a time a date can hold", () => {
    expect(rejection(invite([], D.MAX_INVITE_LIFETIME_MS))).toBe("decided")
    const far = invite([], D.MAX_INVITE_LIFETIME_MS + 1)
    expect(far).toMatchObject({ _tag: "Rejected", code: "invalid-expiry" })
    expect(far._tag === "Rejected" && far.message).toBe("an invite expires within 365 days at most (an unscoped invite given no expiry never expires)")
    // What `--expires 9999999999d` once journaled (the owner then could not fold its own journal).
    expect(rejection(invite([], 864_000_000_000_000_000))).toBe("invalid-expiry")
    expect(rejection(invite([], Number.NaN))).toBe("invalid-expiry")
  })

  it("a name is one printable word, and not another worker's id", () => {
    const named = (name: string, registry = given()) => D.decideInvite({ inviteId: "i", tokenHash: hash("t"), name, scope: [], expiresAt: null, actor: "op", now: 0 }, registry)
    for (const good of ["lab-1", "gpu_box.local", "Büro2", "a".repeat(63)]) expect(rejection(named(good))).toBe("decided")
    for (const bad of ["", " lab", "lab 1", "evil\nname", "\u001b[31mred", "-lab", "a".repeat(64), "lab/1"]) {
      const d = named(bad)
      expect(d).toMatchObject({ _tag: "Rejected", code: "invalid-name" })
      expect(d._tag === "Rejected" && d.message).toBe(
        `a worker's name is one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit; ${JSON.stringify(bad)} is not`
      )
    }
    const taken = named("w", given(invited("j"), joined("w", "j")))
    expect(taken._tag === "Rejected" && taken.message).toBe("w is the id of another worker: choose another name")
  })
})

describe("revoking an invite", () => {
  const revokeInvite = (registry: Registry, now = 2_000, inviteId = "i") => D.decideRevokeInvite({ inviteId, actor: "op", now }, registry)

  it("withdraws an unused invite at its stream version; its token is then refused at join", () => {
    const d = revokeInvite(given(invited("i")))
    expect(d).toMatchObject({ _tag: "Decided", stream: "invite-i", expectedVersion: 1 })
    expect(events(d)).toEqual([new InviteRevoked({ inviteId: "i", actor: "op", at: 2_000 })])
    const after = given(invited("i"), ...events(d))
    expect(HashMap.get(after.invites, "i")).toMatchObject({ _tag: "Some", value: { revokedAt: 2_000, revokedBy: "op", streamVersion: 2 } })
    const join = D.decideRedeem({ inviteId: "i", tokenHash: hash("token-i"), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, now: 3_000 }, after)
    expect(join).toMatchObject({ _tag: "Rejected", code: "invite-revoked", message: "this join token was revoked by the owner's operator; ask the owner for a new one" })
  })

  it("refuses an unknown, redeemed, revoked or expired invite, saying what to do", () => {
    const cases: ReadonlyArray<readonly [Registry, number, string, string]> = [
      [given(), 2_000, "unknown-invite", 'no invite "i" was made by this owner'],
      [given(invited("i"), joined("w", "i")), 3_000, "invite-redeemed", "invite i was redeemed by worker w: revoke the worker instead (svc workers revoke w)"],
      // Its worker revoked already: not advised to revoke it again.
      [given(invited("i"), joined("w", "i"), revoked("w")), 3_000, "invite-redeemed", "invite i was redeemed by worker w, which is revoked already: nothing is left to revoke"],
      [given(invited("i"), new InviteRevoked({ inviteId: "i", actor: "op", at: 1_500 })), 3_000, "invite-revoked", "invite i is already revoked"],
      [given(invited("i", 0, ["hasher:checksum@1.0.0"])), 24 * HOUR, "invite-expired", "invite i has expired already: its token cannot be redeemed"]
    ]
    for (const [registry, now, code, message] of cases) expect(revokeInvite(registry, now)).toMatchObject({ _tag: "Rejected", code, message })
  })
})

describe("redeem", () => {
  const redeem = (registry: Registry, now: number, token = "token-i") =>
    D.decideRedeem({ inviteId: "i", tokenHash: hash(token), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, now }, registry)
  const scoped = invited("i", 0, ["hasher:checksum@1.0.0"])

  it("redeems an unused invite once, carrying its scope, against the invite's stream version", () => {
    const d = redeem(given(scoped), 1000)
    expect(d).toMatchObject({ _tag: "Decided", stream: "invite-i", expectedVersion: 1 })
    expect(events(d)[0]).toMatchObject({ _tag: "WorkerJoined", workerId: "w", scope: ["hasher:checksum@1.0.0"], credentialHash: hash("c") })
    expect(rejection(redeem(given(scoped, joined("w", "i")), 2000))).toBe("invite-redeemed")
  })

  it("a scoped invite is still good 1 ms before 24 hours and expired at 24 hours", () => {
    expect(rejection(redeem(given(scoped), 24 * HOUR - 1))).toBe("decided")
    expect(rejection(redeem(given(scoped), 24 * HOUR))).toBe("invite-expired")
  })

  it("an unscoped invite without expiry never expires", () => {
    expect(rejection(redeem(given(invited("i", 0)), 10_000 * HOUR))).toBe("decided")
  })

  it("refuses a name or a scope shaped as a credential or join token: the journal would keep it for ever", () => {
    const secret = `svc_wk_${"A".repeat(30)}123456`
    const named = D.decideInvite({ inviteId: "i", tokenHash: hash("t"), name: secret, scope: [], expiresAt: null, actor: "op", now: 0 }, given())
    expect(named).toMatchObject({ _tag: "Rejected", code: "invalid-name", message: expect.stringMatching(/^the worker's name holds what is shaped as an svc secret/) })
    expect(JSON.stringify(named)).not.toContain("A".repeat(30))
    const scoped = D.decideInvite({ inviteId: "i", tokenHash: hash("t"), name: null, scope: [`a:b@${secret}`], expiresAt: null, actor: "op", now: 0 }, given())
    expect(scoped).toMatchObject({ _tag: "Rejected", code: "invalid-scope", message: expect.stringMatching(/^the scope holds what is shaped/) })
    expect(D.workerNameProblem("svc_jt_eyJ2IjoxfQ", given())).toMatch(/shaped as an svc secret/)
  })

  it("a join that gives no name takes the host's, made into a valid one when it is not", () => {
    expect(D.workerNameFromHost("lab-1")).toBe("lab-1")
    expect(D.workerNameFromHost("ip-10-0-1-23.eu-west-1.compute.internal")).toBe("ip-10-0-1-23.eu-west-1.compute.internal")
    const long = `${"a".repeat(40)}.${"b".repeat(40)}.example.com`
    expect(D.workerNameFromHost(long)).toBe("a".repeat(40))
    expect(D.workerNameFromHost("my box")).toBe("my-box")
    expect(D.workerNameFromHost(`${"x".repeat(80)}`)).toBe("x".repeat(63))
    expect(D.workerNameFromHost("")).toBe("worker")
    expect(D.workerNameFromHost("-.-")).toBe("worker")
    for (const host of ["lab-1", long, "my box", "x".repeat(80), "", "-.-"]) expect(D.workerNameProblem(D.workerNameFromHost(host), given())).toBeUndefined()
  })

  it("checks the name the joiner gives when the invite names no one; the invite's own name wins", () => {
    const as = (name: string, registry: Registry) =>
      D.decideRedeem({ inviteId: "i", tokenHash: hash("token-i"), workerId: "w", name, credentialHash: hash("c"), previousCredentialHash: null, now: 1 }, registry)
    const bad = as("my box", given(invited("i", 0)))
    expect(bad).toMatchObject({ _tag: "Rejected", code: "invalid-name" })
    expect(bad._tag === "Rejected" && bad.message).toContain('"my box" is not (give one with svc workers join --name)')
    const inviteNamed = new WorkerInvited({ inviteId: "i", tokenHash: hash("token-i"), name: "lab-1", scope: [], expiresAt: null, actor: "operator", at: 0 })
    expect(events(as("my box", given(inviteNamed)))[0]).toMatchObject({ name: "lab-1" })
  })

  it("refuses a wrong token and an unknown invite with the same words", () => {
    const wrong = redeem(given(scoped), 1, "other")
    const unknown = D.decideRedeem({ inviteId: "nope", tokenHash: hash("token-i"), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, now: 1 }, given())
    expect([rejection(wrong), rejection(unknown)]).toEqual(["wrong-token", "unknown-invite"])
    expect(wrong._tag === "Rejected" && unknown._tag === "Rejected" && wrong.message === unknown.message).toBe(true)
  })
})

describe("a join answered again (its first answer never arrived)", () => {
  const join = (registry: Registry, key: string | undefined, credential = "c2", now = 5_000) =>
    D.decideRedeem(
      { inviteId: "i", tokenHash: hash("token-i"), workerId: `w-${credential}`, name: "other", credentialHash: hash(credential), previousCredentialHash: null, ...(key === undefined ? {} : { joinKeyHash: hash(key) }), now },
      registry
    )
  const first = (key: string | undefined) => events(join(given(invited("i")), key, "c1", 1_000))[0]! as Event & { _tag: "WorkerJoined" }
  const keyed = first("key")
  const after = (...later: ReadonlyArray<Event>) => given(invited("i"), keyed, ...later)

  it("records the hash of the join key with the join (null when the joiner sent none)", () => {
    expect(keyed).toMatchObject({ _tag: "WorkerJoined", workerId: "w-c1", joinKeyHash: hash("key") })
    expect(first(undefined)).toMatchObject({ joinKeyHash: null })
    const w = HashMap.unsafeGet(after().workers, "w-c1")
    expect(w.joinKeyHash).toBe(hash("key"))
    // Absent, not null, when there was none: the canonical state of a join without a key is as it was.
    expect(Object.keys(HashMap.unsafeGet(given(invited("i"), first(undefined)).workers, "w-c1"))).not.toContain("joinKeyHash")
  })

  it("answers the same key again before the worker's first hello: a new credential for the same worker, on the worker's stream; the first stops working", () => {
    const d = join(after(), "key")
    expect(d).toMatchObject({ _tag: "Decided", stream: "worker-w-c1", expectedVersion: 0 })
    expect(events(d)).toEqual([expect.objectContaining({ _tag: "JoinAnsweredAgain", workerId: "w-c1", inviteId: "i", credentialHash: hash("c2"), previousHash: hash("c1"), at: 5_000 })])
    const w = HashMap.unsafeGet(after(events(d)[0]!).workers, "w-c1")
    expect(w).toMatchObject({ id: "w-c1", name: "other", credentials: [{ hash: hash("c2"), validUntil: null }], streamVersion: 1 })
    // And again, should that answer be lost too; a rotation asked for meanwhile is done by it.
    const twice = after(events(d)[0]!, rotationRequested("w-c1"))
    const again = join(twice, "key", "c3")
    expect(again).toMatchObject({ _tag: "Decided", stream: "worker-w-c1", expectedVersion: 2 })
    expect(HashMap.unsafeGet(given(invited("i"), keyed, events(d)[0]!, rotationRequested("w-c1"), events(again)[0]!).workers, "w-c1")).toMatchObject({
      credentials: [{ hash: hash("c3"), validUntil: null }],
      rotationPending: false
    })
  })

  it("refuses another key, no key, or a join that sent none, with the words of any redeemed token", () => {
    const redeemed = { _tag: "Rejected", code: "invite-redeemed", message: "this join token was already redeemed; ask the owner for a new one" }
    expect(join(after(), "another")).toEqual(redeemed)
    expect(join(after(), undefined)).toEqual(redeemed)
    expect(join(given(invited("i"), first(undefined)), "key")).toEqual(redeemed)
  })

  it("refuses the same key once the worker said hello (its answer arrived) or was revoked, saying which", () => {
    expect(join(after(session("w-c1", 1)), "key")).toMatchObject({
      _tag: "Rejected",
      code: "invite-redeemed",
      message: "this join token was redeemed already by this machine, as worker other (w-c1), which has used its credential since: it is joined (svc workers status lists its link); to join again, ask the owner for a new token"
    })
    expect(join(after(revoked("w-c1")), "key")).toMatchObject({
      _tag: "Rejected",
      code: "invite-redeemed",
      message: "this join token was redeemed already by this machine, as worker other (w-c1), which was revoked since; ask the owner for a new one"
    })
  })

  it("a wrong token is refused before any key is looked at", () => {
    const wrong = D.decideRedeem({ inviteId: "i", tokenHash: hash("other"), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, joinKeyHash: hash("key"), now: 1 }, after())
    expect(rejection(wrong)).toBe("wrong-token")
  })

  it("is an audit row of its own, a join's", () => {
    const again = events(join(after(), "key"))[0]!
    const state = [invited("i"), keyed, again].reduce(
      (s, event, i) => evolve(s, { sequence: i + 1, stream: "x", streamVersion: i + 1, type: event._tag, schemaVersion: CURRENT_VERSION[event._tag], recordedAt: 0, event }),
      initialState
    )
    const rows = [...state.audit]
    expect(rows.map((r) => r.kind)).toEqual(["invite", "join", "join"])
    expect(rows[2]).toMatchObject({
      workerId: "w-c1",
      inviteId: "i",
      actor: "worker w-c1",
      detail: "join with invite i answered again with a new credential: its first answer never reached the joining machine, and the credential it carried no longer works"
    })
  })
})

describe("re-join", () => {
  const rejoin = (registry: Registry, previous: string | null) =>
    D.decideRedeem({ inviteId: "i2", tokenHash: hash("token-i2"), workerId: "w2", name: "box", credentialHash: hash("c2"), previousCredentialHash: previous === null ? null : hash(previous), now: 9_000 }, registry)
  const before = [invited("i"), joined("w", "i"), invited("i2")] as const

  it("links the new identity to the worker whose credential the joiner presented, revoked or not", () => {
    expect(events(rejoin(given(...before, revoked("w")), "cred-w"))[0]).toMatchObject({ _tag: "WorkerJoined", workerId: "w2", replaces: "w" })
    expect(events(rejoin(given(...before), "cred-w"))[0]).toMatchObject({ replaces: "w" })
  })

  it("accepts the identity's current credential and the one its last rotation replaced, not older ones", () => {
    const rotatedTwice = given(...before, rotationRequested("w"), rotated("w", 1), rotationRequested("w", 4_500), rotated("w", 2, 5_000), revoked("w", 6_000))
    expect(events(rejoin(rotatedTwice, "cred-w-2"))[0]).toMatchObject({ replaces: "w" })
    expect(events(rejoin(rotatedTwice, "cred-w-1"))[0]).toMatchObject({ replaces: "w" })
    expect(events(rejoin(rotatedTwice, "cred-w"))[0]).toMatchObject({ replaces: null })
  })

  it("a credential that proves nothing links nothing, and the join itself still succeeds", () => {
    expect(events(rejoin(given(...before), "someone-else"))[0]).toMatchObject({ workerId: "w2", replaces: null })
    expect(events(rejoin(given(...before), null))[0]).toMatchObject({ workerId: "w2", replaces: null })
  })
})

describe("rotation", () => {
  const linked = [invited("i"), joined("w", "i")] as const

  it("is requested by the operator, then completed on the worker's next call with a 5-minute grace", () => {
    const requested = D.decideRequestRotation({ workerId: "w", actor: "op", now: 10 }, given(...linked))
    expect(events(requested)[0]).toMatchObject({ _tag: "CredentialRotationRequested", workerId: "w" })
    const done = D.decideCompleteRotation({ workerId: "w", credentialHash: hash("c2"), now: 1000 }, given(...linked, rotationRequested("w")))
    expect(events(done)[0]).toMatchObject({ _tag: "CredentialRotated", credentialHash: hash("c2"), previousHash: hash("cred-w"), previousValidUntil: 1000 + 5 * 60_000 })
  })

  it("cannot complete without a request, nor for a revoked worker", () => {
    expect(rejection(D.decideCompleteRotation({ workerId: "w", credentialHash: hash("x"), now: 1 }, given(...linked)))).toBe("no-rotation-pending")
    expect(rejection(D.decideRequestRotation({ workerId: "w", actor: "op", now: 1 }, given(...linked, revoked("w"))))).toBe("worker-revoked")
    expect(rejection(D.decideRequestRotation({ workerId: "x", actor: "op", now: 1 }, given(...linked)))).toBe("unknown-worker")
  })
})

describe("sessions and fences", () => {
  const linked = [invited("i"), joined("w", "i")] as const

  it("each hello starts a session with a larger fence; a live previous session is a takeover", () => {
    expect(events(D.decideStartSession({ workerId: "w", previousSessionLive: false, now: 1 }, given(...linked)))[0]).toMatchObject({ fence: 1, takeover: false })
    expect(events(D.decideStartSession({ workerId: "w", previousSessionLive: true, now: 2 }, given(...linked, session("w", 1))))[0]).toMatchObject({ fence: 2, takeover: true })
    expect(events(D.decideStartSession({ workerId: "w", previousSessionLive: false, now: 2 }, given(...linked, session("w", 1))))[0]).toMatchObject({ fence: 2, takeover: false })
  })

  it("revoking a revoked worker is refused as already done", () => {
    const again = D.decideRevoke({ workerId: "w", actor: "op", now: 1 }, given(...linked, revoked("w")))
    expect(again).toMatchObject({ _tag: "Rejected", code: "worker-revoked", message: "worker box-w is already revoked" })
  })

  it("a hello decided again after a conflict starts no session with a credential taken away meanwhile (a join answered again)", () => {
    const start = (registry: Registry, credential: string) => D.decideStartSession({ workerId: "w", previousSessionLive: false, credentialHash: hash(credential), now: 5 }, registry)
    expect(rejection(start(given(...linked), "cred-w"))).toBe("decided")
    const again = new JoinAnsweredAgain({ workerId: "w", inviteId: "i", credentialHash: hash("c2"), previousHash: hash("cred-w"), at: 4 })
    expect(start(given(...linked, again), "cred-w")).toMatchObject({ _tag: "Rejected", code: "credential-replaced", message: expect.stringMatching(/^this credential was replaced while this hello was on its way/) })
    expect(rejection(start(given(...linked, again), "c2"))).toBe("decided")
    // In its grace after a rotation, the previous credential still starts one.
    expect(rejection(start(given(...linked, rotationRequested("w"), rotated("w", 1)), "cred-w-0"))).toBe("decided")
  })

  it("a revoked worker cannot start a session", () => {
    expect(rejection(D.decideStartSession({ workerId: "w", previousSessionLive: false, now: 1 }, given(...linked, revoked("w"))))).toBe("worker-revoked")
  })
})

describe("advertisements", () => {
  const linked = [invited("i"), joined("w", "i"), session("w", 1)] as const
  const advertise = (registry: Registry, capacity: number, labels: ReadonlyArray<string>) =>
    D.decideAdvertise({ workerId: "w", fence: 1, capacity, labels, capabilities: ["node"], artifacts: [], now: 5 }, registry)

  it("journals a change, and nothing for the same offer in another order", () => {
    expect(events(advertise(given(...linked), 4, ["os=linux", "arch=x64"]))[0]).toMatchObject({ labels: ["arch=x64", "os=linux"] })
    expect(events(advertise(given(...linked, advertised("w", 4, ["arch=x64", "os=linux"])), 4, ["os=linux", "arch=x64"]))).toEqual([])
    expect(events(advertise(given(...linked, advertised("w", 4, ["arch=x64", "os=linux"])), 8, ["os=linux", "arch=x64"]))).toHaveLength(1)
  })

  it("labels and capabilities are sets and artifacts go in address order, whatever order and repeats they come in", () => {
    const offer = (labels: ReadonlyArray<string>, capabilities: ReadonlyArray<string>, artifacts: ReadonlyArray<{ address: string; digest: string }>) =>
      D.decideAdvertise({ workerId: "w", fence: 1, capacity: 4, labels, capabilities, artifacts, now: 5 }, given(...linked))
    const a = { address: "a:x@1", digest: "sha256:1" }
    const b = { address: "b:y@1", digest: "sha256:2" }
    const normal = events(offer(["arch=x64", "os=linux"], ["node", "process"], [a, b]))[0] as WorkerAdvertised
    expect(normal).toMatchObject({ labels: ["arch=x64", "os=linux"], capabilities: ["node", "process"], artifacts: [a, b] })
    for (const [labels, capabilities, artifacts] of [
      [["os=linux", "arch=x64"], ["process", "node"], [b, a]],
      [["arch=x64", "os=linux", "arch=x64"], ["node", "node", "process"], [a, b]],
      [["os=linux", "arch=x64", "os=linux"], ["node", "process"], [b, a]]
    ] as const) {
      expect(events(offer(labels, capabilities, artifacts))[0]).toMatchObject({ labels: normal!.labels, capabilities: normal!.capabilities, artifacts: normal!.artifacts })
    }
    // The same offer, in another order and with repeats, changes nothing.
    const known = given(...linked, advertised("w", 4, ["arch=x64", "os=linux"]))
    expect(events(D.decideAdvertise({ workerId: "w", fence: 1, capacity: 4, labels: ["os=linux", "arch=x64", "os=linux"], capabilities: ["node"], artifacts: [], now: 6 }, known))).toEqual([])
  })

  it("capacity is 1 to 100 (spec: maximum 100)", () => {
    expect(rejection(advertise(given(...linked), 100, []))).toBe("decided")
    expect(rejection(advertise(given(...linked), 101, []))).toBe("invalid-advertisement")
    expect(rejection(advertise(given(...linked), 0, []))).toBe("invalid-advertisement")
    expect(rejection(advertise(given(...linked), 2.5, []))).toBe("invalid-advertisement")
  })

  it("only the latest session's process speaks for the worker: an older fence is refused, changed offer or not", () => {
    const takenOver = given(...linked, advertised("w", 4, ["arch=x64", "os=linux"]), session("w", 2, true))
    const at = (fence: number, labels: ReadonlyArray<string>) =>
      D.decideAdvertise({ workerId: "w", fence, capacity: 4, labels, capabilities: ["node"], artifacts: [], now: 8 }, takenOver)
    for (const labels of [["arch=x64", "os=linux"], ["arch=x64", "gpu=true", "os=linux"]]) {
      expect(at(1, labels)).toEqual({
        _tag: "Rejected",
        code: "fenced",
        message: "another process took this worker's session over (fence 2); this process (fence 1) must stop"
      })
      expect(rejection(at(2, labels))).toBe("decided")
    }
    expect(at(3, [])).toMatchObject({ code: "fenced", message: "fence 3 was never issued to this worker; say hello first" })
  })
})

describe("digests compare in constant time and exactly", () => {
  it("sameDigest", () => {
    expect(D.sameDigest(hash("a"), hash("a"))).toBe(true)
    expect(D.sameDigest(hash("a"), hash("b"))).toBe(false)
    expect(D.sameDigest(hash("a"), hash("a").slice(0, 63))).toBe(false)
    expect(D.sameDigest("", "")).toBe(true)
  })
})
