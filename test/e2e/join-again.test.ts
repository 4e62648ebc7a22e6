/**
 * A join whose answer was lost on its way back (docs/protocol.md, "A join whose answer never
 * came"): a real owner (`svc serve`) reached through a TLS proxy that can cut the connection once
 * the owner has answered, and real `svc workers join` and `svc serve` processes on the worker
 * side. The owner recorded the join; the same join run again is answered again, for the same
 * worker, with a new credential. An owner from before join keys is played by a server with the
 * owner's certificate that answers as one did.
 */
import type * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base62, crc32, makeCredential } from "../../src/domain/workers/Secrets.js"
import { loadOrCreate } from "../../src/infra/tls/OwnerCertificate.js"
import type { StoredLink } from "../../src/infra/workers/LinkStore.js"
import { callRoute, ownerCa, startRecordingProxy, startServe, stopAllServes, svcIn, Transcript, waitFor, type RecordingProxy, type ServeProcess } from "../support/serve.js"
import { svc, tempDirs } from "../support/svc.js"

const temps = tempDirs()
const tempDir = temps.make
const transcript = new Transcript()
let proxy: RecordingProxy
let owner: ServeProcess
let ownerHome: string

const run = (home: string, ...args: Array<string>) => svcIn(transcript, home, args)
const isJoin = (body: string) => body.includes('"kind":"join"')

const invite = async (name: string): Promise<string> => {
  const r = await run(ownerHome, "workers", "invite", "--name", name)
  expect(r.code, r.stderr).toBe(0)
  return r.stdout.split("\n").find((l) => l.startsWith("svc_jt_"))!
}

interface WorkerRow {
  readonly id: string
  readonly name: string
  readonly state: string
  readonly lastSeen: string | null
}
const workerRow = async (name: string): Promise<WorkerRow | undefined> => {
  const r = await run(ownerHome, "workers", "status", "--json")
  return (JSON.parse(r.stdout) as { workers: ReadonlyArray<WorkerRow> }).workers.find((w) => w.name === name)
}
const auditOf = async (workerId: string) => {
  const r = await run(ownerHome, "audit", "--json")
  return (JSON.parse(r.stdout) as { rows: ReadonlyArray<{ kind: string; workerId: string | null; detail: string }> }).rows.filter((row) => row.workerId === workerId)
}
const linksHeld = (home: string): ReadonlyArray<string> => readdirSync(join(home, "links"))
const readLink = (home: string): StoredLink => {
  const files = readdirSync(join(home, "links")).filter((f) => f.endsWith(".json"))
  expect(files).toHaveLength(1)
  return JSON.parse(readFileSync(join(home, "links", files[0]!), "utf8")) as StoredLink
}
const hello = (bearer: string) => callRoute(owner.listenUrl, ownerCa(ownerHome), { bearer, body: JSON.stringify({ kind: "hello", protocol: 1, running: [] }) })

