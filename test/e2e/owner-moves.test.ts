/**
 * The owner moves. Its certificate changes (docs/protocol.md, "When the owner's certificate changes"):
 * real `svc serve` processes, an owner and a worker linked to it. The owner is restarted on the
 * same address with the operator's own certificate (its CA issued it) in place of the one it
 * generated, then with a renewal of that one while the worker is stopped: each time the worker
 * follows the change, signed with the key of the certificate before, and its runs go on; no one
 * joins again. Its address changes (a new port): the machine joined again with a new token is
 * known as the same installation, its old link removed (docs/protocol.md, "Joining again").
 */
import { execFileSync } from "node:child_process"
import { X509Certificate } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer as createNetServer } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { portBelowEphemeral, startServe, stopAllServes, svcIn, Transcript, waitFor, type ServeProcess } from "../support/serve.js"
import { svc, tempDirs } from "../support/svc.js"

const JOB = "certs:echo@1.0.0"
const transcript = new Transcript()
const temps = tempDirs()
const home = temps.make
let ownerHome: string
let workerHome: string
let owner: ServeProcess
let worker: ServeProcess

const run = (h: string, ...args: Array<string>) => svcIn(transcript, h, args)
const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256.replace(/:/g, "").toLowerCase()

let ca: string | undefined
/** The certificate the worker pins at the end of the first test. */
let renewed: { readonly cert: string; readonly key: string; readonly fingerprint: string }
/**
 * A new certificate and key for 127.0.0.1, issued by the operator's own CA (openssl here), as
 * certbot leaves them: the key, and the certificate followed by its issuer's (fullchain.pem).
 */
