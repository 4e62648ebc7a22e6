/** What `svc workers invite` notes about the address its token carries. */
import { describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import type { Leave, WorkerResponse } from "../../src/app/workers/Protocol.js"
import { alreadyLinked, sameAddress, sameOwner } from "../../src/cli/commands/workers/join.js"
import { linkKey } from "../../src/infra/workers/LinkStore.js"
import { tellLeaving } from "../../src/cli/commands/workers/leave.js"
import { onlyThisMachine } from "../../src/cli/commands/workers/loopback.js"
import { releasedLine } from "../../src/cli/commands/workers/release.js"
import { pastRevocation } from "../../src/app/runs/Candidates.js"
import { lastSeenOf, ownerNow, pastRevocations, pastRevocationsLine, servedLines, usedOfCapacity, type ServedStatus } from "../../src/cli/commands/workers/status.js"

describe("svc workers invite", () => {
  it.each([
    ["https://127.0.0.1:7443", true],
    ["https://127.8.9.10:7443", true],
    ["https://localhost:7443", true],
    ["https://[::1]:7443", true],
    ["https://10.0.0.5:7443", false],
    ["https://owner.lan:7443", false],
    ["https://127.example.com:7443", false],
    ["https://[fe80::1]:7443", false]
  ])("%s reaches only this machine: %s", (url, only) => {
    expect(onlyThisMachine(url)).toBe(only)
  })
})

describe("svc workers join", () => {
  it("a token refused as redeemed on a machine linked to that owner says the link, and where to see whether it works (it may be revoked), not to ask for a new token", () => {
    const content = { url: "https://owner.lan:7443", fingerprint: "f", inviteId: "i1" } as Parameters<typeof alreadyLinked>[2]
    const link = { url: content.url, fingerprint: "f", certificate: "", workerId: "w1", name: "lab-1", credential: "", joinedAt: "", inviteId: "i1" }
    const redeemed = { code: "join-refused", message: "this join token was already redeemed; ask the owner for a new one" }
    const works = "svc workers status shows whether it still works (a new token from the owner's operator is needed only if it does not)"
    expect(alreadyLinked(redeemed, { link }, content, "/h")).toBe(`this machine redeemed this token already: it is linked to https://owner.lan:7443 as lab-1 (w1), its link in /h/links; ${works}`)
    expect(alreadyLinked(redeemed, { link: { ...link, inviteId: "i0" } }, content, "/h")).toBe(`this join token was redeemed already, and this machine is linked to that owner by another token as lab-1 (w1); ${works}`)
    // A link written before it kept its invite (an older svc): which token made it is not known.
    const { inviteId: _, ...older } = link
    expect(alreadyLinked(redeemed, { link: older }, content, "/h")).toBe(`this join token was redeemed already, and this machine is linked to that owner as lab-1 (w1); ${works}`)
    // No link there, or another refusal: the owner's words alone.
    expect(alreadyLinked(redeemed, undefined, content, "/h")).toBeUndefined()
    expect(alreadyLinked({ code: "join-refused", message: "this join token has expired; ask the owner for a new one" }, { link }, content, "/h")).toBeUndefined()
  })
})

describe("svc workers join again", () => {
  it("finds the link to the owner a token is from by the certificate it pins, at its address or another (the owner moved); never by the address alone, whose credential would go to a server not shown to be its owner", () => {
    const at = (url: string, fingerprint: string, joinedAt = "2026-11-01T00:00:00Z") => ({ key: linkKey(url, fingerprint), link: { url, fingerprint, joinedAt } })
    const here = at("https://owner.lan:7443", "f1")
    const moved = at("https://old.lan:7443", "f1")
    const movedLater = at("https://older.lan:7443", "f1", "2026-11-20T00:00:00Z")
    const other = at("https://other.lan:7443", "f9")
    const sameAddressOnly = at("https://owner.lan:7443", "f0")
    const token = { url: "https://owner.lan:7443", fingerprint: "f1" }
    expect(sameOwner([other, moved, here], token)).toBe(here)
    expect(sameOwner([other, moved, movedLater], token)).toBe(movedLater)
    expect(sameOwner([other, sameAddressOnly], token)).toBeUndefined()
    expect(sameOwner([sameAddressOnly, moved], token)).toBe(moved)
    expect(sameOwner([], token)).toBeUndefined()
    // Links at its address pinned to another certificate: removed at the join, their credentials unsent.
    expect(sameAddress([other, sameAddressOnly, here], token, here)).toEqual([sameAddressOnly])
    expect(sameAddress([moved, here], token, here)).toEqual([])
  })
})

describe("svc workers status", () => {
  it("shows USED/CAP, and for a revoked worker only the slots it still holds", () => {
    expect(usedOfCapacity({ used: 1, capacity: 4, revoked: false })).toBe("1/4")
    expect(usedOfCapacity({ used: 1, capacity: 0, revoked: true })).toBe("1 held")
    expect(usedOfCapacity({ used: 0, capacity: 0, revoked: true })).toBe("-")
    // Offline, its advertisement lapsed: it offers nothing, and holds what its attempts held.
    expect(usedOfCapacity({ used: 1, capacity: 0, revoked: false })).toBe("1 held")
    // A shared worker whose slots other work took after this owner placed there.
    expect(usedOfCapacity({ used: 2, capacity: 2, revoked: false, waiting: 2 })).toBe("2/2 +2 waiting")
    expect(usedOfCapacity({ used: 2, capacity: 2, revoked: false, waiting: 0 })).toBe("2/2")
  })

  it("says what release freed without claiming runs placed elsewhere already are placed again", () => {
    // By name and id: a machine that joined again has identities of one name (it said "of lab-2").
    expect(releasedLine(0, "lab-2", "wAbc1234567")).toBe("nothing to release: no attempt holds a slot of lab-2 (wAbc1234567)")
    expect(releasedLine(2, "lab-2", "wAbc1234567")).toBe(
      "released 2 slots of lab-2 (wAbc1234567): its attempts there are recorded as stopped; a run of theirs still unfinished, and not placed elsewhere already, is placed again"
    )
  })

  it("leaves out of the table identities revoked more than a day ago that hold no slot, saying how many and how to list them (operator audit: they piled up)", () => {
    const now = Date.parse("2026-11-26T12:00:00.000Z")
    const day = 24 * 60 * 60 * 1000
    const revoked = (at: number, used = 0) => ({ revoked: true, used, revokedAt: new Date(at).toISOString() })
    expect(pastRevocations([revoked(now - day - 1), revoked(now - 3 * day), revoked(now - day + 1), revoked(now - 2 * day, 1), { revoked: false, used: 0, revokedAt: null }], now)).toBe(2)
    // The boundary is placement's: at a day exactly, placement no longer counts it, and the table folds it away.
    expect(pastRevocations([revoked(now - day)], now)).toBe(1)
    expect(pastRevocation(now - day, 0, now)).toBe(true)
    expect(pastRevocation(now - day + 1, 0, now)).toBe(false)
    // From an owner that does not say when: shown.
    expect(pastRevocations([{ revoked: true, used: 0 }], now)).toBe(0)
    // Judged by the owner's time as it answered (ahead of this machine's clock after a step back it absorbed), not the CLI's.
    const ownerAhead = now + 10 * 60_000
    expect(ownerNow({ workers: [], now: new Date(ownerAhead).toISOString() }, now)).toBe(ownerAhead)
    expect(pastRevocations([revoked(now - day + 60_000)], ownerNow({ now: new Date(ownerAhead).toISOString() }, now))).toBe(1)
    // An owner from before it said, or no answer: this command's own.
    expect(ownerNow({ workers: [] }, now)).toBe(now)
    expect(ownerNow({ now: "not a time" }, now)).toBe(now)
    expect(ownerNow(undefined, now)).toBe(now)
    expect(pastRevocationsLine(1)).toBe("1 identity revoked more than a day ago, holding no slot, not shown: svc workers status --all lists them, svc audit says when and by whom")
    expect(pastRevocationsLine(3)).toMatch(/^3 identities revoked/)
  })

  it("says LAST SEEN 'never' only of a worker that never said hello; one not heard from since the owner started is not that", () => {
    expect(lastSeenOf({ lastSeen: "2026-11-25T03:00:00.000Z", everSeen: true })).toBe("2026-11-25T03:00:00.000Z")
    expect(lastSeenOf({ lastSeen: null, everSeen: true })).toBe("not since start")
    expect(lastSeenOf({ lastSeen: null, everSeen: false })).toBe("never")
    // An owner from before everSeen.
    expect(lastSeenOf({ lastSeen: null })).toBe("never")
  })
})

describe("svc workers status on a worker", () => {
  const offer = {
    capacity: 2,
    labels: ["pool=lab"],
    artifacts: [{ address: "hasher:checksum@1.0.0" }, { address: "reports:nightly@3.0.0" }],
    withheld: [{ job: "gpu:train@1.0.0", reason: "lacks program nvidia-smi" }]
  }
  const linked = { phase: "linked", detail: "session fence 3", offer, running: 1, busy: 0 }

  it("says the jobs it offers an owner within the scope that owner gave it, and those it holds outside it apart", () => {
    expect(servedLines("https://owner:7443", "lab-1", "w1", { ...linked, scope: ["hasher:checksum@1.0.0"] })).toEqual([
      "  https://owner:7443 as lab-1 (w1): linked, session fence 3",
      "    offers 2 slots; labels pool=lab; jobs hasher:checksum@1.0.0 (its scope there: hasher:checksum@1.0.0)",
      "    holds outside that scope (never placed here by this owner): reports:nightly@3.0.0",
      "    runs 1 attempt(s) for it; 0 of the 2 slots held by other work (other owners, own runs)",
      "    withholds gpu:train@1.0.0: lacks program nvidia-smi"
    ])
    // A scope naming nothing it holds: it offers that owner no job.
    expect(servedLines("https://owner:7443", "lab-1", "w1", { ...linked, scope: ["other:job@1.0.0"] })[1]).toBe(
      "    offers 2 slots; labels pool=lab; jobs none (its scope there: other:job@1.0.0)"
    )
  })

  it("says a handed-over credential the link file could not take, under the link's line (resource audit: it said nothing)", () => {
    const lines = servedLines("https://owner:7443", "lab-1", "w1", {
      ...linked,
      credentialNotSaved: "the credential the owner handed over could not be saved (EROFS: read-only file system, open '/h/links/k.json'): a restart after 2026-01-01T00:05:00Z will be refused"
    })
    expect(lines[1]).toBe(
      "    the credential the owner handed over could not be saved (EROFS: read-only file system, open '/h/links/k.json'): a restart after 2026-01-01T00:05:00Z will be refused: make the link file writable (it is saved as soon as it can be)"
    )
  })

  it("tells running attempts from those waiting for a slot and those over with their report not answered (multi-owner audit: all were 'runs N')", () => {
    const busyLine = (s: Partial<ServedStatus>) => servedLines("https://owner:7443", "lab-1", "w1", { ...linked, ...s } as ServedStatus).find((l) => l.includes("attempt(s)"))
    expect(busyLine({ running: 1, waiting: 1, busy: 1 })).toBe(
      "    runs 1 attempt(s) for it (1 waiting for a slot); 1 of the 2 slots held by other work (other owners, own runs): no slot free for it now"
    )
    expect(busyLine({ running: 0, reporting: 2, busy: 0 })).toBe("    runs 0 attempt(s) for it (2 over, their reports not answered yet); 0 of the 2 slots held by other work (other owners, own runs)")
    expect(busyLine({ running: 0, waiting: 1, reporting: 1, busy: 2 })).toBe(
      "    runs 0 attempt(s) for it (1 waiting for a slot; 1 over, its report not answered yet); 2 of the 2 slots held by other work (other owners, own runs): no slot free for it now"
    )
  })

  it("offers every job it holds to an owner that gave it no scope, or a runtime that does not say", () => {
    for (const scope of [[], null, undefined]) {
      const lines = servedLines("https://owner:7443", "lab-1", "w1", { ...linked, ...(scope === undefined ? {} : { scope }) })
      expect(lines[1]).toBe("    offers 2 slots; labels pool=lab; jobs hasher:checksum@1.0.0, reports:nightly@3.0.0")
      expect(lines.some((l) => l.includes("outside"))).toBe(false)
    }
  })

  it("shows an ended link without what it offered", () => {
    const lines = servedLines("https://owner:7443", "lab-1", "w1", { ...linked, phase: "revoked", detail: "revoked by operator", scope: [] })
    expect(lines.some((l) => l.includes("offers"))).toBe(false)
    expect(servedLines("https://owner:7443", "lab-1", "w1", null)).toEqual(["  https://owner:7443 as lab-1 (w1): not linked now"])
  })
})

describe("telling the owner this machine leaves", () => {
  const refusal = (code: string) => ({ _tag: "Refusal", code, message: "the body is not a worker message: running: is unexpected" })
  const left = { kind: "left", workerId: "w1", name: "lab-1" } as WorkerResponse

  it("says what still runs here when its runtime stopped the link's work; an owner from before revision 2, refusing it, is told again without it", async () => {
    const sent: Array<Leave> = []
    const call = (request: Leave) => Effect.suspend(() => (sent.push(request), "running" in request ? Effect.fail(refusal("bad-request")) : Effect.succeed(left)))
    expect(await Effect.runPromise(tellLeaving(call, true))).toEqual(left)
    expect(sent).toEqual([{ kind: "leave", running: [] }, { kind: "leave" }])
  })

  it("is not told twice for another refusal, nor sent running when nothing said the work stopped", async () => {
    const sent: Array<Leave> = []
    const revoked = (request: Leave) => Effect.suspend(() => (sent.push(request), Effect.fail(refusal("revoked"))))
    expect((await Effect.runPromise(Effect.flip(tellLeaving(revoked, true)))).code).toBe("revoked")
    expect(sent).toEqual([{ kind: "leave", running: [] }])
    const plain: Array<Leave> = []
    await Effect.runPromise(tellLeaving((request: Leave) => Effect.suspend(() => (plain.push(request), Effect.succeed(left))), false))
    expect(plain).toEqual([{ kind: "leave" }])
  })
})
