/**
 * Distributed workers end to end (worker-protocol spec): one owner and several workers, each a
 * real `svc serve` process with its own $SVC_HOME on loopback, driven by the real `svc` CLI.
 * Workers reach the owner through a recording TLS proxy (it presents the owner's own
 * certificate, so the pin holds) so that every answer the owner sends a worker is inspected;
 * the test also calls the route itself, as a misbehaving client would.
 *
 * The tests share the processes and run in order: invite and join, bad input, other routes,
 * scope, rotation, takeover, Offline, revocation, and last the secret greps over everything.
 */
import { createHash } from "node:crypto"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base62, crc32, makeCredential, makeJoinKey } from "../../src/domain/workers/Secrets.js"
import {
  callRoute,
  ownerCa,
  startRecordingProxy,
  startServe,
  stopAllServes,
  svcIn,
  Transcript,
  waitFor,
  type RecordingProxy,
  type RouteAnswer,
  type RouteCall,
  type ServeProcess
} from "../support/serve.js"
import { tempDirs } from "../support/svc.js"
import { loadOrCreate } from "../../src/infra/tls/OwnerCertificate.js"

const JOB = "hasher:checksum@1.0.0"

/** Temporary homes hold keys and credentials: removed once the processes are gone. */
const temps = tempDirs()
const tempDir = temps.make

interface WorkerRow {
  readonly id: string
  readonly name: string
  readonly state: string
  readonly reason: string
  readonly capacity: number
  readonly used: number
  readonly free: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<{ readonly address: string; readonly digest: string; readonly inScope: boolean }>
  readonly scope: ReadonlyArray<string>
  readonly lastSeen: string | null
  readonly revoked: boolean
  readonly rotationPending: boolean
}
interface LinkState {
  readonly phase: string
  readonly detail: string
  readonly fence: number | null
  /** ISO 8601, as every time in --json output. */
  readonly lastAdvertisedAt: string | null
  readonly offer: { readonly capacity: number; readonly artifacts: ReadonlyArray<{ readonly address: string }> } | null
}
interface StatusDoc {
  readonly runtime: string
  readonly workers: ReadonlyArray<WorkerRow>
  readonly invites?: ReadonlyArray<Record<string, unknown>>
  readonly owners: ReadonlyArray<{ readonly key: string; readonly url: string; readonly workerId: string; readonly name: string; readonly status: LinkState | null }>
}
interface StoredLink {
  readonly url: string
  readonly fingerprint: string
  readonly workerId: string
  readonly name: string
  readonly credential: string
}

const transcript = new Transcript()
/** Every answer the route gave to the test's own calls. */
const directAnswers: Array<{ readonly what: string; readonly answer: RouteAnswer }> = []
/** Every credential and join token seen anywhere, for the greps of the last test. */
const credentials = new Set<string>()
const tokens = new Set<string>()

let proxy: RecordingProxy
let owner: ServeProcess
let ownerHome: string
let ca: string
let w1Home: string
let w2Home: string
let w3Home: string
let w1: ServeProcess
let w2: ServeProcess
let lab1Token: string
let lab1FirstCredential: string

const run = (home: string, ...args: Array<string>) => svcIn(transcript, home, args)

const statusOf = async (home: string): Promise<StatusDoc> => {
  const r = await run(home, "workers", "status", "--json")
  const doc = JSON.parse(r.stdout) as StatusDoc
  // CLI contract: exit 2 when the runtime is not running (after printing what the link files say).
  expect({ code: r.code, runtime: doc.runtime }, r.stderr).toEqual(r.code === 0 ? { code: 0, runtime: "running" } : { code: 2, runtime: "not running" })
  return doc
}
const workerRow = async (name: string): Promise<WorkerRow> => {
  const row = (await statusOf(ownerHome)).workers.find((w) => w.name === name)
  if (row === undefined) throw new Error(`the owner lists no worker ${name}`)
  return row
}
const linkState = async (home: string): Promise<LinkState | null> => (await statusOf(home)).owners[0]?.status ?? null

const readLink = (home: string): StoredLink => {
  const dir = join(home, "links")
  const files = readdirSync(dir).filter((f) => f.endsWith(".json"))
  expect(files).toHaveLength(1)
  const link = JSON.parse(readFileSync(join(dir, files[0]!), "utf8")) as StoredLink
  credentials.add(link.credential)
  return link
}

/** A call of the route by the test itself, straight to the owner; the answer is kept. */
const direct = async (what: string, call: RouteCall): Promise<RouteAnswer> => {
  const answer = await callRoute(owner.listenUrl, ca, call)
  directAnswers.push({ what, answer })
  return answer
}
const send = (what: string, bearer: string | undefined, body: unknown) =>
  direct(what, { ...(bearer === undefined ? {} : { bearer }), body: JSON.stringify(body) })

/**
 * What bad input must leave alone: the journal, the audit rows, the workers (without what the
 * clock alone changes: lastSeen, and the display of an advertisement that expires meanwhile).
 */
const snapshot = async () => {
  const exported = await run(ownerHome, "journal", "export")
  expect(exported.code, exported.stderr).toBe(0)
  const audit = await run(ownerHome, "audit", "--json")
  expect(audit.code, audit.stderr).toBe(0)
  const workers = (await statusOf(ownerHome)).workers.map(({ lastSeen: _l, state: _s, reason: _r, capacity: _c, free: _f, ...w }) => w)
  return { events: exported.stdout.trim().split("\n").filter((l) => l !== "").length, journal: exported.stdout, audit: JSON.parse(audit.stdout) as unknown, workers }
}

const auditRows = async (): Promise<ReadonlyArray<{ readonly kind: string; readonly workerId: string | null; readonly detail: string }>> => {
  const r = await run(ownerHome, "audit", "--json")
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { rows: ReadonlyArray<{ kind: string; workerId: string | null; detail: string }> }).rows
}

/** The join token's parts, as a worker (or an attacker) can read them. */
const tokenPayload = (token: string): Record<string, unknown> => {
  const body = token.slice(0, token.lastIndexOf("_"))
  return JSON.parse(Buffer.from(body.slice("svc_jt_".length), "base64url").toString("utf8")) as Record<string, unknown>
}
/** A token with another payload: with the old checksum, or with a recomputed one. */
const editToken = (token: string, payload: Record<string, unknown>, checksum: "keep" | "recompute"): string => {
  const body = "svc_jt_" + Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
  return `${body}_${checksum === "keep" ? token.slice(token.lastIndexOf("_") + 1) : base62(crc32(body), 6)}`
}

const invite = async (...args: Array<string>): Promise<string> => {
  const r = await run(ownerHome, "workers", "invite", ...args)
  expect(r.code, r.stderr).toBe(0)
  const lines = r.stdout.split("\n").filter((l) => l !== "")
  // The token alone on stdout, one line: TOKEN=$(svc workers invite) works.
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(/^svc_jt_[A-Za-z0-9_-]+_[0-9A-Za-z]{6}$/)
  tokens.add(lines[0]!)
  return lines[0]!
}

const installHasher = async (home: string) => {
  const cwd = tempDir("svc-worker-cwd-")
  const created = await svcIn(transcript, home, ["new", "hasher"], cwd)
  expect(created.code, created.stderr).toBe(0)
  const installed = await svcIn(transcript, home, ["bag", "install", "hasher"], cwd)
  expect(installed.code, installed.stderr).toBe(0)
}