const issue = (name: string) => {
  const dir = home(`svc-cert-${name}-`)
  const ssl = (...args: Array<string>) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" })
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
  if (ca === undefined) {
    ca = home("svc-cert-ca-")
    execFileSync("openssl", ["req", "-x509", ...ec, "-subj", "/CN=operator CA", "-days", "365", "-keyout", "ca.key", "-out", "ca.crt"], { cwd: ca, stdio: "ignore" })
  }
  ssl("req", ...ec, "-subj", `/CN=${name}`, "-keyout", "privkey.pem", "-out", "owner.csr")
  writeFileSync(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n")
  ssl("x509", "-req", "-in", "owner.csr", "-CA", join(ca, "ca.crt"), "-CAkey", join(ca, "ca.key"), "-CAcreateserial", "-days", "90", "-extfile", "san.ext", "-out", "cert.pem")
  const cert = readFileSync(join(dir, "cert.pem"), "utf8")
  writeFileSync(join(dir, "fullchain.pem"), cert + readFileSync(join(ca, "ca.crt"), "utf8"))
  return { cert: join(dir, "fullchain.pem"), key: join(dir, "privkey.pem"), fingerprint: fingerprintOf(cert) }
}

/** The worker's one link file: its name and what it pins. */
const link = () => {
  const files = readdirSync(join(workerHome, "links"))
  expect(files).toHaveLength(1)
  return { file: files[0]!, ...(JSON.parse(readFileSync(join(workerHome, "links", files[0]!), "utf8")) as { fingerprint: string; certificate: string; url: string }) }
}

/** A run of the job submitted and waited for: it can run on the worker alone. */
const runOnWorker = async (n: number) => {
  const r = await run(ownerHome, "run", JOB, "--input", JSON.stringify({ n }), "--wait", "--json")
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
  const done = JSON.parse(r.stdout) as { state: string; result: unknown; host: string }
  expect(done).toMatchObject({ state: "succeeded", result: { n }, host: "lab" })
}

const port = (p: ServeProcess) => new URL(p.listenUrl).port

beforeAll(async () => {
  const bag = join(home("svc-cert-bag-"), "certs")
  mkdirSync(join(bag, "jobs"), { recursive: true })
  writeFileSync(
    join(bag, "bag.yaml"),
    ["name: certs", "description: One job only the worker can run", "version: 0.1.0", "jobs:", "  echo:", "    version: 1.0.0", "    runs:", "      using: node", "      main: jobs/echo.mjs", "    requires:", "      labels: [pool=lab]", ""].join("\n")
  )
  writeFileSync(join(bag, "jobs", "echo.mjs"), `let s = ""; for await (const c of process.stdin) s += c; console.log(s)\n`)
  ownerHome = home("svc-cert-owner-")
  workerHome = home("svc-cert-worker-")
  for (const h of [ownerHome, workerHome]) expect((await run(h, "bag", "install", bag)).code).toBe(0)
  // Restarted on its address: one that no other test file is handed meanwhile.
  owner = await startServe("owner", ownerHome, transcript, { listen: await portBelowEphemeral() })
  const invite = await run(ownerHome, "workers", "invite", "--name", "lab")
  expect((await run(workerHome, "workers", "join", invite.stdout.trim())).code).toBe(0)
  worker = await startServe("worker", workerHome, transcript, { env: { SVC_WORKFLOW_LABELS: "pool=lab" } })
}, 60_000)

afterAll(async () => {
  await stopAllServes()
  temps.removeAll()
}, 30_000)

describe("an owner that moves, under a linked worker", () => {
  it("a new certificate is followed: signed with the key of the one before, the worker pins the new one and its runs go on, no join again", async () => {
    await runOnWorker(1)
    const generated = fingerprintOf(readFileSync(join(ownerHome, "tls", "owner.crt"), "utf8"))
    const before = link()
    expect(before.fingerprint).toBe(generated)

    // The operator's own certificate in place of the generated one, on the same address.
    const own = issue("own")
    const listen = `127.0.0.1:${port(owner)}`
    expect((await owner.stop()).code).toBe(0)
    // A start that fails (its port taken) signs nothing: that certificate was never served.
    // Connections to it (the worker's hello, if it calls meanwhile) are ended at once: closing
    // the server waits for its connections, and one left open held the test up.
    const taken = createNetServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => taken.listen(Number(port(owner)), "127.0.0.1", resolve))
    const failed = await svc(["serve", "--listen", listen, "--tls-cert", own.cert, "--tls-key", own.key], { cwd: ownerHome, home: ownerHome })
    await new Promise((resolve) => taken.close(resolve))
    expect(failed.code).toBe(1)
    expect(existsSync(join(ownerHome, "tls", "succession.json"))).toBe(false)
    owner = await startServe("owner (own certificate)", ownerHome, transcript, { listen, args: ["--tls-cert", own.cert, "--tls-key", own.key] })
    await waitFor("the change said", async () => owner.output(), (o) => o.includes("the TLS certificate changed since the last start"), { timeoutMs: 5_000, everyMs: 100 })
    expect(owner.output()).toContain(`svc serve: TLS certificate sha256 ${own.fingerprint}`)
    expect(owner.output()).toContain(`the TLS certificate changed since the last start (sha256 ${generated} before): the change is signed with the key of the one before`)
    await runOnWorker(2)
    // Its own certificate, kept as the one served: a token of its own is refused in its home.
    const mine = await run(ownerHome, "workers", "invite")
    const self = await run(ownerHome, "workers", "join", mine.stdout.trim())
    expect({ code: self.code, stderr: self.stderr }).toMatchObject({ code: 1, stderr: expect.stringContaining(`this token is from the owner of this very $SVC_HOME (${ownerHome}; its certificate sha256 ${own.fingerprint})`) })
    // A machine joins an owner whose certificate a CA issued (every join to one failed: the
    // pinned certificate was the connection's only CA, which it cannot be).
    const joined = await run(home("svc-cert-second-"), "workers", "join", mine.stdout.trim(), "--json")
    expect(joined.code, joined.stderr).toBe(0)
    await waitFor("the worker said it", async () => worker.output(), (o) => o.includes("changed its TLS certificate"), { timeoutMs: 5_000, everyMs: 100 })
    expect(worker.output()).toContain(`changed its TLS certificate, signed with the key of the one pinned (sha256 ${generated}): sha256 ${own.fingerprint} is pinned now`)
    // The same link, pinned anew: its file, name and credential kept.
    const after = link()
    expect({ file: after.file, fingerprint: after.fingerprint, pinned: fingerprintOf(after.certificate) }).toEqual({ file: before.file, fingerprint: own.fingerprint, pinned: own.fingerprint })

    // Renewed while the worker is stopped: at its start it follows the change it missed.
    expect((await worker.stop()).code).toBe(0)
    renewed = issue("renewed")
    expect((await owner.stop()).code).toBe(0)
    owner = await startServe("owner (renewed)", ownerHome, transcript, { listen, args: ["--tls-cert", renewed.cert, "--tls-key", renewed.key] })
    worker = await startServe("worker (again)", workerHome, transcript, { env: { SVC_WORKFLOW_LABELS: "pool=lab" } })
    await runOnWorker(3)
    expect(link()).toMatchObject({ file: before.file, fingerprint: renewed.fingerprint })
    const workers = JSON.parse((await run(ownerHome, "workers", "status", "--json")).stdout) as { workers: ReadonlyArray<{ name: string }> }
    // One identity of the worker all along: it never joined again.
    expect(workers.workers.filter((w) => w.name === "lab")).toHaveLength(1)
    // Each change journaled, for the audit: which certificate before, which after, signed.
    const audit = JSON.parse((await run(ownerHome, "audit", "--json")).stdout) as { rows: ReadonlyArray<{ kind: string; actor: string; detail: string }> }
    expect(audit.rows.filter((r) => r.kind === "certificate")).toEqual([
      expect.objectContaining({ actor: "svc serve (at its start)", detail: expect.stringContaining(`another TLS certificate (sha256 ${own.fingerprint}, before ${generated}); the change is signed`) }),
      expect.objectContaining({ detail: expect.stringContaining(`another TLS certificate (sha256 ${renewed.fingerprint}, before ${own.fingerprint}); the change is signed`) })
    ])
  }, 120_000)

  it("a new certificate is not followed when the owner could not sign it (its earlier keys gone): the worker says why and keeps its pin", async () => {
    const listen = `127.0.0.1:${port(owner)}`
    expect((await owner.stop()).code).toBe(0)
    // What the owner served before, and could sign with, removed: a change no worker can follow.
    for (const f of ["served.crt", "served.key", "owner.crt", "owner.key"]) execFileSync("rm", ["-f", join(ownerHome, "tls", f)])
    const stranger = issue("stranger")
    owner = await startServe("owner (unsigned)", ownerHome, transcript, { listen, args: ["--tls-cert", stranger.cert, "--tls-key", stranger.key] })
    const status = await waitFor(
      "the worker's link saying why",
      async () => JSON.parse((await run(workerHome, "workers", "status", "--json")).stdout) as { owners: ReadonlyArray<{ status: { detail: string } | null }> },
      (s) => (s.owners[0]?.status?.detail ?? "").includes("asked for a change signed by the pinned certificate's key"),
      { timeoutMs: 20_000, everyMs: 250 }
    )
    expect(status.value.owners[0]!.status!.detail).toContain("it offered no change signed by the pinned certificate's key")
    expect(link().fingerprint).not.toBe(stranger.fingerprint)
  }, 60_000)

  it("to another address: the worker joined again with a new token replaces its identity and its link, not a second one beside it", async () => {
    const was = JSON.parse((await run(workerHome, "workers", "status", "--json")).stdout) as { owners: ReadonlyArray<{ workerId: string; url: string }> }
    expect(was.owners).toHaveLength(1)
    const oldId = was.owners[0]!.workerId
    // The certificate the worker pins, at another port.
    expect((await owner.stop()).code).toBe(0)
    owner = await startServe("owner (moved)", ownerHome, transcript, { listen: await portBelowEphemeral(), args: ["--tls-cert", renewed.cert, "--tls-key", renewed.key] })
    expect(owner.url).not.toBe(was.owners[0]!.url)
    const invite = await run(ownerHome, "workers", "invite", "--name", "lab")
    const joined = await run(workerHome, "workers", "join", invite.stdout.trim(), "--json")
    expect(joined.code, joined.stderr).toBe(0)
    expect(JSON.parse(joined.stdout)).toMatchObject({ owner: owner.url, name: "lab", replaces: oldId })
    // One link, to the new address: the running svc serve ends the old one and links the new.
    expect(link().url).toBe(owner.url)
    await waitFor("the worker linked anew", async () => worker.output(), (o) => o.includes(`linked to the owner at ${owner.url} as lab`), { timeoutMs: 15_000, everyMs: 200 })
    await runOnWorker(4)
    const rows = JSON.parse((await run(ownerHome, "workers", "status", "--json")).stdout) as { workers: ReadonlyArray<{ id: string; name: string; revoked: boolean }> }
    expect(rows.workers.filter((w) => w.name === "lab").map((w) => ({ id: w.id === oldId ? "old" : "new", revoked: w.revoked })).sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: "new", revoked: false },
      { id: "old", revoked: true }
    ])

    // Renewed while the worker is stopped, then left: svc workers leave follows the change to tell
    // the owner, and prints no log line of it (it printed the runtime's raw one).
    expect((await worker.stop()).code).toBe(0)
    expect((await owner.stop()).code).toBe(0)
    const last = issue("last")
    owner = await startServe("owner (renewed again)", ownerHome, transcript, { listen: new URL(owner.listenUrl).host, args: ["--tls-cert", last.cert, "--tls-key", last.key] })
    const left = await run(workerHome, "workers", "leave", owner.url)
    expect(left.code, left.stderr).toBe(0)
    expect(left.stderr).not.toMatch(/level=/)
    const labs = JSON.parse((await run(ownerHome, "workers", "status", "--json")).stdout).workers.filter((w: { name: string }) => w.name === "lab")
    expect(labs.map((w: { revoked: boolean }) => w.revoked)).toEqual([true, true])
  }, 90_000)
})