/** Joins through the proxy with the answer lost: the owner records the join; answers the credential it handed to no one. */
const joinLosingTheAnswer = async (home: string, token: string) => {
  proxy.loseNextAnswer(isJoin)
  const cut = await run(home, "workers", "join", token)
  expect(cut.code).toBe(2)
  expect(cut.stderr).toMatch(
    /its answer never came \(socket hang up\): the owner may have recorded it\. Run svc workers join again with the same token, from this machine and SVC_HOME: the owner answers it again \(this machine kept the join's key\)\n$/
  )
  const lost = JSON.parse(proxy.exchanges.filter((e) => isJoin(e.request)).at(-1)!.answer) as { kind: string; workerId: string; credential: string }
  expect(lost).toMatchObject({ kind: "joined", workerId: expect.stringMatching(/^w/), credential: expect.stringMatching(/^svc_wk_/) })
  expect(linksHeld(home)).toEqual([expect.stringMatching(/^[0-9a-f]{16}\.join-key$/)])
  return lost
}

/**
 * A server with the owner's certificate (a token's pin holds) that answers each call's body as
 * `answer` says, and a token of the owner's pointing at it (its address changed, its checksum made
 * again): an owner that behaves as no running svc here would.
 */
const standIn = async (name: string, answer: (body: string, req: http.IncomingMessage, res: http.ServerResponse) => void) => {
  const material = await loadOrCreate(ownerHome)
  const bodies: Array<string> = []
  const server = https.createServer({ cert: material.cert, key: material.key }, (req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString("utf8")))
    req.on("end", () => {
      bodies.push(body)
      answer(body, req, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
  const tokenFor = async (invited: string) => {
    const token = await invite(invited)
    const payload = { ...(JSON.parse(Buffer.from(token.slice(7, token.lastIndexOf("_")), "base64url").toString("utf8")) as object), u: url }
    const edited = "svc_jt_" + Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
    return `${edited}_${base62(crc32(edited), 6)}`
  }
  return { url, bodies, token: await tokenFor(name), tokenFor, close: () => (server.closeAllConnections(), server.close()) }
}
const sendJson = (res: http.ServerResponse, status: number, json: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json))

beforeAll(async () => {
  proxy = await startRecordingProxy()
  ownerHome = tempDir("svc-again-owner-")
  owner = await startServe("owner", ownerHome, transcript, { publicUrl: proxy.url })
  proxy.target(owner.listenUrl, ownerHome)
}, 60_000)

afterAll(async () => {
  await stopAllServes()
  await proxy?.close()
  temps.removeAll()
}, 30_000)

describe("a join whose answer was lost", () => {
  it("is answered again when run again: the same worker, a new credential; the first no longer works, and the worker's svc serve links with the new one", async () => {
    const token = await invite("again-1")
    const home = tempDir("svc-again-w1-")
    const lost = await joinLosingTheAnswer(home, token)
    expect((await workerRow("again-1"))?.state).toBe("Needs setup")
    // The worker's status says what is left to do (no runtime there: exit 2, what the files say).
    const made = JSON.parse(Buffer.from(token.slice(7, token.lastIndexOf("_")), "base64url").toString("utf8")) as { i: string }
    const pendingDoc = await run(home, "workers", "status", "--json")
    expect(pendingDoc.code).toBe(2)
    expect((JSON.parse(pendingDoc.stdout) as { pendingJoins: unknown }).pendingJoins).toEqual([{ owner: proxy.url, invite: made.i, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), joiningNow: false }])
    const pendingText = await run(home, "workers", "status")
    expect(pendingText.stdout).toMatch(
      new RegExp(`^joins whose answer never came here \\(run svc workers join again with the same token: the owner answers it again\\):\n  ${proxy.url.replace(/\./g, "\\.")}, invite ${made.i}, first tried \\S+\n$`)
    )
    expect(pendingDoc.stdout + pendingText.stdout + pendingText.stderr).not.toContain("svc_jk_")

    const again = await run(home, "workers", "join", "--json", token)
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout)).toEqual({ owner: proxy.url, workerId: lost.workerId, name: "again-1", scope: [], replaces: null })
    expect(again.stderr).toBe("note: the owner answered this join again (its first answer never arrived here); the credential it carried no longer works\n")
    // The same key was sent both times; what is kept now is the link alone.
    const [keyFirst, keyAgain] = proxy.exchanges.filter((e) => isJoin(e.request)).slice(-2).map((e) => (JSON.parse(e.request) as { joinKey: string }).joinKey)
    expect(keyFirst).toMatch(/^svc_jk_[0-9A-Za-z]{36}$/)
    expect(keyAgain).toBe(keyFirst)
    expect(linksHeld(home)).toEqual([expect.stringMatching(/^[0-9a-f]{16}\.json$/)])
    const link = readLink(home)
    expect(link).toMatchObject({ url: proxy.url, workerId: lost.workerId, name: "again-1" })
    expect((JSON.parse((await run(home, "workers", "status", "--json")).stdout) as { pendingJoins: unknown }).pendingJoins).toEqual([])
    expect(link.credential).not.toBe(lost.credential)

    // The credential nobody received is refused; the worker's runtime says hello with the new one.
    const refused = await hello(lost.credential)
    expect({ status: refused.status, code: (refused.json as { code: string }).code }).toEqual({ status: 401, code: "unauthenticated" })
    await startServe("worker-1", home, transcript)
    const seen = await waitFor("again-1 seen", () => workerRow("again-1"), (w) => w?.lastSeen !== null, { timeoutMs: 15_000, everyMs: 250 })
    expect(seen.value!.id).toBe(lost.workerId)

    // The answer arrived and the credential is in use: the token is spent for good.
    const late = await run(home, "workers", "join", token)
    // Run again on the machine it linked: said so (the docs audit was told to ask for a new token).
    expect({ code: late.code, stderr: late.stderr }).toEqual({
      code: 1,
      stderr: `svc: this machine redeemed this token already: it is linked to ${link.url} as again-1 (${lost.workerId}), its link in ${join(home, "links")}; svc workers status shows whether it still works (a new token from the owner's operator is needed only if it does not)\n`
    })
    expect(readLink(home).credential).toBe(link.credential)

    const rows = await auditOf(lost.workerId)
    expect(rows.map((r) => r.kind)).toEqual(["join", "join"])
    expect(rows[1]!.detail).toBe(
      `join with invite ${rows[0]!.detail.match(/invite (\S+)/)![1]} answered again with a new credential: its first answer never reached the joining machine, and the credential it carried no longer works`
    )
    // The journal and the owner's replay agree, and the join key is nowhere in them.
    const replay = await run(ownerHome, "journal", "replay", "--json")
    expect(replay.code, replay.stdout + replay.stderr).toBe(0)
    const exported = await run(ownerHome, "journal", "export")
    expect(exported.stdout).toContain('"type":"JoinAnsweredAgain"')
    for (const t of transcript.find(keyFirst!)) throw new Error(`the join key is in ${t}`)
  }, 60_000)

  it("is not answered again once the credential of its first answer was used: whoever had that answer holds the worker", async () => {
    const token = await invite("again-2")
    const home = tempDir("svc-again-w2-")
    const lost = await joinLosingTheAnswer(home, token)
    // The answer reached someone after all (here: the test, which saw it pass): its credential says hello.
    expect((await hello(lost.credential)).status).toBe(200)
    const again = await run(home, "workers", "join", token)
    expect({ code: again.code, stderr: again.stderr }).toEqual({
      code: 1,
      stderr: `svc: the owner refused: this join token was redeemed already by this machine, as worker again-2 (${lost.workerId}), which has used its credential since: it is joined (svc workers status lists its link); to join again, ask the owner for a new token\n`
    })
    // Refused: the key is of no more use.
    expect(linksHeld(home)).toEqual([])
    expect((await hello(lost.credential)).status).toBe(200)
  }, 60_000)
})