const expectCleanExit = async (p: ServeProcess) => {
  const exit = await p.stop()
  expect(exit, `svc serve ${p.name} output:\n${p.output()}`).toMatchObject({ code: 0, signal: null })
  expect(exit.ms).toBeLessThan(5_000)
  expect(p.output()).toContain("svc serve: SIGTERM: stopping")
}

const expectRefusal = (answer: RouteAnswer, status: number, code: string, message?: RegExp) => {
  expect({ status: answer.status, code: (answer.json as { code?: unknown } | undefined)?.code }, answer.text).toEqual({ status, code })
  expect(answer.headers["content-type"]).toMatch(/^application\/json/)
  const body = answer.json as { message?: unknown; stopAll?: unknown }
  expect(typeof body.message).toBe("string")
  if (message !== undefined) expect(body.message).toMatch(message)
  expect(Object.keys(body).sort()).toEqual(code === "revoked" ? ["code", "message", "stopAll"] : ["code", "message"])
}

beforeAll(async () => {
  proxy = await startRecordingProxy()
  ownerHome = tempDir("svc-owner-")
  w1Home = tempDir("svc-worker1-")
  w2Home = tempDir("svc-worker2-")
  w3Home = tempDir("svc-worker3-")
  // Workers reach the owner through the proxy: the join tokens carry its address.
  owner = await startServe("owner", ownerHome, transcript, { publicUrl: proxy.url })
  expect(owner.url).toBe(proxy.url)
  proxy.target(owner.listenUrl, ownerHome)
  ca = ownerCa(ownerHome)
  await Promise.all([installHasher(w1Home), installHasher(w2Home), installHasher(w3Home)])
}, 60_000)

afterAll(async () => {
  await stopAllServes()
  await proxy?.close()
  temps.removeAll()
}, 30_000)

describe("svc workers between two real svc serve processes", () => {
  it("invites, joins, and shows the worker Ready within 5 s of starting its runtime", async () => {
    lab1Token = await invite("--name", "lab-1", "--scope", JOB)
    expect(tokenPayload(lab1Token)).toMatchObject({ v: 1, u: proxy.url })
    // The token carries no scope: the owner keeps it.
    expect(Object.keys(tokenPayload(lab1Token)).sort()).toEqual(["f", "i", "s", "u", "v"])

    const joined = await run(w1Home, "workers", "join", lab1Token, "--name", "chosen-by-worker", "--json")
    expect(joined.code, joined.stderr).toBe(0)
    const doc = JSON.parse(joined.stdout) as { owner: string; workerId: string; name: string; scope: Array<string> }
    // The invite named it; the owner's name wins.
    expect(doc).toEqual({ owner: proxy.url, workerId: expect.stringMatching(/^w[0-9A-Za-z]{10}$/), name: "lab-1", scope: [JOB], replaces: null })
    const link = readLink(w1Home)
    expect(link).toMatchObject({ url: proxy.url, workerId: doc.workerId, name: "lab-1" })
    expect(link.credential).toMatch(/^svc_wk_[0-9A-Za-z]{36}$/)
    lab1FirstCredential = link.credential
    expect(statSync(join(w1Home, "links", readdirSync(join(w1Home, "links"))[0]!)).mode & 0o777).toBe(0o600)

    // A join token is redeemed once.
    const again = await run(w2Home, "workers", "join", lab1Token)
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/already redeemed/)
    expect(readdirSync(w2Home)).not.toContain("links")

    const before = await workerRow("lab-1")
    expect(before).toMatchObject({ id: doc.workerId, state: "Needs setup", scope: [JOB], capacity: 0, lastSeen: null, revoked: false })
    expect(before.reason).toMatch(/has not advertised yet/)

    w1 = await startServe("worker-1", w1Home, transcript)
    const ready = await waitFor("lab-1 Ready", () => workerRow("lab-1"), (w) => w.state === "Ready", { timeoutMs: 10_000, everyMs: 250 })
    expect(ready.at - w1.startedAt).toBeLessThan(5_000)
    expect(ready.value).toMatchObject({
      capacity: 4,
      used: 0,
      free: 4,
      capabilities: expect.arrayContaining(["node"]),
      labels: expect.arrayContaining([`os=${process.platform}`, `arch=${process.arch}`]),
      artifacts: [{ address: JOB, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), inScope: true }],
      revoked: false,
      rotationPending: false
    })
    expect(ready.value.reason).toBe("4 of 4 slots free")

    const mine = await statusOf(w1Home)
    expect(mine.runtime).toBe("running")
    expect(mine.owners).toHaveLength(1)
    expect(mine.owners[0]).toMatchObject({ url: proxy.url, workerId: doc.workerId, name: "lab-1", status: { phase: "linked", fence: expect.any(Number) } })
    expect(mine.owners[0]!.status!.offer!.artifacts.map((a) => a.address)).toEqual([JOB])

    const kinds = (await auditRows()).map((r) => r.kind)
    expect(kinds).toEqual(["invite", "join"])
  }, 60_000)

  it("a join whose answer never came says the owner may have recorded it and keeps the join's key for the next try (network audit: it said the owner could not be reached)", async () => {
    const token = await invite("--name", "lost-answer")
    // A server with the owner's certificate (the token's pin holds) that takes the join and cuts the connection.
    const material = await loadOrCreate(ownerHome)
    const bodies: Array<string> = []
    const cutter = https.createServer({ cert: material.cert, key: material.key }, (req) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString("utf8")))
      req.on("end", () => {
        bodies.push(body)
        req.socket.destroy()
      })
    })
    await new Promise<void>((resolve) => cutter.listen(0, "127.0.0.1", resolve))
    const url = `https://127.0.0.1:${(cutter.address() as AddressInfo).port}`
    try {
      const home = tempDir("svc-lost-answer-")
      const edited = editToken(token, { ...tokenPayload(token), u: url }, "recompute")
      const cut = await run(home, "workers", "join", edited)
      expect(cut.code).toBe(2)
      expect(cut.stderr).toBe(
        `svc: the join was sent to ${url}, but its answer never came (socket hang up): the owner may have recorded it. Run svc workers join again with the same token, from this machine and SVC_HOME: the owner answers it again (this machine kept the join's key)\n`
      )
      // The key is kept (0600, in the private links directory), sent with the join, and the same on the next try.
      // And the home's join lock, let go with the join (no -journal).
      expect(readdirSync(home).sort()).toEqual(["join.lock", "links"])
      const keyFiles = readdirSync(join(home, "links"))
      expect(keyFiles).toEqual([expect.stringMatching(/^[0-9a-f]{16}\.join-key$/)])
      const keyFile = join(home, "links", keyFiles[0]!)
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const key = (JSON.parse(readFileSync(keyFile, "utf8")) as { joinKey: string }).joinKey
      expect(key).toMatch(/^svc_jk_[0-9A-Za-z]{36}$/)
      expect(JSON.parse(bodies[0]!)).toMatchObject({ kind: "join", joinKey: key })
      expect(cut.stdout + cut.stderr).not.toContain("svc_jk_")
      expect((await run(home, "workers", "join", edited)).code).toBe(2)
      expect(JSON.parse(bodies[1]!)).toMatchObject({ kind: "join", joinKey: key })
      // No link: svc workers status has nothing to link to.
      expect((await statusOf(home)).owners).toEqual([])
    } finally {
      cutter.close()
    }
    // The real owner never had it: the token is still good there (withdrawn here, for the tests after this one).
    expect((await statusOf(ownerHome)).workers.map((w) => w.name)).not.toContain("lost-answer")
    expect((await run(ownerHome, "workers", "revoke", String(tokenPayload(token)["i"]))).code).toBe(0)
  }, 30_000)

  it("lets an unused invite expire at its explicit expiry", async () => {
    const token = await invite("--name", "late", "--expires", "1s")
    await new Promise((r) => setTimeout(r, 1_500))
    const home = tempDir("svc-late-")
    const late = await run(home, "workers", "join", token)
    expect(late.code).toBe(1)
    expect(late.stderr).toMatch(/expired/)
    expect(readdirSync(home)).not.toContain("links")
    expect((await statusOf(ownerHome)).workers.map((w) => w.name)).toEqual(["lab-1"])
  }, 30_000)

  it("refuses an invite it could not show again, or a name tables cannot, and journals nothing", async () => {
    const before = await snapshot()
    // Once journaled as 8.64e20 ms: every fold that showed the invite threw, and the owner could not start.
    const far = await run(ownerHome, "workers", "invite", "--expires", "9999999999d")
    expect({ code: far.code, stdout: far.stdout, stderr: far.stderr }).toEqual({
      code: 1,
      stdout: "",
      stderr: "svc: an invite expires within 365 days at most (an unscoped invite given no expiry never expires)\n"
    })
    // A name that cannot be one is a usage problem, said before the owner is asked (as a bad --scope is).
    const badName = await run(ownerHome, "workers", "invite", "--name", "evil\nname")
    expect({ code: badName.code, stderr: badName.stderr }).toEqual({
      code: 2,
      stderr: `svc workers invite: --name: a worker's name is one word of at most 63 letters, digits, dots, hyphens and underscores, starting with a letter or digit; "evil\\nname" is not (svc workers invite --help)\n`
    })
    const lab1 = await workerRow("lab-1")
    const asId = await run(ownerHome, "workers", "invite", "--name", lab1.id)
    expect(asId.stderr).toBe(`svc: ${lab1.id} is the id of another worker: choose another name\n`)
    expect(await snapshot()).toEqual(before)
  }, 30_000)

  it("lists the invites whose tokens still work, and revokes one: its token is refused, the audit says who", async () => {
    const token = await invite("--name", "spare")
    const inviteId = String(tokenPayload(token)["i"])
    const listed = await statusOf(ownerHome)
    expect(listed.invites).toEqual([{ id: inviteId, name: "spare", scope: [], invitedAt: expect.any(String), expiresAt: null, actor: expect.stringMatching(/^operator /) }])
    const text = await run(ownerHome, "workers", "status")
    expect(text.stdout).toMatch(new RegExp(`invites not yet redeemed \\(svc workers revoke INVITE withdraws one\\):\\n.*\\n${inviteId}\\s+spare\\s+all\\s+\\S+\\s+never\\s+operator `))
    const revoked = await run(ownerHome, "workers", "revoke", inviteId)
    expect({ code: revoked.code, stdout: revoked.stdout }).toEqual({ code: 0, stdout: `revoked invite ${inviteId} (for spare): its token can no longer be redeemed\n` })
    expect((await statusOf(ownerHome)).invites).toEqual([])
    const home = tempDir("svc-spare-")
    const refused = await run(home, "workers", "join", token)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toBe("svc: the owner refused: this join token was revoked by the owner's operator; ask the owner for a new one\n")
    const again = await run(ownerHome, "workers", "revoke", inviteId)
    expect(again.stderr).toBe(`svc: invite ${inviteId} is already revoked\n`)
    expect((await auditRows()).at(-1)).toMatchObject({ kind: "revocation", workerId: null, detail: `invite ${inviteId} revoked unused; its token can no longer be redeemed` })
  }, 30_000)

  it("answers bad input on the route with a documented refusal and changes nothing", async () => {
    const credential = readLink(w1Home).credential
    const fence = (await linkState(w1Home))!.fence!
    const before = await snapshot()
    const heartbeat = { kind: "heartbeat", fence, running: [] }
    const joinKey = makeJoinKey(Uint8Array.from({ length: 30 }, (_, i) => (i * 37 + 11) % 256))
    const unknown = makeCredential(new Uint8Array(30).map((_, i) => (i * 37 + 11) % 256))
    const mistyped = credential.slice(0, -1) + (credential.endsWith("A") ? "B" : "A")
    const big = JSON.stringify({ ...heartbeat, running: Array.from({ length: 80 }, () => "x".repeat(1000)) })
    expect(big.length).toBeGreaterThan(64 * 1024)

    const cases: ReadonlyArray<readonly [string, RouteCall, number, string, RegExp?]> = [
      ["no bearer", { body: JSON.stringify(heartbeat) }, 401, "unauthenticated", /Authorization: Bearer/],
      ["basic auth", { authorization: `Basic ${Buffer.from(`x:${credential}`).toString("base64")}`, body: JSON.stringify(heartbeat) }, 401, "unauthenticated"],
      ["empty bearer", { authorization: "Bearer ", body: JSON.stringify(heartbeat) }, 401, "unauthenticated"],
      ["not a credential", { bearer: "hunter2", body: JSON.stringify(heartbeat) }, 401, "unauthenticated", /not a worker credential/],
      ["truncated credential", { bearer: credential.slice(0, 20), body: JSON.stringify(heartbeat) }, 401, "unauthenticated", /36 letters and digits/],
      ["mistyped credential", { bearer: mistyped, body: JSON.stringify(heartbeat) }, 401, "unauthenticated", /checksum/],
      ["unknown credential", { bearer: unknown, body: JSON.stringify(heartbeat) }, 401, "unauthenticated", /not known/],
      ["join token as credential", { bearer: lab1Token, body: JSON.stringify(heartbeat) }, 401, "unauthenticated"],
      ["wrong kind", { bearer: credential, body: JSON.stringify({ kind: "shell", fence, command: "id" }) }, 400, "bad-request", /not a worker message/],
      ["no kind", { bearer: credential, body: JSON.stringify({ fence }) }, 400, "bad-request"],
      ["not an object", { bearer: credential, body: "[1,2,3]" }, 400, "bad-request"],
      ["unknown field", { bearer: credential, body: JSON.stringify({ ...heartbeat, workerId: "w0000000000" }) }, 400, "bad-request", /workerId/],
      ["malformed JSON", { bearer: credential, body: '{"kind": "heartbeat",' }, 400, "bad-request", /not valid JSON/],
      ["empty body", { bearer: credential, body: "" }, 400, "bad-request"],
      ["fence not positive", { bearer: credential, body: JSON.stringify({ ...heartbeat, fence: 0 }) }, 400, "bad-request", /fence: a fence is a whole number from 1 to 9007199254740991$/],
      ["fence past exact integers", { bearer: credential, body: `{"kind":"heartbeat","fence":9007199254740993,"running":[]}` }, 400, "bad-request", /fence: a fence is a whole number from 1 to 9007199254740991$/],
      ["capacity over 100", { bearer: credential, body: JSON.stringify({ kind: "advertise", fence, capacity: 101, labels: [], capabilities: [], artifacts: [] }) }, 400, "bad-request"],
      // Shown in the owner's terminal (svc workers status): an OSC sequence retitled the window.
      ["a label with control characters", { bearer: credential, body: JSON.stringify({ kind: "advertise", fence, capacity: 4, labels: ["k=a\u0000b\u001b]0;pwned\u0007"], capabilities: ["node"], artifacts: [] }) }, 400, "bad-request", /^the body is not a worker message: labels\.0: /],
      ["claim wait over 30 s", { bearer: credential, body: JSON.stringify({ kind: "claim", fence, waitSeconds: 3600 }) }, 400, "bad-request"],
      ["text/plain", { bearer: credential, contentType: "text/plain", body: JSON.stringify(heartbeat) }, 415, "unsupported-media-type", /application\/json/],
      ["form encoded", { bearer: credential, contentType: "application/x-www-form-urlencoded", body: "kind=heartbeat" }, 415, "unsupported-media-type"],
      ["no content type", { bearer: credential, contentType: null, body: JSON.stringify(heartbeat) }, 415, "unsupported-media-type"],
      ["oversize body", { bearer: credential, body: big }, 413, "payload-too-large", /65536 bytes/],
      ["oversize chunked body", { bearer: credential, body: big, chunked: true }, 413, "payload-too-large"],
      ["fence never issued", { bearer: credential, body: JSON.stringify({ ...heartbeat, fence: fence + 1 }) }, 409, "fenced", /never issued/],
      [
        "advertise with a wrong fence",
        { bearer: credential, body: JSON.stringify({ kind: "advertise", fence: fence + 7, capacity: 100, labels: ["gpu=yes"], capabilities: ["node"], artifacts: [{ address: "evil:all@1.0.0", digest: "x" }] }) },
        409,
        "fenced"
      ],
      ["report for no activity", { bearer: credential, body: JSON.stringify({ kind: "report", fence, attempt: "a-none", outcome: { ok: true } }) }, 404, "unknown-activity"],
      ["decline for no activity", { bearer: credential, body: JSON.stringify({ kind: "decline", fence, attempt: "a-none", reason: "busy" }) }, 404, "unknown-activity"],
      ["join without a token", { body: JSON.stringify({ kind: "join", name: "x" }) }, 401, "unauthenticated"],
      ["join with a credential", { bearer: credential, body: JSON.stringify({ kind: "join", name: "x" }) }, 401, "unauthenticated"],
      ["join with a used token", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x" }) }, 403, "join-refused", /already redeemed/],
      // The previous credential is a secret: what is wrong with it is said without repeating it.
      ["join with an overlong previous credential", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x", previousCredential: `${credential}${"z".repeat(200)}` }) }, 400, "bad-request", /^the body is not a worker message: previousCredential: previousCredential must be a worker credential \(at most 200 characters\)$/],
      // What JSON.parse lets through: bytes that are not UTF-8 (they would be recorded as U+FFFD), another charset, a key twice.
      ["invalid UTF-8", { bearer: credential, body: Buffer.concat([Buffer.from(`{"kind":"decline","fence":${fence},"attempt":"a`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('","reason":"x"}')]) }, 400, "bad-request", /not valid UTF-8/],
      ["latin1 charset", { bearer: credential, contentType: "application/json; charset=latin1", body: JSON.stringify(heartbeat) }, 415, "unsupported-media-type", /UTF-8, not latin1/],
      ["two charsets, UTF-8 first", { bearer: credential, contentType: "application/json; charset=utf-8; charset=iso-8859-1", body: JSON.stringify(heartbeat) }, 415, "unsupported-media-type", /not iso-8859-1/],
      ["an empty charset", { bearer: credential, contentType: "application/json; charset=", body: JSON.stringify(heartbeat) }, 415, "unsupported-media-type", /not an empty charset/],
      ["a key twice", { bearer: credential, body: `{"kind":"claim","kind":"bye","fence":${fence}}` }, 400, "bad-request", /^the body names kind twice/],
      ["a key twice, escaped", { bearer: credential, body: `{"kind":"advertise","fence":${fence},"capacity":100,"c\u0061pacity":1,"labels":[],"capabilities":[],"artifacts":[]}` }, 400, "bad-request", /names capacity twice/],
      ["a nested key twice", { bearer: credential, body: `{"kind":"report","fence":${fence},"attempt":"a-none","outcome":{"ok":true,"result":{"a":[{"b":1,"b":2}]}}}` }, 400, "bad-request", /names outcome\.result\.a\[0\]\.b twice/],
      // Nested as deep as the body limit allows: the checks walk it without recursion (a recursive one stopped the owner).
      ["a body nested 20,000 deep", { bearer: credential, body: `{"kind":"heartbeat","fence":${fence},"running":[],"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}` }, 400, "bad-request", /^the body nests more than 514 levels deep/],
      ["a body nested 20,000 deep, no bearer", { body: `{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}` }, 400, "bad-request"],
      // Where a string is expected, so that the decoder's message would quote it: wording that stopped the owner.
      ["a join name nested 5,000 deep, no bearer", { body: `{"kind":"join","name":${"[".repeat(5_000)}${"]".repeat(5_000)}}` }, 400, "bad-request", /^the body nests more than 514 levels deep/],
      ["a claim's running list nested 30,000 deep", { bearer: credential, body: `{"kind":"claim","fence":${fence},"waitSeconds":0,"running":${"[".repeat(30_000)}${"]".repeat(30_000)}}` }, 400, "bad-request", /^the body nests more than 514 levels deep/],
      ["a join name nested 500 deep: quoted, cut short", { body: `{"kind":"join","name":${"[".repeat(500)}${"]".repeat(500)}}` }, 400, "bad-request", /^the body is not a worker message: name: Expected string, actual \[{10}.{0,300}…$/],
      // A kind that every object inherits (found in a table by an object's keys, it stopped the owner).
      ...["constructor", "__proto__", "toString", "hasOwnProperty"].map((kind) => [`kind ${kind}, no bearer`, { body: JSON.stringify({ kind }) }, 400, "bad-request", /^the body is not a worker message: kind: Expected "join" \| "hello"/] as const),
      // A secret where it would be journaled, shown or echoed: refused, and not repeated.
      ["a label holding the credential", { bearer: credential, body: JSON.stringify({ kind: "advertise", fence, capacity: 4, labels: [`k=${credential}`], capabilities: ["node"], artifacts: [] }) }, 400, "bad-request", /^labels\[0\] holds what is shaped as an svc secret/],
      ["an attempt id holding the credential", { bearer: credential, body: JSON.stringify({ kind: "report", fence, attempt: credential, outcome: { ok: true } }) }, 400, "bad-request", /^attempt holds what is shaped/],
      ["a join name holding a join token", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: lab1Token }) }, 400, "bad-request", /^name holds what is shaped/],
      ["an unknown kind holding the credential", { bearer: credential, body: JSON.stringify({ kind: credential }) }, 400, "bad-request", /^kind holds/],
      ["join with a previous credential not a string", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x", previousCredential: 42424242 }) }, 400, "bad-request", /^the body is not a worker message: previousCredential: previousCredential must be a string$/],
      // The join key is a secret too: refused without being repeated, and only where it belongs.
      ["join with a join key cut short", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x", joinKey: joinKey.slice(0, -1) }) }, 400, "bad-request", /^the body is not a worker message: joinKey: joinKey must be svc_jk_ followed by 36 letters and digits$/],
      ["join with a join key changed", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x", joinKey: `${joinKey.slice(0, -1)}${joinKey.endsWith("x") ? "y" : "x"}` }) }, 400, "bad-request", /^the body is not a worker message: joinKey: joinKey's checksum does not match: it was changed or cut short$/],
      ["a join key as a label", { bearer: credential, body: JSON.stringify({ kind: "advertise", fence, capacity: 4, labels: [`k=${joinKey}`], capabilities: ["node"], artifacts: [] }) }, 400, "bad-request", /^labels\[0\] holds what is shaped as an svc secret/],
      ["a used token with another join key", { bearer: lab1Token, body: JSON.stringify({ kind: "join", name: "x", joinKey }) }, 403, "join-refused", /^this join token was already redeemed; ask the owner for a new one$/]
    ]
    for (const [what, call, status, code, message] of cases) {
      const answer = await direct(what, call)
      expectRefusal(answer, status, code, message)
      expect(answer.text, what).not.toContain(credential.slice(7))
      expect(answer.text, what).not.toContain(lab1Token.slice(7, 40))
      expect(answer.text, what).not.toContain(joinKey.slice(7, 30))
    }

    const after = await snapshot()
    expect(after).toEqual(before)
    expect(await workerRow("lab-1")).toMatchObject({ state: "Ready", capacity: 4, free: 4 })
    expect(await linkState(w1Home)).toMatchObject({ phase: "linked", fence })
  }, 60_000)

  it("answers a worker credential with 401 on every other route and method, and everyone else with 404", async () => {
    const credential = readLink(w1Home).credential
    const before = await snapshot()
    const elsewhere: ReadonlyArray<readonly [string, string]> = [
      ["GET", "/"],
      ["GET", "/api/worker"],
      ["PUT", "/api/worker"],
      ["DELETE", "/api/worker"],
      ["PATCH", "/api/worker"],
      ["OPTIONS", "/api/worker"],
      ["POST", "/api/worker/"],
      ["POST", "/api/worker/hello"],
      ["POST", "/api/workers"],
      ["POST", "/API/WORKER"],
      ["POST", "/api"],
      ["GET", "/api/openapi.json"],
      ["POST", "/invite"],
      ["GET", "/workers"],
      ["POST", "/revoke"],
      ["GET", "/state"],
      ["GET", "/links"],
      ["GET", "/login"],
      ["GET", "/console"],
      ["POST", "/api/run"]
    ]
    const body = JSON.stringify({ kind: "heartbeat", fence: 1, running: [] })
    for (const [method, path] of elsewhere) {
      const withCredential = await direct(`${method} ${path} with a credential`, { method, path, bearer: credential, body })
      expectRefusal(withCredential, 401, "unauthenticated", /opens POST \/api\/worker and nothing else/)
      const lowercase = await direct(`${method} ${path} with a lowercase bearer`, { method, path, authorization: `bearer ${credential}`, body })
      expect(lowercase.status).toBe(401)
      const anonymous = await direct(`${method} ${path} without a credential`, { method, path, body })
      expect({ status: anonymous.status, json: anonymous.json }).toEqual({ status: 404, json: { code: "not-found", message: expect.any(String) } })
    }
    const head = await direct("HEAD /api/worker with a credential", { method: "HEAD", path: "/api/worker", bearer: credential })
    expect(head.status).toBe(401)
    // A query string does not make another route.
    const query = await direct("POST /api/worker?x=1", { path: "/api/worker?x=1", bearer: credential, body: "{" })
    expectRefusal(query, 400, "bad-request")

    expect(await snapshot()).toEqual(before)
  }, 60_000)

  it("keeps the scope on the owner: an edited token is refused at join, and out-of-scope jobs are shown inScope false", async () => {
    const token = await invite("--name", "lab-scope", "--scope", "hasher:checksum@2.0.0")
    const payload = tokenPayload(token)
    const lab1 = tokenPayload(lab1Token)

    // Edited, old checksum: refused by the CLI before any call, and by the owner.
    const widened = editToken(token, { ...payload, scope: [JOB] }, "keep")
    const cli = await run(w3Home, "workers", "join", widened)
    expect(cli.code).toBe(1)
    expect(cli.stderr).toMatch(/checksum does not match: it was mistyped, truncated or edited: give the whole line svc workers invite printed on the owner \(one word, svc_jt_\.\.\.\), or ask the owner.s operator for a new one\n$/)
    expectRefusal(await send("join with an edited token", widened, { kind: "join", name: "x" }), 401, "unauthenticated", /checksum does not match/)
    // Edited with a recomputed checksum: the secret no longer matches the invite.
    for (const [what, edited] of [
      // Its last character changed (to another one: a secret may end in "x" already).
      ["another secret", { ...payload, s: `${String(payload["s"]).slice(0, -1)}${String(payload["s"]).endsWith("x") ? "y" : "x"}` }],
      ["lab-1's used invite", { ...payload, i: lab1["i"] }],
      ["an invented invite", { ...payload, i: "000000000000" }]
    ] as const) {
      const forged = editToken(token, edited, "recompute")
      tokens.add(forged)
      expectRefusal(await send(`join with ${what}`, forged, { kind: "join", name: "x" }), 403, "join-refused", /not known to the owner/)
      const refused = await run(w3Home, "workers", "join", forged)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/the owner refused: this join token is not known to the owner/)
    }
    expect(readdirSync(w3Home)).not.toContain("links")
    expect((await statusOf(ownerHome)).workers.map((w) => w.name)).toEqual(["lab-1"])

    // A token that claims a wider scope (valid checksum, real secret) joins with the owner's scope.
    const claiming = editToken(token, { ...payload, scope: [JOB, "evil:all@1.0.0"], sc: ["*"] }, "recompute")
    tokens.add(claiming)
    // A home that cannot keep the link is found out before the token is spent.
    const blocked = tempDir("svc-blocked-")
    writeFileSync(join(blocked, "links"), "not a directory")
    const cannot = await run(blocked, "workers", "join", claiming)
    expect(cannot.code).toBe(2)
    expect(cannot.stderr).toMatch(new RegExp(`^svc: cannot keep a link in ${join(blocked, "links")}: .*; nothing was sent to the owner, so this try did not spend the token\n$`))
    expect((await statusOf(ownerHome)).workers.map((w) => w.name)).toEqual(["lab-1"])
    // Pasted with its line end, the token is the same token (it was a header error once).
    const joined = await run(w3Home, "workers", "join", `${claiming}\n`, "--json")
    expect(joined.code, joined.stderr).toBe(0)
    expect(JSON.parse(joined.stdout)).toMatchObject({ name: "lab-scope", scope: ["hasher:checksum@2.0.0"] })
    const credential = readLink(w3Home).credential

    // Its runtime advertises hasher:checksum@1.0.0, which the scope does not name.
    const w3 = await startServe("worker-3", w3Home, transcript)
    const shown = await waitFor("lab-scope advertised", () => workerRow("lab-scope"), (w) => w.artifacts.length > 0, { timeoutMs: 10_000, everyMs: 250 })
    expect(shown.value).toMatchObject({ state: "Needs setup", scope: ["hasher:checksum@2.0.0"], artifacts: [{ address: JOB, inScope: false }] })
    expect(shown.value.reason).toMatch(/holds none of the jobs in its scope \(hasher:checksum@2\.0\.0\)/)
    await expectCleanExit(w3)

    // Acting as that worker: advertising more jobs does not widen the scope either.
    const welcome = await send("lab-scope hello", credential, { kind: "hello", protocol: 1, running: [] })
    expect(welcome.status, welcome.text).toBe(200)
    expect(welcome.json).toMatchObject({ kind: "welcome", name: "lab-scope", scope: ["hasher:checksum@2.0.0"], newCredential: null })
    const fence = (welcome.json as { fence: number }).fence
    const artifacts = [
      { address: JOB, digest: "sha256:" + "0".repeat(64) },
      { address: "evil:all@1.0.0", digest: "sha256:" + "1".repeat(64) }
    ]
    const ack = await send("lab-scope advertise", credential, { kind: "advertise", fence, capacity: 100, labels: ["gpu=h100"], capabilities: ["node", "process"], artifacts })
    expect(ack.status, ack.text).toBe(200)
    expect(ack.json).toEqual({ kind: "ack", stop: [], newCredential: null })
    const row = await workerRow("lab-scope")
    expect(row).toMatchObject({ state: "Needs setup", scope: ["hasher:checksum@2.0.0"], capacity: 100 })
    expect(row.artifacts.map((a) => [a.address, a.inScope])).toEqual([
      ["evil:all@1.0.0", false],
      [JOB, false]
    ])
  }, 60_000)

  it("rotates: the worker takes the new credential over and carries on with it", async () => {
    const old = readLink(w1Home).credential
    const fence = (await linkState(w1Home))!.fence!
    const rotated = await run(ownerHome, "workers", "rotate", "lab-1")
    expect(rotated.code, rotated.stderr).toBe(0)
    expect(rotated.stdout).toMatch(/rotation requested for lab-1/)

    const changed = await waitFor("the new credential in the link file", async () => readLink(w1Home).credential, (c) => c !== old, { timeoutMs: 6_000, everyMs: 200 })
    const fresh = changed.value
    expect(fresh).toMatch(/^svc_wk_[0-9A-Za-z]{36}$/)
    expect((await auditRows()).map((r) => r.kind)).toContain("rotation")
    const row = await workerRow("lab-1")
    expect(row).toMatchObject({ state: "Ready", rotationPending: false })

    // The worker carries on in the same session, with the new credential.
    const advertised = await waitFor(
      "an advertisement after the hand-over",
      () => linkState(w1Home),
      (s) => s !== null && s.lastAdvertisedAt !== null && Date.parse(s.lastAdvertisedAt) > changed.at,
      { timeoutMs: 8_000, everyMs: 250 }
    )
    expect(advertised.value).toMatchObject({ phase: "linked", fence })
    expect(readLink(w1Home).credential).toBe(fresh)
    expect((await workerRow("lab-1")).state).toBe("Ready")

    // The new credential opens calls that leave the session alone.
    const claim = await send("claim with the new credential", fresh, { kind: "claim", fence, waitSeconds: 0 })
    expect(claim.status, claim.text).toBe(200)
    expect(claim.json).toEqual({ kind: "no-work", retryAfterSeconds: 0, newCredential: null })
    const beat = await send("heartbeat with the new credential", fresh, { kind: "heartbeat", fence, running: [] })
    expect(beat.json).toEqual({ kind: "ack", stop: [], newCredential: null })
  }, 60_000)

  it("keeps the old credential working for its grace after a rotation, without minting again for a call that overlapped the hand-over", async () => {
    // lab-scope's session is the test's own (its hello in the scope test).
    const c1 = readLink(w3Home).credential
    const hello = await send("lab-scope hello before rotation", c1, { kind: "hello", protocol: 1, running: [] })
    expect(hello.status, hello.text).toBe(200)
    const fence = (hello.json as { fence: number }).fence
    expect((await run(ownerHome, "workers", "rotate", "lab-scope")).code).toBe(0)
    expect(await workerRow("lab-scope")).toMatchObject({ rotationPending: true })

    const t0 = Date.now()
    const first = await send("heartbeat with the rotated credential", c1, { kind: "heartbeat", fence, running: [] })
    expect(first.status, first.text).toBe(200)
    const handed = first.json as { kind: string; newCredential: { credential: string; previousValidUntil: string } | null }
    expect(handed.kind).toBe("ack")
    expect(handed.newCredential?.credential).toMatch(/^svc_wk_[0-9A-Za-z]{36}$/)
    const c2 = handed.newCredential!.credential
    credentials.add(c2)
    const graceEnds = Date.parse(handed.newCredential!.previousValidUntil)
    expect(graceEnds - t0).toBeGreaterThan(5 * 60_000 - 10_000)
    expect(graceEnds - t0).toBeLessThan(5 * 60_000 + 10_000)
    expect(await workerRow("lab-scope")).toMatchObject({ rotationPending: false })

    // The new credential works and hands nothing over.
    const second = await send("heartbeat with the handed-over credential", c2, { kind: "heartbeat", fence, running: [] })
    expect(second.json).toEqual({ kind: "ack", stop: [], newCredential: null })
    // The old one still opens the route in its grace. Within 35 s of the hand-over nothing more
    // is minted: the call may have been made before the answer arrived (a lost answer is answered
    // with another credential after that: owner.test.ts, on the test clock).
    const old = await send("claim with the old credential in its grace", c1, { kind: "claim", fence, waitSeconds: 0 })
    expect(old.status, old.text).toBe(200)
    expect(old.json).toMatchObject({ kind: "no-work", newCredential: null })
    const third = await send("heartbeat with the handed-over credential after it", c2, { kind: "heartbeat", fence, running: [] })
    expect(third.json).toEqual({ kind: "ack", stop: [], newCredential: null })
    const workerId = readLink(w3Home).workerId
    expect((await auditRows()).filter((r) => r.kind === "rotation" && r.workerId === workerId).map((r) => r.detail)).toEqual([
      expect.stringMatching(/rotation requested/),
      expect.stringMatching(/new credential issued/)
    ])
  }, 30_000)

  it("lets a second process with a copied credential take the session over and fences the first out", async () => {
    const fence1 = (await linkState(w1Home))!.fence!
    const credential = readLink(w1Home).credential
    cpSync(join(w1Home, "links"), join(w2Home, "links"), { recursive: true })
    w2 = await startServe("worker-2", w2Home, transcript)

    const second = await waitFor("worker-2 linked", () => linkState(w2Home), (s): s is LinkState => s?.phase === "linked" && s.lastAdvertisedAt !== null, { timeoutMs: 10_000, everyMs: 250 })
    expect(second.value.lastAdvertisedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(second.value.fence).toBeGreaterThan(fence1)
    const first = await waitFor("worker-1 fenced", () => linkState(w1Home), (s): s is LinkState => s?.phase === "fenced", { timeoutMs: 10_000, everyMs: 250 })
    expect(first.value.detail).toMatch(/another process took this worker's session over/)
    expect(first.at - w2.startedAt).toBeLessThan(10_000)

    const lab1 = readLink(w2Home).workerId
    const takeovers = (await auditRows()).filter((r) => r.kind === "takeover" && r.workerId === lab1)
    expect(takeovers).toHaveLength(1)
    expect((await workerRow("lab-1")).state).toBe("Ready")

    // The displaced session's fence is stale: refused, and nothing changes.
    const before = await snapshot()
    expectRefusal(await send("heartbeat with the displaced fence", credential, { kind: "heartbeat", fence: fence1, running: [] }), 409, "fenced", /took this worker's session over/)
    expectRefusal(
      await send("advertise with the displaced fence", credential, { kind: "advertise", fence: fence1, capacity: 1, labels: [], capabilities: [], artifacts: [] }),
      409,
      "fenced"
    )
    expect(await snapshot()).toEqual(before)
    expect(await linkState(w2Home)).toMatchObject({ phase: "linked", fence: second.value.fence })

    // The fenced runtime keeps running (its link ended) and stops cleanly.
    expect(w1.exited()).toBe(false)
    await expectCleanExit(w1)
  }, 60_000)

  it("shows a worker that fell silent Offline no later than 15 s after its last advertisement", async () => {
    // Killed, it says nothing (a clean stop says bye, and is Offline at once: the next test).
    process.kill(w2.pid, "SIGKILL")
    await waitFor("worker-2 to die", async () => w2.exited(), (gone) => gone, { timeoutMs: 5_000, everyMs: 50 })
    await w2.stop()
    const lastSeen = (await workerRow("lab-1")).lastSeen
    expect(lastSeen).not.toBeNull()
    const last = Date.parse(lastSeen!)
    const seen: Array<{ at: number; state: string }> = []
    const offline = await waitFor(
      "lab-1 Offline",
      async () => {
        const row = await workerRow("lab-1")
        seen.push({ at: Date.now(), state: row.state })
        return row
      },
      (w) => w.state === "Offline",
      { timeoutMs: 25_000, everyMs: 500 }
    )
    expect(offline.at - last).toBeLessThanOrEqual(15_000 + 2_000)
    // ...and not before the advertisement's 15 s were up.
    expect(seen.filter((s) => s.at < last + 14_000).every((s) => s.state === "Ready")).toBe(true)
    expect(offline.value).toMatchObject({ capacity: 0, free: 0, revoked: false })
    expect(offline.value.reason).toMatch(/last advertisement \d+ s ago \(expires after 15 s\)/)
  }, 60_000)

  it("shows a worker whose svc serve stopped cleanly Offline at once: it said bye", async () => {
    w2 = await startServe("worker-2 back", w2Home, transcript)
    await waitFor("lab-1 Ready", () => workerRow("lab-1"), (w) => w.state === "Ready", { timeoutMs: 15_000, everyMs: 250 })
    await expectCleanExit(w2)
    expect(await workerRow("lab-1")).toMatchObject({ state: "Offline", capacity: 0, reason: expect.stringMatching(/^its svc serve stopped cleanly \d+ s ago \(it said so\)/) })
  }, 60_000)

  it("revokes: the worker's next call is refused and it is told to stop all its work", async () => {
    // The copy comes back (a new session: its previous one is long dead, so no takeover).
    w2 = await startServe("worker-2 again", w2Home, transcript)
    const ready = await waitFor("lab-1 Ready again", () => workerRow("lab-1"), (w) => w.state === "Ready", { timeoutMs: 10_000, everyMs: 250 })
    expect(ready.at - w2.startedAt).toBeLessThan(5_000)
    const lab1 = readLink(w2Home).workerId
    expect((await auditRows()).filter((r) => r.kind === "takeover" && r.workerId === lab1)).toHaveLength(1)

    const revoked = await run(ownerHome, "workers", "revoke", "lab-1")
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toMatch(/revoked lab-1/)
    const revokedAt = Date.now()
    const row = await workerRow("lab-1")
    expect(row).toMatchObject({ state: "Offline", revoked: true })
    expect(row.reason).toMatch(/revoked/)

    const ended = await waitFor("the worker's link revoked", () => linkState(w2Home), (s): s is LinkState => s?.phase === "revoked", { timeoutMs: 8_000, everyMs: 250 })
    expect(ended.at - revokedAt).toBeLessThan(6_000)
    expect(ended.value.detail).toMatch(/revoked/)
    expect((await auditRows()).map((r) => r.kind)).toContain("revocation")
    // The worker's own status says what can be done about it, and its log says it once.
    const said = await run(w2Home, "workers", "status")
    expect(said.stdout).toContain(`the owner's operator revoked this worker; to work for it again, redeem a new invite from its operator (svc workers join TOKEN); to forget it: svc workers leave ${readLink(w2Home).url}`)
    // What the ended link offered is not shown as if it still did.
    expect(said.stdout).not.toMatch(/offers \d+ slots?/)
    expect(w2.output().match(/has ended \(revoked\)/g)).toHaveLength(1)
    expect(w2.output()).not.toContain("svc: link to")

    const credential = readLink(w2Home).credential
    for (const body of [
      { kind: "heartbeat", fence: ended.value.fence, running: [] },
      { kind: "hello", protocol: 1, running: [] },
      { kind: "claim", fence: ended.value.fence, waitSeconds: 0 }
    ]) {
      const answer = await send(`${body.kind} after revocation`, credential, body)
      expectRefusal(answer, 403, "revoked", /revoked/)
      expect((answer.json as { stopAll?: unknown }).stopAll).toBe(true)
    }
    expectRefusal(await direct("GET / with a revoked credential", { method: "GET", path: "/", bearer: credential }), 401, "unauthenticated")

    // Rotating or revoking it again is refused with a sentence, not a crash.
    for (const command of ["rotate", "revoke"]) {
      const again = await run(ownerHome, "workers", command, "lab-1")
      expect(again.code).toBe(1)
      expect(again.stderr).toMatch(/revoked/)
    }
    expect((await workerRow("lab-1")).state).toBe("Offline")
    await expectCleanExit(w2)
  }, 60_000)

  it("svc workers leave tells the owner (it revokes the worker) and ends the link: the worker falls silent, and the output it kept for that owner goes", async () => {
    // Output left for an owner this machine has no link to is removed when the runtime starts.
    const stray = join(w3Home, "work", "0000000000000000")
    mkdirSync(stray, { recursive: true })
    writeFileSync(join(stray, "r1.1.stdout"), "left over\n")
    const w3 = await startServe("worker-3 again", w3Home, transcript)
    await waitFor("lab-scope heard from", () => workerRow("lab-scope"), (w) => w.lastSeen !== null && Date.parse(w.lastSeen) >= w3.startedAt, { timeoutMs: 10_000, everyMs: 250 })
    expect(existsSync(stray)).toBe(false)

    const key = readdirSync(join(w3Home, "links")).find((f) => f.endsWith(".json"))!.slice(0, -5)
    // What a running attempt's output would leave there.
    const kept = join(w3Home, "work", key)
    mkdirSync(kept, { recursive: true })
    writeFileSync(join(kept, "r2.1.stdout"), "some output\n")
    const linkFile = join(w3Home, "links", `${key}.json`)
    const saved = readFileSync(linkFile, "utf8")
    const { url, workerId } = JSON.parse(saved) as { url: string; workerId: string }
    // An owner it does not work for is refused, naming the one it does; nothing is removed.
    const unknown = await run(w3Home, "workers", "leave", "https://elsewhere.example:7443")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(`no link here is to https://elsewhere.example:7443; this machine works for: ${url} as lab-scope (${workerId})`)
    expect(existsSync(linkFile)).toBe(true)
    // Named by the owner's host:port, as a person would type it.
    const left = await run(w3Home, "workers", "leave", url.replace(/^https:\/\//, ""), "--json")
    expect(left.code, left.stderr).toBe(0)
    // Its runtime ended the link before the owner was told: nothing ran, nothing to free.
    expect(JSON.parse(left.stdout)).toEqual({ owner: url, workerId, name: "lab-scope", ownerTold: true, released: 0 })
    // The owner was told (it used to list the worker Offline until its operator revoked it).
    expect(left.stderr).toContain("the owner was told: it lists lab-scope as revoked (it left)")
    expect(await workerRow("lab-scope")).toMatchObject({ revoked: true })
    expect((await auditRows()).at(-1)).toMatchObject({ kind: "revocation", workerId, detail: "revoked; its next call is refused" })
    expect((await run(ownerHome, "audit", "--json")).stdout).toContain(`"actor": "worker ${workerId} (it left)"`)
    expect(existsSync(linkFile)).toBe(false)
    const again = await run(w3Home, "workers", "leave", "lab-scope")
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("this machine works for no owner")
    await waitFor("its output removed", async () => existsSync(kept), (there) => !there, { timeoutMs: 6_000, everyMs: 200 })
    // The worker's log says the link ended (an interrupted link said nothing of it).
    expect(w3.output()).toContain(`the link to the owner at ${url} as lab-scope was removed (svc workers leave): it has ended`)
    expect((await statusOf(w3Home)).owners).toEqual([])
    // Silent from then on: no call for longer than an advertisement's period (4 s).
    const before = (await workerRow("lab-scope")).lastSeen
    await new Promise((resolve) => setTimeout(resolve, 6_000))
    expect((await workerRow("lab-scope")).lastSeen).toBe(before)
    await expectCleanExit(w3)
    // Put back, as the machine's operator would to link it again (the file is what later checks read).
    writeFileSync(linkFile, saved, { mode: 0o600 })
  }, 60_000)

  it("shows no secret in logs, the journal, --json output or error messages, nor any answer another worker's credential or the owner's key", async () => {
    // Everything a person or a log collector can see, from every machine.
    await Promise.all(
      [ownerHome, w1Home, w2Home, w3Home].map(async (home) => {
        await statusOf(home)
        // The workers' runtimes are stopped by now: exit 2, after what the link files say.
        expect((await run(home, "workers", "status")).code).toBe(home === ownerHome ? 0 : 2)
        expect((await run(home, "journal", "export")).code).toBe(0)
        if (home !== ownerHome) return
        expect((await run(home, "journal", "tail", "--json", "-n", "1000")).code).toBe(0)
        expect((await run(home, "audit", "--json")).code).toBe(0)
        expect((await run(home, "audit")).code).toBe(0)
      })
    )
    await expectCleanExit(owner)
    expect(owner.output()).not.toMatch(/internal error/)
    // The store file itself holds hashes only.
    for (const file of readdirSync(ownerHome).filter((f) => f.startsWith("svc.sqlite"))) {
      transcript.add(`owner ${file} (raw)`, readFileSync(join(ownerHome, file)).toString("latin1"))
    }

    for (const home of [w1Home, w2Home, w3Home]) readLink(home)
    for (const e of proxy.exchanges) {
      for (const m of e.answer.matchAll(/svc_wk_[0-9A-Za-z]{36}/g)) credentials.add(m[0])
    }
    for (const { answer } of directAnswers) for (const m of answer.text.matchAll(/svc_wk_[0-9A-Za-z]{36}/g)) credentials.add(m[0])
    // At least: lab-1's first and rotated credentials, and lab-scope's.
    expect(credentials.size).toBeGreaterThanOrEqual(3)
    const secrets = [...tokens].map((t) => String(tokenPayload(t)["s"]))
    const keyChunks = [ownerHome, w1Home, w2Home, w3Home].flatMap((home) =>
      readFileSync(join(home, "tls", "owner.key"), "utf8")
        .split("\n")
        .filter((l) => l.length >= 40 && !l.startsWith("-----"))
    )
    expect(keyChunks.length).toBeGreaterThan(10)

    // The grep reaches the journal: it holds the credentials' SHA-256 (and only that).
    const firstCredentialHash = createHash("sha256").update(lab1FirstCredential).digest("hex")
    expect(transcript.find(firstCredentialHash)).toContain("svc journal export (stdout)")
    expect(transcript.find(lab1FirstCredential)).toEqual([])

    const isInviteOutput = (e: { readonly source: string }) => e.source === "svc workers invite (stdout)"
    const leaks: Array<string> = []
    for (const c of credentials) for (const s of transcript.find(c)) leaks.push(`a credential in ${s}`)
    // Join keys go from the joining machine to the owner in the join's body, and nowhere else.
    const joinKeys = new Set(proxy.exchanges.flatMap((e) => [...e.request.matchAll(/svc_jk_[0-9A-Za-z]{36}/g)].map((m) => m[0])))
    // lab-1's, lab-scope's, and the joins refused after them (each try a key of its own).
    expect(joinKeys.size).toBeGreaterThanOrEqual(3)
    for (const k of joinKeys) for (const s of transcript.find(k)) leaks.push(`a join key in ${s}`)
    for (const t of tokens) for (const s of transcript.find(t, isInviteOutput)) leaks.push(`a join token in ${s}`)
    for (const secret of secrets) for (const s of transcript.find(secret)) leaks.push(`a join token's secret in ${s}`)
    for (const chunk of keyChunks) for (const s of transcript.find(chunk)) leaks.push(`a TLS private key in ${s}`)
    for (const s of transcript.find("PRIVATE KEY")) leaks.push(`a private key marker in ${s}`)
    expect([...new Set(leaks)]).toEqual([])

    // Every answer sent to a worker (through the proxy or to the test's own calls): nothing but
    // what it hands to that worker.
    const answers = [
      ...proxy.exchanges.map((e) => ({ what: `${e.method} ${e.path} (${e.status})`, text: e.answer })),
      ...directAnswers.map((d) => ({ what: d.what, text: d.answer.text }))
    ]
    expect(proxy.exchanges.filter((e) => /"kind":"joined"/.test(e.answer))).toHaveLength(2)
    expect(proxy.exchanges.filter((e) => /"kind":"welcome"/.test(e.answer)).length).toBeGreaterThanOrEqual(4)
    expect(proxy.exchanges.filter((e) => /"newCredential":\{/.test(e.answer)).length).toBeGreaterThanOrEqual(1)
    const bad: Array<string> = []
    for (const { what, text } of answers) {
      let handedOver: Array<string> = []
      try {
        const json = JSON.parse(text) as { credential?: unknown; newCredential?: { credential?: unknown } | null }
        handedOver = [json.credential, json.newCredential?.credential].filter((c): c is string => typeof c === "string")
      } catch {
        // Not JSON (a HEAD answer): still grepped below.
      }
      for (const c of credentials) if (!handedOver.includes(c) && text.includes(c)) bad.push(`${what}: a credential it does not hand over`)
      for (const t of tokens) if (text.includes(t)) bad.push(`${what}: a join token`)
      if (/svc_jk_[0-9A-Za-z]{8}|joinKeyHash/.test(text)) bad.push(`${what}: a join key or its hash`)
      for (const secret of secrets) if (text.includes(secret)) bad.push(`${what}: a join token's secret`)
      for (const chunk of keyChunks) if (text.includes(chunk)) bad.push(`${what}: a TLS private key`)
      if (/PRIVATE KEY|tokenHash|credentialHash/.test(text)) bad.push(`${what}: key material or a hash`)
    }
    expect(bad).toEqual([])
  }, 90_000)
})