describe("an owner from before join keys (protocol revision 4 or earlier)", () => {
  /** A server with the owner's certificate that answers joins as an owner before revision 5 did. */
  const oldOwner = (answer: "joined" | "cut") =>
    standIn(`old-${answer}`, (body, req, res) => {
      if ("joinKey" in (JSON.parse(body) as object)) {
        return sendJson(res, 400, { code: "bad-request", message: 'the body is not a worker message: joinKey: is unexpected, expected: "kind" | "name" | "previousCredential"' })
      }
      if (answer === "cut") return req.socket.destroy()
      sendJson(res, 200, { kind: "joined", workerId: "wOld0000001", name: "old-1", credential: makeCredential(new Uint8Array(30).fill(1)), scope: [], replaces: null })
    })

  it("refuses the join key and records nothing: the join is sent again without it, and joins", async () => {
    const old = await oldOwner("joined")
    try {
      const home = tempDir("svc-old-w1-")
      const joined = await run(home, "workers", "join", old.token)
      expect({ code: joined.code, stderr: joined.stderr }).toEqual({ code: 0, stderr: "" })
      expect(joined.stdout).toContain(`joined ${old.url} as old-1 (wOld0000001)`)
      expect(old.bodies.map((b) => Object.keys(JSON.parse(b) as object).sort())).toEqual([
        ["joinKey", "kind", "name"],
        ["kind", "name"]
      ])
      expect(linksHeld(home)).toEqual([expect.stringMatching(/^[0-9a-f]{16}\.json$/)])
    } finally {
      old.close()
    }
  }, 30_000)

  it("whose answer never came: says that owner cannot answer a join again, and what to do instead", async () => {
    const old = await oldOwner("cut")
    try {
      const home = tempDir("svc-old-w2-")
      const cut = await run(home, "workers", "join", old.token)
      expect(cut.code).toBe(2)
      expect(cut.stderr).toBe(
        `svc: the join was sent to ${old.url}, but its answer never came (socket hang up): the owner may have recorded it. Run svc workers join again with the same token: if it says the token was already redeemed, the owner recorded the join and the worker it made holds a credential nobody has (this owner's svc is too old to answer a join again): ask the owner's operator to revoke it (svc workers status there shows it Needs setup) and to invite this machine again\n`
      )
      // That owner cannot use the key: it is not kept, and the home is as it was.
      expect(readdirSync(home)).not.toContain("links")
    } finally {
      old.close()
    }
  }, 30_000)
})

describe("one join at a time in a home", () => {
  /** An owner that takes joins and answers none (until closed), or answers 503 as an owner starting does. */
  const holder = (mode: "hold" | "starting") =>
    standIn(`held-${mode}`, (_body, _req, res) => {
      if (mode === "starting") sendJson(res, 503, { code: "starting", message: "svc serve is starting (it reads its journal): call again in a moment" })
    })
  type Child = import("node:child_process").ChildProcess

  it("refuses a second join in the home while the first waits for its answer; Ctrl-C then says the join may be recorded, and keeps the key; a killed join's lock goes with it", async () => {
    const held = await holder("hold")
    try {
      const home = tempDir("svc-held-")
      let child: Child | undefined
      const first = svc(["workers", "join", held.token], { cwd: home, home, onSpawn: (c) => (child = c) })
      await waitFor("the first join at the owner", async () => held.bodies.length, (n) => n === 1, { timeoutMs: 10_000, everyMs: 50 })
      expect(linksHeld(home)).toEqual([expect.stringMatching(/^[0-9a-f]{16}\.join-key$/)])
      // The home's join lock, held (SQLite's -journal beside it while it is).
      expect(readdirSync(home).filter((f) => f.startsWith("join.lock")).sort()).toEqual(["join.lock", "join.lock-journal"])
      expect((JSON.parse((await run(home, "workers", "status", "--json")).stdout) as { pendingJoins: unknown }).pendingJoins).toEqual([
        { owner: held.url, invite: expect.any(String), since: expect.any(String), joiningNow: true }
      ])

      // The same token, and another token of the same owner (one link per owner): each refused, nothing sent.
      const busy = "svc: another svc workers join runs in this SVC_HOME now: wait for it to end, and run this again if it did not join; nothing was sent\n"
      for (const token of [held.token, await held.tokenFor("held-other")]) {
        const second = await run(home, "workers", "join", token)
        expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 1, stderr: busy })
      }
      expect(held.bodies).toHaveLength(1)

      child!.kill("SIGINT")
      const ended = await first
      expect(ended.code).toBe(2)
      expect(ended.stderr).toBe(
        `svc: the join was sent to ${held.url}, but its answer never came (interrupted (Ctrl-C) before it came): the owner may have recorded it. Run svc workers join again with the same token, from this machine and SVC_HOME: the owner answers it again (this machine kept the join's key)\n`
      )
      // The key is kept for the next try, and no join runs.
      expect((JSON.parse((await run(home, "workers", "status", "--json")).stdout) as { pendingJoins: ReadonlyArray<{ joiningNow: boolean }> }).pendingJoins.map((p) => p.joiningNow)).toEqual([false])

      // A join killed while it waits: the kernel lets its lock go, and the next one sends the same key.
      let killed: Child | undefined
      const dead = svc(["workers", "join", held.token], { cwd: home, home, onSpawn: (c) => (killed = c) })
      await waitFor("the killed join at the owner", async () => held.bodies.length, (n) => n === 2, { timeoutMs: 10_000, everyMs: 50 })
      killed!.kill("SIGKILL")
      await dead
      let again: Child | undefined
      const next = svc(["workers", "join", held.token], { cwd: home, home, onSpawn: (c) => (again = c) })
      await waitFor("the next join at the owner", async () => held.bodies.length, (n) => n === 3, { timeoutMs: 10_000, everyMs: 50 })
      const keys = held.bodies.map((b) => (JSON.parse(b) as { joinKey: string }).joinKey)
      expect(new Set(keys).size).toBe(1)
      again!.kill("SIGINT")
      expect((await next).code).toBe(2)
    } finally {
      held.close()
    }
  }, 60_000)

  it("says an owner that is starting took no join, and keeps no key", async () => {
    const held = await holder("starting")
    try {
      const home = tempDir("svc-starting-")
      const joined = await run(home, "workers", "join", held.token)
      expect({ code: joined.code, stderr: joined.stderr }).toEqual({
        code: 2,
        stderr: `svc: the owner cannot take a join yet (${held.url} answered 503: svc serve is starting (it reads its journal): call again in a moment): nothing was recorded; run svc workers join again in a moment\n`
      })
      expect(readdirSync(home)).not.toContain("links")
    } finally {
      held.close()
    }
  }, 30_000)

  it("a join answered again keeps the name of its first join, and says so when --name asks another", async () => {
    const r = await run(ownerHome, "workers", "invite")
    const token = r.stdout.split("\n").find((l) => l.startsWith("svc_jt_"))!
    const home = tempDir("svc-again-named-")
    proxy.loseNextAnswer(isJoin)
    expect((await run(home, "workers", "join", "--name", "alpha", token)).code).toBe(2)
    const again = await run(home, "workers", "join", "--name", "beta", token)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toBe(
      "note: the owner answered this join again (its first answer never arrived here); the credential it carried no longer works\nnote: the worker keeps the name it was given at the join answered again, alpha; --name beta was not used\n"
    )
    expect(again.stdout).toMatch(/^joined \S+ as alpha \(w/)
  }, 30_000)

  it("leaving an owner that had revoked this worker already says it freed nothing, and what frees its slots (it read as if the owner had acted on it)", async () => {
    const token = await invite("left-late")
    const home = tempDir("svc-left-late-")
    const joined = await run(home, "workers", "join", "--json", token)
    expect(joined.code, joined.stderr).toBe(0)
    const { workerId } = JSON.parse(joined.stdout) as { workerId: string }
    expect((await run(ownerHome, "workers", "revoke", "left-late")).code).toBe(0)
    const left = await run(home, "workers", "leave", "left-late", "--json")
    expect(left.code, left.stderr).toBe(0)
    expect(JSON.parse(left.stdout)).toEqual({ owner: expect.any(String), workerId, name: "left-late", ownerTold: true, revokedAlready: true })
    expect(left.stderr).toBe(
      `the owner had revoked left-late already, so it freed nothing: slots its attempts held there stay reserved until its operator releases them (svc workers release ${workerId}), since this machine, its link removed, can no longer say it stopped them. To work for it again, join with a new token.\n`
    )
  }, 30_000)

  it("a --name that cannot be a worker's is refused before anything is sent: the token is still good", async () => {
    const token = await invite("named-late")
    const home = tempDir("svc-bad-name-")
    const bad = await run(home, "workers", "join", "--name", "two words", token)
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({
      code: 2,
      stderr: `svc workers join: --name: a worker's name is one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit; "two words" is not; nothing was sent, so this try did not spend the token (svc workers join --help)\n`
    })
    const good = await run(home, "workers", "join", "--name", "named-late", token)
    expect(good.code, good.stderr).toBe(0)
  }, 30_000)

  // A read-only view of the home (a bind mount remounted read-only) needs root.
  const canMount = process.getuid?.() === 0 && spawnSync("mount", ["--version"]).status === 0
  it.skipIf(!canMount)("leaving from a home that cannot be written says nothing changed: the owner was not told (needs root, to mount)", async () => {
    const token = await invite("stays-linked")
    const home = tempDir("svc-leave-ro-")
    expect((await run(home, "workers", "join", token)).code).toBe(0)
    const links = join(home, "links")
    if (spawnSync("mount", ["--bind", links, links]).status !== 0) return
    try {
      expect(spawnSync("mount", ["-o", "remount,bind,ro", links]).status).toBe(0)
      const left = await run(home, "workers", "leave", "stays-linked")
      expect(left.code).toBe(1)
      expect(left.stderr).toMatch(/^svc: cannot remove the link to https:\/\/\S+: EROFS: read-only file system, .*; nothing changed: the owner was not told, and this machine still works for it\n$/)
    } finally {
      spawnSync("umount", [links])
    }
    expect((await workerRow("stays-linked"))?.state).not.toBe("Revoked")
  }, 30_000)
})
