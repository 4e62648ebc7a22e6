/**
 * svc serve's configuration and file permissions, as an operator meets them: bad capacity or
 * labels stop the start with a sentence; svc.yaml's services.workflows.runtime.env is read; the
 * admin socket, the TLS key and link files are private; administrative commands say when the
 * runtime is not running (exit 2) and refuse a bad scope (exit 1).
 */
import { spawn } from "node:child_process"
import Database from "better-sqlite3"
import { LABEL_RULE } from "../../src/domain/manifest/Formats.js"
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { X509Certificate } from "node:crypto"
import { connect as tlsConnect } from "node:tls"
import { createServer as createNetServer, type AddressInfo } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { generate } from "selfsigned"
import { afterAll, describe, expect, it, onTestFinished } from "vitest"
import { callRoute, ownerCa, startServe, stopAllServes, svcIn, Transcript, waitFor } from "../support/serve.js"
import { SVC_BIN, svc, tempDir } from "../support/svc.js"
import { formatJoinToken, makeCredential, parseJoinToken } from "../../src/domain/workers/Secrets.js"
import { adminCall } from "../../src/infra/http/AdminApi.js"
import { processStat } from "../../src/infra/runs/Processes.js"

const transcript = new Transcript()
afterAll(stopAllServes)

/** Runs svc serve expecting it to refuse to start: its exit code and stderr. */
const serveRefused = (home: string, env: Record<string, string> = {}, listen = "127.0.0.1:0") =>
  new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [SVC_BIN, "serve", "--listen", listen], {
      env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home, ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stderr })
    })
  })

describe("svc serve configuration", () => {
  it("refuses to start with a bad SVC_WORKFLOW_CAPACITY or label, saying which", async () => {
    const home = tempDir("svc-cfg-")
    const capacity = await serveRefused(home, { SVC_WORKFLOW_CAPACITY: "500" })
    expect(capacity.code).toBe(1)
    expect(capacity.stderr).toContain('SVC_WORKFLOW_CAPACITY must be a whole number from 1 to 100, not "500"')
    const label = await serveRefused(home, { SVC_WORKFLOW_LABELS: "gpu" })
    expect(label.code).toBe(1)
    expect(label.stderr).toContain('SVC_WORKFLOW_LABELS holds "gpu", which is not a KEY=VALUE label')
    const retained = await serveRefused(home, { SVC_WORKFLOW_RETAINED_RUNS: "0" })
    expect(retained.code).toBe(1)
    expect(retained.stderr).toContain('SVC_WORKFLOW_RETAINED_RUNS must be a whole number from 1 to 50,000, not "0"')
    const limit = await serveRefused(home, { SVC_WORKFLOW_OUTPUT_LIMIT: "16MB" })
    expect(limit.code).toBe(1)
    expect(limit.stderr).toContain(
      'SVC_WORKFLOW_OUTPUT_LIMIT must be a size from 1 KiB to 1,024 GiB, in bytes or in whole KiB, MiB or GiB (as 64MiB), not "16MB"; MB is not taken (KiB, MiB and GiB are 1,024 apart) (set in the environment)'
    )
    // Set in svc.yaml, said so; and an empty variable in the environment is unset, not the default
    // in place of the file's value (the file's bad value is what refuses the start).
    writeFileSync(join(home, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_OUTPUT_LIMIT: 4KB\n")
    const fromFile = await serveRefused(home, { SVC_WORKFLOW_OUTPUT_LIMIT: " " })
    expect(fromFile.code).toBe(1)
    expect(fromFile.stderr).toContain(`not "4KB"; KB is not taken (KiB, MiB and GiB are 1,024 apart) (set in ${join(home, "svc.yaml")}: services.workflows.runtime.env)`)
    rmSync(join(home, "svc.yaml"))
    // A home every user may write to is refused (anyone could replace its socket, journal or secrets).
    const open = tempDir("svc-cfg-open-")
    chmodSync(open, 0o777)
    const shared = await serveRefused(open)
    expect(shared.code).toBe(1)
    expect(shared.stderr).toContain(`${open} (SVC_HOME) is writable by every user (mode 0777), who could replace its admin socket, journal or secrets: chmod 700 ${open}`)
    // Sticky, as /tmp is: said with its bit.
    chmodSync(open, 0o1777)
    expect((await serveRefused(open)).stderr).toContain(`${open} (SVC_HOME) is writable by every user (mode 1777)`)
    // A misspelt setting left its default in force, silently.
    writeFileSync(join(home, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_CAPACTY: 3\n")
    const typo = await serveRefused(home)
    expect(typo.code).toBe(1)
    expect(typo.stderr).toContain(
      `${join(home, "svc.yaml")}: services.workflows.runtime.env sets SVC_WORKFLOW_CAPACTY, which svc does not know; did you mean SVC_WORKFLOW_CAPACITY? (it knows SVC_WORKFLOW_CAPACITY, SVC_WORKFLOW_LABELS, SVC_WORKFLOW_RETAINED_RUNS, SVC_WORKFLOW_OUTPUT_LIMIT)`
    )
    // From the environment, with no svc.yaml: said as the environment's, not "reading svc.yaml".
    const bare = tempDir("svc-cfg-envtypo-")
    const fromEnv = await serveRefused(bare, { SVC_WORKFLOW_CAPACTY: "3" })
    expect(fromEnv.code).toBe(1)
    expect(fromEnv.stderr).toContain("svc: reading the runtime's settings: the environment sets SVC_WORKFLOW_CAPACTY, which svc does not know; did you mean SVC_WORKFLOW_CAPACITY?")
    expect(fromEnv.stderr).not.toContain("svc.yaml")
  }, 60_000)

  it("keeps as many settled runs in memory as svc.yaml says; older ones are counted by runs list, shown from the journal, and replayed alike", async () => {
    const home = tempDir("svc-cfg-retain-")
    writeFileSync(join(home, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_RETAINED_RUNS: 2\n")
    mkdirSync(join(home, "bags-src"))
    expect((await svcIn(transcript, home, ["new", "hasher"], join(home, "bags-src"))).code).toBe(0)
    expect((await svcIn(transcript, home, ["bag", "install", join(home, "bags-src", "hasher")])).code).toBe(0)
    const owner = await startServe("owner", home, transcript)
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const r = await svcIn(transcript, home, ["run", "hasher:checksum@1.0.0", "--input", JSON.stringify({ text: `t${i}` }), "--wait", "--json"])
      expect(r.code, r.stderr).toBe(0)
      const run = JSON.parse(r.stdout) as { id: string; state: string }
      expect(run.state).toBe("succeeded")
      ids.push(run.id)
    }
    // Generations of 2: the fifth run to settle forgot the first two.
    const listed = JSON.parse((await svcIn(transcript, home, ["runs", "list", "--json"])).stdout) as { runs: Array<{ id: string }>; total: number; forgotten: number }
    expect(listed).toMatchObject({ total: 3, forgotten: 2 })
    expect(listed.runs.map((r) => r.id)).toEqual(ids.slice(2))
    const text = await svcIn(transcript, home, ["runs", "list"])
    expect(text.stdout).toContain("2 older finished runs are not listed; svc runs show RUN reads any of them from the journal")
    // Read from the journal; its output files went with it.
    const first = JSON.parse((await svcIn(transcript, home, ["runs", "show", ids[0]!, "--json"])).stdout) as unknown
    expect(first).toMatchObject({ id: ids[0], state: "succeeded", output: { removed: true } })
    // Replay folds keeping 2 as well: the running owner matches.
    const live = JSON.parse((await svcIn(transcript, home, ["journal", "replay", "--json"])).stdout)
    expect(live).toMatchObject({ retained: 2, owner: { compared: true, matches: true }, divergences: [] })
    expect((await owner.stop()).code).toBe(0)
    // Its workers are not known while it is stopped: not an empty fleet, and no advice to join an owner.
    const stoppedStatus = await svcIn(transcript, home, ["workers", "status"])
    expect({ code: stoppedStatus.code, stdout: stoppedStatus.stdout }).toEqual({ code: 2, stdout: "" })
    expect(stoppedStatus.stderr).toBe(
      `svc: svc serve is not running for ${home} (no ${home}/admin.sock): start it with svc serve; its workers and invites are shown when it runs (svc audit lists from the journal who was invited, joined and revoked meanwhile); this machine works for no owner\n`
    )
    const stoppedDoc = await svcIn(transcript, home, ["workers", "status", "--json"])
    expect(JSON.parse(stoppedDoc.stdout)).toEqual({ runtime: "not running", workers: null, invites: null, owners: [], unreadableLinks: [], pendingJoins: [] })
    // Stopped (its clean stop wrote a checkpoint): replay reads the setting from svc.yaml.
    const stopped = JSON.parse((await svcIn(transcript, home, ["journal", "replay", "--json"])).stdout)
    expect(stopped).toMatchObject({ retained: 2, checkpoint: { matches: true }, divergences: [] })
    // The setting changed while the owner is stopped: the checkpoint is not compared, and replay says why.
    writeFileSync(join(home, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_RETAINED_RUNS: 3\n")
    const changed = await svcIn(transcript, home, ["journal", "replay"])
    expect(changed.code, changed.stdout + changed.stderr).toBe(0)
    expect(changed.stdout).toMatch(/not compared \(written while the owner kept 2 settled runs per generation, this replay kept 3 \(from svc\.yaml\): if the owner was started with SVC_WORKFLOW_RETAINED_RUNS=2, set it for this command too/)
    // Replay reads its own environment first, as svc serve does: set there, the checkpoint is compared
    // (an owner started with the variable in its environment only was said to have "changed" it).
    const fromEnv = await svc(["journal", "replay", "--json"], { cwd: home, home, env: { SVC_WORKFLOW_RETAINED_RUNS: "2" } })
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ retained: 2, checkpoint: { matches: true }, divergences: [] })
    rmSync(join(home, "svc.yaml"))
    const unset = await svcIn(transcript, home, ["journal", "replay"])
    expect(unset.stdout).toContain("this replay kept 5000 (the default: set in neither this command's environment nor svc.yaml): if the owner was started with SVC_WORKFLOW_RETAINED_RUNS=2, set it for this command too (SVC_WORKFLOW_RETAINED_RUNS=2 svc journal replay) or in svc.yaml")
    // Started again keeping more: the runs forgotten before are in memory again, their output
    // files gone; said so, not shown as runs that printed nothing.
    writeFileSync(join(home, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_RETAINED_RUNS: 3\n")
    const again = await startServe("owner-again", home, transcript)
    const relisted = JSON.parse((await svcIn(transcript, home, ["runs", "list", "--json"])).stdout) as { runs: Array<{ id: string }>; forgotten: number }
    expect(relisted).toMatchObject({ forgotten: 0 })
    expect(relisted.runs.map((r) => r.id)).toEqual(ids)
    const back = JSON.parse((await svcIn(transcript, home, ["runs", "show", ids[0]!, "--json"])).stdout) as unknown
    expect(back).toMatchObject({ id: ids[0], state: "succeeded", output: { removed: true, stdout: "", files: null } })
    expect((await svcIn(transcript, home, ["runs", "show", ids[1]!])).stdout).toContain("output: removed (its output files were removed when the owner forgot the run from memory)\n")
    const kept = JSON.parse((await svcIn(transcript, home, ["runs", "show", ids[4]!, "--json"])).stdout) as { output: { removed: boolean; stdout: string } }
    expect(kept.output.removed).toBe(false)
    expect(kept.output.stdout).toContain('"length"')
    expect(readFileSync(join(home, "runs", "removed-output"), "utf8").split("\n").sort()).toEqual(["", ids[0], ids[1]].sort())
    expect((await again.stop()).code).toBe(0)
  }, 120_000)

  it("a port another program holds is refused, saying what to do (docs audit: it said only 'already in use')", async () => {
    const squatter = createNetServer()
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve))
    onTestFinished(() => void squatter.close())
    const port = (squatter.address() as AddressInfo).port
    const serve = await serveRefused(tempDir("svc-cfg-port-"), {}, `127.0.0.1:${port}`)
    expect({ code: serve.code, stderr: serve.stderr }).toEqual({
      code: 1,
      stderr: `svc: 127.0.0.1:${port} is already in use (another svc serve, or another program): stop it, or listen elsewhere with --listen HOST:PORT\n`
    })
  })

  it("reads capacity and labels from svc.yaml under services.workflows.runtime.env", async () => {
    const owner = await startServe("owner", tempDir("svc-cfg-owner-"), transcript)
    // A fresh installation: no workers, no owners served; both ways out are named.
    expect((await svcIn(transcript, owner.home, ["workers", "status"])).stdout).toBe(
      "workers: none linked, and this machine works for no owner; invite a worker with: svc workers invite (or link this machine to an owner: svc workers join TOKEN)\n"
    )
    const workerHome = tempDir("svc-cfg-worker-")
    writeFileSync(join(workerHome, "svc.yaml"), "services:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_CAPACITY: 7\n        SVC_WORKFLOW_LABELS: gpu=true,zone=lab\n")
    mkdirSync(join(workerHome, "bags-src"))
    expect((await svcIn(transcript, workerHome, ["new", "hasher"], join(workerHome, "bags-src"))).code).toBe(0)
    expect((await svcIn(transcript, workerHome, ["bag", "install", join(workerHome, "bags-src", "hasher")])).code).toBe(0)
    const invited = await svcIn(transcript, owner.home, ["workers", "invite", "--name", "cfg"])
    const token = invited.stdout.trim()
    // Listening on loopback: the invite says a worker elsewhere could not reach it (and never repeats the token).
    expect(invited.stderr).toContain(`note: the token sends the worker to ${owner.url}, which only this machine can reach.`)
    // With the port it listens on (a test owner's is not the default 7443).
    const port = new URL(owner.url).port
    expect(invited.stderr).toContain(`--listen 0.0.0.0:${port} --public-url https://THIS-HOST:${port}`)
    expect(invited.stderr).not.toContain(token)
    expect((await svcIn(transcript, workerHome, ["workers", "join", token])).code).toBe(0)
    await startServe("worker", workerHome, transcript)
    const seen = await waitFor(
      "the worker Ready",
      async () => JSON.parse((await svcIn(transcript, owner.home, ["workers", "status", "--json"])).stdout).workers[0],
      (w: { state: string } | undefined) => w?.state === "Ready",
      { timeoutMs: 10_000, everyMs: 250 }
    )
    expect(seen.value).toMatchObject({ capacity: 7, labels: expect.arrayContaining(["gpu=true", "zone=lab", `os=${process.platform}`, `arch=${process.arch}`]) })

    // Private files: the admin socket, the TLS key, the link file.
    expect(statSync(join(owner.home, "admin.sock")).mode & 0o777).toBe(0o600)
    expect(statSync(join(owner.home, "tls", "owner.key")).mode & 0o777).toBe(0o600)
    expect(statSync(join(workerHome, "links")).mode & 0o777).toBe(0o700)
  }, 60_000)

  it("the admin API refuses a body its route does not take, naming the field, and records nothing (a bad invite body made the widest invite)", async () => {
    const home = tempDir("svc-cfg-admin-")
    const owner = await startServe("owner", home, transcript)
    const headOf = async () => (JSON.parse((await svc(["journal", "tail", "-n", "1", "--json"], { cwd: home, home })).stdout).events[0]?.sequence ?? 0) as number
    expect((await svc(["workers", "status", "--json"], { cwd: home, home })).code).toBe(0)
    const before = await headOf()
    const bad: ReadonlyArray<readonly [string, unknown, RegExp]> = [
      ["/invite", { name: 123, scope: "x", expires: [1] }, /^the body of POST \/invite is not what it takes: /],
      ["/invite", { scope: "hasher:checksum@1.0.0" }, /scope: Expected ReadonlyArray<string>/],
      ["/invite", { expires: "1d" }, /expires: is unexpected/],
      ["/invite", { expiresInMs: "soon" }, /expiresInMs/],
      ["/revoke", {}, /worker: is missing/],
      ["/rotate", { worker: 5 }, /worker: Expected string/],
      ["/runs/submit", { address: "a:b@1.0.0", prefer: "gpu=true" }, /prefer/],
      ["/runs/list", { limit: -1 }, /limit/],
      ["/runs/stop", { run: "r1", force: true }, /force: is unexpected/]
    ]
    for (const [path, body, message] of bad) {
      const answer = await adminCall(home, "POST", path, body)
      expect({ path, status: answer.status }).toEqual({ path, status: 400 })
      expect((answer.body as { code: string }).code).toBe("bad-request")
      expect((answer.body as { message: string }).message).toMatch(message)
    }
    expect(await headOf()).toBe(before)
    // What the CLI sends still works.
    expect((await svc(["workers", "invite", "--name", "lab-1", "--expires", "1h"], { cwd: home, home })).code).toBe(0)
    expect(await headOf()).toBe(before + 1)
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)

  it("a machine that joins an owner again keeps the name it had there unless --name says otherwise", async () => {
    const home = tempDir("svc-cfg-rejoin-")
    const workerHome = tempDir("svc-cfg-rejoin-w-")
    const owner = await startServe("owner", home, transcript)
    const join = async (...extra: Array<string>) => {
      const invited = await svc(["workers", "invite"], { cwd: home, home })
      expect(invited.code, invited.stderr).toBe(0)
      const joined = await svc(["workers", "join", invited.stdout.trim(), "--json", ...extra], { cwd: workerHome, home: workerHome })
      expect(joined.code, joined.stderr).toBe(0)
      return JSON.parse(joined.stdout) as { name: string; workerId: string; replaces: string | null }
    }
    const first = await join("--name", "spare-1")
    expect(first.name).toBe("spare-1")
    // Without --name it took the host name: the operator's `svc workers rotate spare-1` found no worker.
    const again = await join()
    expect(again).toMatchObject({ name: "spare-1", replaces: first.workerId })
    expect((await join("--name", "spare-2")).name).toBe("spare-2")
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)

  it("an owner logging at debug writes no secret an operator mistyped or a caller sent, and its admin answers cut them too", async () => {
    const home = tempDir("svc-cfg-debug-")
    const owner = await startServe("owner", home, transcript, { args: ["--log-level", "debug"] })
    const credential = makeCredential(new Uint8Array(30).fill(7))
    const secret = credential.slice("svc_wk_".length)
    const rotated = await svc(["workers", "rotate", `x${credential}`], { cwd: home, home })
    expect({ code: rotated.code, stderr: rotated.stderr }).toEqual({ code: 1, stderr: 'svc: no worker "xsvc_wk_…" is linked to this owner\n' })
    // The admin API itself, as any local client of the socket reads it.
    const submitted = await adminCall(home, "POST", "/runs/submit", { address: credential })
    expect(submitted.status).toBe(409)
    expect(JSON.stringify(submitted.body)).not.toContain(secret)
    // A caller on the worker route with no credential: refused, and not a DEBUG entry per call.
    const before = owner.output().length
    const raw = await callRoute(owner.listenUrl, ownerCa(home), { bearer: credential, body: JSON.stringify({ kind: "heartbeat", fence: 1, running: [] }) })
    expect(raw.status).toBe(401)
    await new Promise((r) => setTimeout(r, 200))
    expect(owner.output().slice(before)).not.toContain("Fiber terminated")
    expect(owner.output()).not.toContain(secret)
    expect((await owner.stop()).code).toBe(0)
    expect(owner.output()).not.toContain(secret)
  }, 60_000)

  it("a caller on the worker route without a credential is answered, and its connection closed: it cannot hold connections by calling again", async () => {
    const home = tempDir("svc-cfg-close-")
    const owner = await startServe("owner", home, transcript)
    const port = Number(new URL(owner.listenUrl).port)
    /** Two requests written at once on one connection: what comes back before the server closes it (5 s at most). */
    const pipelined = (request: string) =>
      new Promise<{ readonly text: string; readonly closed: boolean }>((resolve) => {
        const socket = tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => socket.write(request + request))
        let text = ""
        socket.setEncoding("utf8").on("data", (d: string) => (text += d))
        const timer = setTimeout(() => {
          socket.destroy()
          resolve({ text, closed: false })
        }, 5_000)
        socket.on("close", () => {
          clearTimeout(timer)
          resolve({ text, closed: true })
        })
        socket.on("error", () => undefined)
      })
    const unknown = makeCredential(new Uint8Array(30).fill(5))
    const body = JSON.stringify({ kind: "heartbeat", fence: 1, running: [] })
    for (const [what, request, status] of [
      ["another path", "GET / HTTP/1.1\r\nHost: owner\r\n\r\n", "404"],
      ["an unknown credential", `POST /api/worker HTTP/1.1\r\nHost: owner\r\nAuthorization: Bearer ${unknown}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, "401"],
      ["no JSON", "POST /api/worker HTTP/1.1\r\nHost: owner\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi", "415"]
    ] as const) {
      const { text, closed } = await pipelined(request)
      expect({ what, answers: text.match(/^HTTP\/1\.1 \d+/gm), closed }).toEqual({ what, answers: [`HTTP/1.1 ${status}`], closed: true })
      expect(text).toMatch(/\r\nConnection: close\r\n/i)
    }
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)

  it.skipIf(process.getuid?.() !== 0)("a home another user owns is refused by svc serve and svc workers join, and an admin socket another user made is not called (needs root, to chown)", async () => {
    const home = tempDir("svc-cfg-foreign-")
    chownSync(home, 65534, 65534)
    const serve = await serveRefused(home)
    const owned = `${home} (SVC_HOME) belongs to uid 65534, not to this user (uid 0), who could replace its admin socket, journal or secrets: run svc as the user it belongs to, or use a home of your own`
    expect({ code: serve.code, stderr: serve.stderr }).toEqual({ code: 1, stderr: `svc: ${owned}\n` })
    const token = formatJoinToken({ url: "https://127.0.0.1:9", fingerprint: "a".repeat(64), inviteId: "i1", secret: "s".repeat(40) })
    const joined = await svc(["workers", "join", token], { cwd: home, home })
    expect({ code: joined.code, stderr: joined.stderr }).toEqual({ code: 1, stderr: `svc: ${owned}; nothing was sent to the owner, so this try did not spend the token\n` })
    // A socket at the home's admin.sock that another user made: nothing is sent to it.
    const mine = tempDir("svc-cfg-foreign-sock-")
    let connections = 0
    const squatter = createNetServer(() => void connections++)
    await new Promise<void>((resolve) => squatter.listen(join(mine, "admin.sock"), resolve))
    try {
      chownSync(join(mine, "admin.sock"), 65534, 65534)
      const listed = await svc(["runs", "list"], { cwd: mine, home: mine })
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({
        code: 2,
        stderr: `svc: ${join(mine, "admin.sock")} belongs to uid 65534, not to this user (uid 0): it is not this user's svc serve, and nothing was sent to it; run svc as the user that runs svc serve for this $SVC_HOME\n`
      })
      expect(connections).toBe(0)
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()))
    }
  }, 60_000)

  it("svc workers leave with its svc serve stopped (SIGSTOP) gives up waiting on it and tells the owner, whose slots stay held: it waited for ever", async () => {
    const home = tempDir("svc-cfg-leave-stopped-")
    const workerHome = tempDir("svc-cfg-leave-stopped-w-")
    const owner = await startServe("owner", home, transcript)
    const token = (await svc(["workers", "invite", "--name", "paused"], { cwd: home, home })).stdout.trim()
    expect((await svc(["workers", "join", token], { cwd: workerHome, home: workerHome })).code).toBe(0)
    const worker = await startServe("worker", workerHome, transcript)
    await waitFor("the worker linked", async () => worker.output(), (o) => o.includes("linked to the owner"), { timeoutMs: 15_000, everyMs: 200 })
    process.kill(worker.pid, "SIGSTOP")
    try {
      const started = Date.now()
      const left = await svc(["workers", "leave", "paused"], { cwd: workerHome, home: workerHome })
      expect(left.code, left.stderr).toBe(0)
      expect(Date.now() - started).toBeLessThan(25_000)
      expect(left.stderr).toContain("the owner was told: it lists paused as revoked (it left)")
      expect(left.stderr).toContain("since no svc serve running here said it had stopped them")
    } finally {
      process.kill(worker.pid, "SIGCONT")
    }
    expect((await worker.stop(15_000)).code).toBe(0)
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)

  it("a runtime whose home is deleted under it says so and stops, exit 1: it journaled on into unlinked files", async () => {
    const home = join(tempDir("svc-cfg-home-gone-"), "home")
    mkdirSync(home, { mode: 0o700 })
    const owner = await startServe("owner", home, transcript)
    rmSync(home, { recursive: true, force: true })
    await waitFor("the owner stopped", async () => owner.exited(), (exited) => exited, { timeoutMs: 30_000, everyMs: 200 })
    expect((await owner.stop()).code).toBe(1)
    expect(owner.output()).toMatch(/ERROR \S+\/home\/svc\.sqlite is no longer there \(removed, or \$SVC_HOME moved\) while svc serve ran for \S+\/home: it stops/)
    // No last checkpoint said written: it would go into the file the home no longer holds.
    expect(owner.output()).toContain("INFO no last checkpoint: the journal open is no longer the one in its home (it was removed or replaced)")
    expect(owner.output()).not.toContain("checkpoint at sequence")
  }, 60_000)

  it("a runtime whose home was deleted leaves alone the admin socket of one started since on the same path (closing its own would remove it)", async () => {
    const home = join(tempDir("svc-cfg-home-again-"), "home")
    mkdirSync(home, { mode: 0o700 })
    const first = await startServe("first", home, transcript)
    rmSync(home, { recursive: true, force: true })
    mkdirSync(home, { mode: 0o700 })
    const second = await startServe("second", home, transcript)
    await waitFor("the first owner stopped", async () => first.exited(), (exited) => exited, { timeoutMs: 30_000, everyMs: 200 })
    expect((await first.stop()).code).toBe(1)
    const listed = await svc(["runs", "list"], { cwd: home, home })
    expect(listed.code, listed.stderr).toBe(0)
    // Nor the new runtime's lock journal (closing its own lock removed the file of that name).
    expect(existsSync(join(home, "serve.lock-journal"))).toBe(true)
    expect((await second.stop()).code).toBe(0)
  }, 60_000)

  it("a machine cannot join its own owner: refused before the token is spent, which another machine then redeems (from stdin)", async () => {
    const home = tempDir("svc-cfg-self-")
    const workerHome = tempDir("svc-cfg-self-w-")
    const owner = await startServe("owner", home, transcript)
    const token = (await svc(["workers", "invite"], { cwd: home, home })).stdout.trim()
    const self = await svc(["workers", "join", token], { cwd: home, home })
    const fingerprint = /TLS certificate sha256 ([0-9a-f]{64})/.exec(owner.output())![1]
    expect({ code: self.code, stdout: self.stdout, stderr: self.stderr }).toEqual({
      code: 1,
      stdout: "",
      stderr: `svc: this token is from the owner of this very $SVC_HOME (${home}; its certificate sha256 ${fingerprint}): an owner runs its own work, it does not join itself; redeem it on another machine, or with another SVC_HOME (nothing was sent, so this try did not spend the token)\n`
    })
    expect(existsSync(join(home, "links"))).toBe(false)
    // Given on stdin (`-`), where other local users do not see it as they see a command line.
    const empty = await svc(["workers", "join", "-"], { cwd: workerHome, home: workerHome, input: "\n" })
    expect({ code: empty.code, stderr: empty.stderr }).toEqual({
      code: 2,
      stderr: "svc workers join: - reads the join token from stdin, and stdin gave none: paste it, then Ctrl-D, or svc workers join - < FILE (svc workers join --help)\n"
    })
    const joined = await svc(["workers", "join", "-", "--name", "from-stdin"], { cwd: workerHome, home: workerHome, input: `${token}\n` })
    expect(joined.code, joined.stderr).toBe(0)
    expect(joined.stdout).toContain("as from-stdin")
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)

  it("administrative commands say the runtime is not running (exit 2), and refuse a bad --scope, --expires or empty value as usage (exit 2)", async () => {
    const home = tempDir("svc-cfg-none-")
    for (const args of [["workers", "invite"], ["workers", "rotate", "x"], ["workers", "revoke", "x"]]) {
      const r = await svc(args, { cwd: home, home })
      expect(r.code).toBe(2)
      expect(r.stderr).toMatch(/svc serve is not running for .*: start it with svc serve/)
    }
    // Usage problems in svc's words, naming the command, the word and where the usage is.
    const option = await svc(["run", "--wat"], { cwd: home, home })
    expect({ code: option.code, stderr: option.stderr }).toEqual({
      code: 2,
      stderr: "svc run: unknown option --wat; its options: --input VALUE, --prefer VALUE, --wait, --idempotency-key VALUE, --json (svc run --help)\n"
    })
    // A malformed address or preference is a usage error too (it was the owner's refusal, exit 1).
    const address = await svc(["run", "tb:ok"], { cwd: home, home })
    expect({ code: address.code, stderr: address.stderr }).toEqual({ code: 2, stderr: 'svc run: "tb:ok" is not a job address: use BAG:JOB@VERSION, such as hasher:checksum@1.0.0 (svc run --help)\n' })
    const preference = await svc(["run", "a:b@1.0.0", "--prefer", "nokv"], { cwd: home, home })
    expect({ code: preference.code, stderr: preference.stderr }).toEqual({ code: 2, stderr: `svc run: --prefer takes KEY=VALUE labels; "nokv" is not ${LABEL_RULE} (svc run --help)\n` })
    // An input too deep to send is refused before anything is asked of the owner.
    const deep = await svc(["run", "a:b@1.0.0", "--input", "[".repeat(600) + "]".repeat(600)], { cwd: home, home })
    expect({ code: deep.code, stderr: deep.stderr }).toEqual({
      code: 2,
      stderr: "svc run: --input nests more than 512 levels deep (arrays and objects within each other); at most 512 are taken (svc run --help)\n"
    })
    // A key given twice (the last would win without a word; the worker route refuses it too); JSON that
    // does not parse quoted without a secret it holds nor a control character.
    const twice = await svc(["run", "a:b@1.0.0", "--input", '{"secs":1,"secs":2}'], { cwd: home, home })
    expect({ code: twice.code, stderr: twice.stderr }).toEqual({ code: 2, stderr: "svc run: --input names secs twice: a key may appear once in an object (svc run --help)\n" })
    const broken = await svc(["run", "a:b@1.0.0", "--input", `{"k":"svc_wk_${"Q".repeat(36)}" \u0001}`], { cwd: home, home })
    expect(broken.code).toBe(2)
    expect(broken.stderr).toMatch(/^svc run: --input is not JSON: /)
    expect(broken.stderr).not.toContain("QQQQ")
    expect(broken.stderr).not.toContain("\u0001")
    // An input holding a credential is refused before it is sent (the journal keeps an input for ever), and not repeated.
    const secretInput = await svc(["run", "a:b@1.0.0", "--input", `{"k":"svc_jt_${"b".repeat(40)}"}`], { cwd: home, home })
    expect({ code: secretInput.code, stderr: secretInput.stderr }).toEqual({
      code: 2,
      stderr: 'svc run: --input (at k) holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…): refused, so that no secret is recorded or shown; a job takes a secret from $SVC_HOME/secrets on the host that runs it (docs/executors.md, "Secrets") (svc run --help)\n'
    })
    // A public URL with a user and password would go into every token and the log: refused, and not repeated.
    const secretUrl = await svc(["serve", "--listen", "127.0.0.1:0", "--public-url", "https://user:pw-XYZ@owner.lan:7443"], { cwd: home, home })
    expect({ code: secretUrl.code, stderr: secretUrl.stderr }).toEqual({
      code: 2,
      stderr: "svc serve: --public-url takes https://HOST[:PORT] (no user or password: workers authenticate with their credential) (svc serve --help)\n"
    })
    const noValue = await svc(["workers", "invite", "--scope"], { cwd: home, home })
    expect({ code: noValue.code, stderr: noValue.stderr }).toEqual({ code: 2, stderr: "svc workers invite: --scope needs a value (text) (svc workers invite --help)\n" })
    const subcommand = await svc(["workers", "frob"], { cwd: home, home })
    expect({ code: subcommand.code, stderr: subcommand.stderr }).toEqual({
      code: 2,
      stderr: "svc workers: \"frob\" is not a command; its commands: invite, join, rotate, revoke, release, status, leave (svc workers --help)\n"
    })
    // A secret typed where a word belongs is never repeated: not in a usage problem, not by leave.
    const token = formatJoinToken({ url: "https://owner.lan:7443", fingerprint: "ab".repeat(32), inviteId: "iTEST", secret: "s3cr3t".repeat(7) })
    const pasted = await svc(["workers", token], { cwd: home, home })
    expect({ code: pasted.code, stderr: pasted.stderr }).toEqual({
      code: 2,
      stderr: "svc workers: \"svc_jt_…\" is not a command; its commands: invite, join, rotate, revoke, release, status, leave (svc workers --help)\n"
    })
    const leaving = await svc(["workers", "leave", token], { cwd: home, home })
    expect({ code: leaving.code, stderr: leaving.stderr }).toEqual({
      code: 2,
      stderr: "svc workers leave: that is a join token, not an owner; it names the owner at https://owner.lan:7443: svc workers leave https://owner.lan:7443 (svc workers leave --help)\n"
    })
    const credential = makeCredential(new Uint8Array(30).fill(9))
    const leavingByCredential = await svc(["workers", "leave", credential], { cwd: home, home })
    expect(leavingByCredential.stderr).toBe("svc workers leave: that is a credential (svc_wk_…), not an owner: name the owner by its URL, or this machine's worker name or id there (svc workers status lists them) (svc workers leave --help)\n")
    for (const r of [pasted, leaving, leavingByCredential]) expect(r.stderr).not.toMatch(/svc_(jt|wk)_[A-Za-z0-9]/)
    // A relative SVC_HOME would name another home in each directory: refused before anything runs.
    const relative = await svc(["workers", "status"], { cwd: home, home, env: { SVC_HOME: "relative-home" } })
    expect({ code: relative.code, stderr: relative.stderr }).toEqual({
      code: 2,
      stderr: `svc: SVC_HOME must be an absolute path, not "relative-home": a relative one names another home in each directory svc runs from (unset it for ${join(home, ".svc")})\n`
    })
    expect(existsSync(join(home, "relative-home"))).toBe(false)
    // A file is no home: said once, the same for every command (bag list said "no bags installed").
    const file = join(home, "a-file")
    writeFileSync(file, "{}")
    for (const args of [["bag", "list"], ["runs", "list"], ["journal", "tail"], ["serve"]]) {
      const r = await svc(args, { cwd: home, home, env: { SVC_HOME: file } })
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 2, stderr: `svc: SVC_HOME is ${file}, which is a file, not a directory: point it at a directory (svc makes it when missing)\n` })
    }
    const shown = await svc(["runs", "show", "r1"], { cwd: home, home })
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({
      code: 2,
      stderr: `svc: svc serve is not running for ${home} (no ${home}/admin.sock): start it with svc serve (svc journal history r1 reads the run from the journal meanwhile)\n`
    })
    const listed = await svc(["runs", "list"], { cwd: home, home })
    expect(listed.stderr).toBe(`svc: svc serve is not running for ${home} (no ${home}/admin.sock): start it with svc serve (svc journal tail reads the journal meanwhile)\n`)
    const negative = await svc(["journal", "tail", "-n", "-1"], { cwd: home, home })
    expect({ code: negative.code, stderr: negative.stderr }).toEqual({ code: 2, stderr: "svc journal tail: -n (--lines) takes how many of the last events to show, 0 or more, not -1 (svc journal tail --help)\n" })
    const scope = await svc(["workers", "invite", "--scope", "hasher:checksum"], { cwd: home, home })
    expect(scope.code).toBe(2)
    expect(scope.stderr).toContain('--scope names versioned jobs as BAG:JOB@VERSION (such as hasher:checksum@1.0.0); "hasher:checksum" is not')
    const expiry = await svc(["workers", "invite", "--expires", "soon"], { cwd: home, home })
    expect(expiry.code).toBe(2)
    expect(expiry.stderr).toBe('svc workers invite: --expires takes a duration such as 30m, 12h or 7d (or seconds: 90), not "soon" (svc workers invite --help)\n')
    // `--scope "$SCOPE"` with SCOPE unset: not an unscoped invite (every job), a usage error.
    const empty = await svc(["workers", "invite", "--scope", ""], { cwd: home, home })
    expect(empty.code).toBe(2)
    expect(empty.stderr).toBe("svc workers invite: --scope was given an empty value (an unset shell variable?): give it one, or leave --scope out (svc workers invite --help)\n")
  })

  it("a join that cannot reach a loopback owner says what the address means, as the invite did", async () => {
    const owner = await startServe("owner for a join", tempDir("svc-cfg-lo-"), transcript)
    const token = (await svcIn(transcript, owner.home, ["workers", "invite", "--name", "far"])).stdout.trim()
    expect((await owner.stop()).code).toBe(0)
    const workerHome = tempDir("svc-cfg-far-")
    const joined = await svc(["workers", "join", token], { cwd: workerHome, home: workerHome })
    expect(joined.code).toBe(2)
    expect(joined.stderr).toContain(`svc: cannot reach the owner: `)
    expect(joined.stderr).toContain(`the token names ${owner.url}, a loopback address: on the owner's own machine, is its svc serve running? From another machine it cannot be reached`)
    expect(joined.stderr).not.toContain(token)
    expect(existsSync(join(workerHome, "links"))).toBe(false)
  }, 30_000)

  it("refuses a home whose admin socket path is longer than the system takes, opening nothing; a short symbolic link to it serves", async () => {
    // Node would not refuse the path but cut it short: the runtime would listen elsewhere.
    const base = tempDir("svc-cfg-long-")
    const home = join(base, "h".repeat(120))
    mkdirSync(home)
    const refused = await serveRefused(home)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/the admin socket .*\/admin\.sock would be \d+ bytes long, and a Unix socket path is at most 10[37] bytes here: set SVC_HOME to a shorter path/)
    expect(readdirSync(home)).toEqual([])
    expect(readdirSync(base)).toEqual(["h".repeat(120)])
    const status = await svc(["workers", "invite"], { cwd: home, home })
    expect(status.code).toBe(2)
    expect(status.stderr).toContain("would be")
    // The remedy it names.
    const link = join(base, "l")
    symlinkSync(home, link)
    const p = await startServe("long home by a link", link, transcript)
    const invited = await svc(["workers", "invite", "--name", "lab-1"], { cwd: link, home: link })
    expect(invited.code, invited.stderr).toBe(0)
    expect(readdirSync(home)).toContain("admin.sock")
    expect(await p.stop()).toMatchObject({ code: 0 })
  }, 30_000)
})

describe("a worker's crash", () => {
  it("its svc serve killed and started again at once resumes its session: the owner audits no takeover", async () => {
    const ownerHome = tempDir("svc-cfg-crash-owner-")
    const workerHome = tempDir("svc-cfg-crash-worker-")
    const owner = await startServe("owner", ownerHome, transcript)
    const token = (await svcIn(transcript, ownerHome, ["workers", "invite", "--name", "lab-1"])).stdout.trim()
    expect((await svcIn(transcript, workerHome, ["workers", "join", token])).code).toBe(0)
    type Row = { name: string; state: string }
    const ready = () =>
      waitFor("lab-1 linked", async () => JSON.parse((await svcIn(transcript, ownerHome, ["workers", "status", "--json"])).stdout).workers as Array<Row>, (w) => w.some((r) => r.name === "lab-1" && r.state !== "Offline"), {
        timeoutMs: 15_000,
        everyMs: 200
      })
    const first = await startServe("worker", workerHome, transcript)
    await ready()
    process.kill(first.pid, "SIGKILL")
    await first.stop()
    // A supervisor starts it again at once: well within the 15 s its session stays live.
    const again = await startServe("worker again", workerHome, transcript)
    await waitFor("the new process to link", async () => again.output(), (o) => o.includes("linked to the owner"), { timeoutMs: 15_000, everyMs: 200 })
    await ready()
    const rows = JSON.parse((await svcIn(transcript, ownerHome, ["audit", "--json"])).stdout).rows as Array<{ kind: string }>
    expect(rows.map((r) => r.kind)).not.toContain("takeover")
    expect(owner.output()).not.toContain("takeover")
    expect((await again.stop()).code).toBe(0)
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("svc run --wait", () => {
  it("Ctrl-C (SIGTERM, SIGHUP too) stops the waiting at once, not the run, and says which run goes on (a run placed at once had not said its id); --json prints the run as last seen", async () => {
    const home = tempDir("svc-cfg-ctrlc-")
    const bag = join(home, "bags-src", "slow")
    mkdirSync(bag, { recursive: true })
    writeFileSync(
      join(bag, "bag.yaml"),
      "name: slow\ndescription: a slow job\nversion: 0.1.0\njobs:\n  nap:\n    description: naps a minute\n    version: 1.0.0\n    runs:\n      using: process\n      command: [sleep, \"60\"]\n"
    )
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const owner = await startServe("owner", home, transcript)
    const waiter = spawn(process.execPath, [SVC_BIN, "run", "slow:nap@1.0.0", "--wait"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home } })
    let said = ""
    waiter.stderr.setEncoding("utf8").on("data", (d: string) => (said += d))
    const exited = new Promise<number | null>((resolve) => waiter.on("close", resolve))
    const running = await waitFor("the run to be running", async () => JSON.parse((await svcIn(transcript, home, ["runs", "list", "--json"])).stdout).runs, (runs: ReadonlyArray<{ id: string; state: string }>) => runs[0]?.state === "running", { timeoutMs: 10_000, everyMs: 100 })
    const runId = running.value[0]!.id
    // Placed at once on the owner: nothing said yet.
    expect(said).toBe("")
    const pressedAt = Date.now()
    waiter.kill("SIGINT")
    expect(await exited).toBe(130)
    // At once: not when the owner answers the wait it was in (up to 25 s), which held the process.
    expect(Date.now() - pressedAt).toBeLessThan(10_000)
    expect(said).toBe(`stopped waiting for run ${runId}; it goes on: svc runs show ${runId} follows it, svc runs stop ${runId} stops it\n`)
    expect(JSON.parse((await svcIn(transcript, home, ["runs", "show", runId, "--json"])).stdout).state).toBe("running")
    expect((await svcIn(transcript, home, ["runs", "stop", runId])).code).toBe(0)

    // A script's wait ended by `timeout` (SIGTERM) or a closed terminal (SIGHUP): with --json, the
    // run as last seen on stdout (its id: a retry need not submit it again), exit 128 + the signal.
    for (const [signal, code] of [["SIGTERM", 143], ["SIGHUP", 129]] as const) {
      const scripted = spawn(process.execPath, [SVC_BIN, "run", "slow:nap@1.0.0", "--wait", "--json"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home } })
      let out = ""
      let err = ""
      scripted.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
      scripted.stderr.setEncoding("utf8").on("data", (d: string) => (err += d))
      const closed = new Promise<number | null>((resolve) => scripted.on("close", resolve))
      const busy = await waitFor("a run to be running", async () => JSON.parse((await svcIn(transcript, home, ["runs", "list", "--json", "--state", "running"])).stdout).runs, (runs: ReadonlyArray<{ id: string }>) => runs.length === 1, { timeoutMs: 10_000, everyMs: 100 })
      const id = busy.value[0]!.id
      scripted.kill(signal)
      expect(await closed).toBe(code)
      expect(JSON.parse(out)).toMatchObject({ id, state: "running" })
      expect(err).toBe(`${signal}: stopped waiting for run ${id}; it goes on: svc runs show ${id} follows it, svc runs stop ${id} stops it\n`)
      expect((await svcIn(transcript, home, ["runs", "stop", id])).code).toBe(0)
    }

    // Ctrl-C while the owner has not answered the submission yet (here: stopped, as a busy owner
    // would be slow): the run's id is still said once the answer comes (the CLI died unheard).
    process.kill(owner.pid, "SIGSTOP")
    let early: ReturnType<typeof spawn> | undefined
    try {
      early = spawn(process.execPath, [SVC_BIN, "run", "slow:nap@1.0.0", "--wait"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home } })
      let earlySaid = ""
      early.stderr!.setEncoding("utf8").on("data", (d: string) => (earlySaid += d))
      const earlyExit = new Promise<number | null>((resolve) => early!.on("close", resolve))
      // Started, and asking: the CLI is up well within this (it reads no more than its arguments first).
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      early.kill("SIGINT")
      await new Promise((resolve) => setTimeout(resolve, 300))
      process.kill(owner.pid, "SIGCONT")
      expect(await earlyExit).toBe(130)
      expect(earlySaid).toMatch(/^stopped waiting for run (r\w+); it goes on: svc runs show \1 follows it, svc runs stop \1 stops it\n$/)
      const earlyId = /run (r\w+);/.exec(earlySaid)![1]!
      expect((await svcIn(transcript, home, ["runs", "stop", earlyId])).code).toBe(0)
    } finally {
      process.kill(owner.pid, "SIGCONT")
      early?.kill("SIGKILL")
    }
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("svc workers invite --json", () => {
  it("prints one document with the token and what a script keeps of the invite: its id, name, scope and expiry", async () => {
    const home = tempDir("svc-cfg-invite-json-")
    const owner = await startServe("owner", home, transcript)
    const before = Date.now()
    const r = await svcIn(transcript, home, ["workers", "invite", "--json", "--name", "lab-9", "--scope", "a:b@1.0.0"])
    expect(r.code, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as { token: string; inviteId: string; name: string; scope: Array<string>; expiresAt: string }
    expect(doc).toEqual({ token: expect.stringMatching(/^svc_jt_/), inviteId: expect.any(String), name: "lab-9", scope: ["a:b@1.0.0"], expiresAt: expect.any(String) })
    // A scoped invite expires after 24 h unless told sooner.
    expect(Date.parse(doc.expiresAt) - before).toBeGreaterThan(23.9 * 3600_000)
    expect((await svcIn(transcript, home, ["workers", "revoke", doc.inviteId])).code).toBe(0)
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("svc run --idempotency-key", () => {
  it("sent again answers the run it made, exit 0, and makes no second one; another input under it is refused; a malformed key is a usage error", async () => {
    const home = tempDir("svc-cfg-key-")
    const bag = join(home, "bags-src", "slow")
    mkdirSync(bag, { recursive: true })
    writeFileSync(join(bag, "bag.yaml"), "name: slow\ndescription: a slow job\nversion: 0.1.0\njobs:\n  nap:\n    version: 1.0.0\n    runs:\n      using: process\n      command: [sleep, \"60\"]\n")
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const owner = await startServe("owner", home, transcript)
    const submit = (...more: Array<string>) => svcIn(transcript, home, ["run", "slow:nap@1.0.0", "--idempotency-key", "ci-4211/nap", ...more])
    const first = await submit("--json")
    expect(first.code, first.stderr).toBe(0)
    const made = JSON.parse(first.stdout) as { id: string; existing?: boolean }
    expect(made.existing).toBeUndefined()
    const again = await submit("--json")
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ id: made.id, existing: true })
    expect(again.stderr).toMatch(new RegExp(`^run ${made.id} was submitted earlier with this idempotency key \\((assigned|running)\\): it is answered, not submitted again\n$`))
    // Without --json: the id on stdout, as for a new run.
    const plain = await submit()
    expect(plain.stdout).toBe(`${made.id}\n`)
    expect(plain.stderr).not.toContain("submitted slow:nap@1.0.0 as run")
    expect(JSON.parse((await svcIn(transcript, home, ["runs", "list", "--json"])).stdout).total).toBe(1)
    const other = await submit("--input", '{"n": 2}')
    expect(other.code).toBe(1)
    expect(other.stderr).toContain(`the idempotency key ci-4211/nap names run ${made.id} already, and it was submitted with another input`)
    const malformed = await svcIn(transcript, home, ["run", "slow:nap@1.0.0", "--idempotency-key", "two words"])
    expect(malformed.code).toBe(2)
    expect(malformed.stderr).toContain("--idempotency-key takes 1 to 200 printable ASCII characters without spaces")
    expect((await svcIn(transcript, home, ["runs", "stop", made.id])).code).toBe(0)
    // Waited for, it is the run it made, ended: its outcome, still said to be the earlier one.
    const waited = await submit("--wait", "--json")
    expect(waited.code).toBe(1)
    expect(JSON.parse(waited.stdout)).toMatchObject({ id: made.id, state: "stopped", existing: true })
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("an owner restart", () => {
  it("svc run --wait outlives it: it says the owner does not answer, and the run's end still reaches it", async () => {
    const home = tempDir("svc-cfg-restart-")
    const bag = join(home, "bags-src", "stuck")
    mkdirSync(bag, { recursive: true })
    // A job no host has the label for: blocked until someone stops it.
    writeFileSync(
      join(bag, "bag.yaml"),
      "name: stuck\ndescription: a job no host can take\nversion: 0.1.0\njobs:\n  wait:\n    description: never placed\n    version: 1.0.0\n    runs:\n      using: node\n      main: main.mjs\n    requires:\n      labels: [pool=none]\n"
    )
    writeFileSync(join(bag, "main.mjs"), 'console.log("{}")\n')
    const installed = await svcIn(transcript, home, ["bag", "install", bag])
    expect(installed.code, installed.stderr).toBe(0)
    const before = await startServe("owner before the restart", home, transcript)
    const waiter = spawn(process.execPath, [SVC_BIN, "run", "stuck:wait@1.0.0", "--wait"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home } })
    let said = ""
    waiter.stderr.setEncoding("utf8").on("data", (d: string) => (said += d))
    const exited = new Promise<number | null>((resolve) => waiter.on("close", resolve))
    const blocked = await waitFor("--wait to say the run is blocked", async () => said, (e) => e.includes(" pending: blocked; "), { timeoutMs: 10_000, everyMs: 50 })
    const runId = /^waiting for run (r\w+) /m.exec(blocked.value)![1]!
    expect((await before.stop()).code).toBe(0)
    await waitFor("--wait to say the owner does not answer", async () => said, (e) => e.includes(`the owner does not answer`), { timeoutMs: 10_000, everyMs: 50 })
    expect(said).toContain(`still waiting for run ${runId}, for up to 60 seconds until it is back`)
    const after = await startServe("owner after the restart", home, transcript)
    expect((await svcIn(transcript, home, ["runs", "stop", runId])).code).toBe(0)
    expect(await exited).toBe(1)
    expect(said).toContain(`run ${runId} stopped`)
    expect((await after.stop()).code).toBe(0)
  }, 60_000)
})

describe("a job's checks", () => {
  it("a failing preflight keeps the job from starting and a failing validate fails it, each saying why; passing ones let it succeed", async () => {
    const home = tempDir("svc-cfg-checks-")
    const bag = join(home, "bags-src", "checked")
    mkdirSync(join(bag, "jobs"), { recursive: true })
    const job = (name: string, checks: string) =>
      `  ${name}:\n    description: ${name}\n    version: 1.0.0\n    runs:\n      using: node\n      main: jobs/mark.mjs\n${checks}`
    writeFileSync(
      join(bag, "bag.yaml"),
      [
        "name: checked",
        "description: jobs with checks",
        "version: 0.1.0",
        "jobs:",
        job("guarded", "    preflight:\n      command: [node, -e, \"console.error('no licence file'); process.exit(1)\"]\n      hint: put the licence in place first\n"),
        job("verified", "    validate:\n      files_exist: [jobs/mark.mjs, out/report.txt]\n"),
        job("fine", "    preflight:\n      command: test -f jobs/mark.mjs\n      timeout: 10s\n    validate:\n      files_exist: [jobs/mark.mjs]\n      command: [node, -e, \"process.exit(0)\"]\n"),
        "  secretive:\n    description: needs a secret\n    version: 1.0.0\n    runs:\n      using: node\n      main: jobs/token.mjs\n      secrets: [LAB_TOKEN]\n",
        ""
      ].join("\n")
    )
    // The job says it ran on stderr, then answers.
    writeFileSync(join(bag, "jobs", "mark.mjs"), 'console.error("the job ran")\nconsole.log(JSON.stringify({ ran: true }))\n')
    writeFileSync(join(bag, "jobs", "token.mjs"), "console.log(JSON.stringify({ length: (process.env.LAB_TOKEN ?? '').length }))\n")
    expect((await svcIn(transcript, home, ["bag", "check", bag])).code).toBe(0)
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const owner = await startServe("owner with checked jobs", home, transcript)
    const guarded = await svcIn(transcript, home, ["run", "checked:guarded@1.0.0", "--wait"])
    expect({ code: guarded.code, last: guarded.stderr.trim().split("\n").at(-1) }).toEqual({
      code: 1,
      last: expect.stringMatching(/^svc: run r\w+ failed on owner: its preflight failed, so it did not start: exited with code 1: no licence file \(put the licence in place first\)$/)
    })
    const runId = /run (r\w+) failed/.exec(guarded.stderr)![1]!
    expect((await svcIn(transcript, home, ["runs", "show", runId])).stdout).not.toContain("the job ran")
    const verified = await svcIn(transcript, home, ["run", "checked:verified@1.0.0", "--wait"])
    expect({ code: verified.code, last: verified.stderr.trim().split("\n").at(-1) }).toEqual({
      code: 1,
      last: expect.stringMatching(/failed on owner: its validate check failed: out\/report\.txt does not exist$/)
    })
    const fine = await svcIn(transcript, home, ["run", "checked:fine@1.0.0", "--wait"])
    expect({ code: fine.code, stdout: fine.stdout }).toEqual({ code: 0, stdout: '{"ran":true}\n' })
    // A secret it declares comes from $SVC_HOME/secrets; without it the job does not start.
    const unset = await svcIn(transcript, home, ["run", "checked:secretive@1.0.0", "--wait"])
    expect(unset.code).toBe(1)
    expect(unset.stderr).toContain(`it needs the secret LAB_TOKEN, which is not set on this machine: write its value to ${join(home, "secrets", "LAB_TOKEN")}`)
    mkdirSync(join(home, "secrets"), { mode: 0o700 })
    writeFileSync(join(home, "secrets", "LAB_TOKEN"), "tok-123456\n", { mode: 0o600 })
    const set = await svcIn(transcript, home, ["run", "checked:secretive@1.0.0", "--wait"])
    expect({ code: set.code, stdout: set.stdout }).toEqual({ code: 0, stdout: '{"length":10}\n' })
    expect(owner.output()).not.toContain("tok-123456")
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("start-up", () => {
  it("a runtime stopped cleanly starts again from its snapshot, folding only what came after it", async () => {
    const home = tempDir("svc-cfg-snapshot-")
    // The line comes just after the owner route's, which is what startServe waits for.
    const said = (p: Awaited<ReturnType<typeof startServe>>, line: string) =>
      waitFor(`svc serve ${p.name} to say how it started`, async () => p.output(), (out) => out.includes("svc serve: projections"), { timeoutMs: 5_000, everyMs: 50 }).then((r) =>
        expect(r.value).toContain(line)
      )
    const first = await startServe("first", home, transcript)
    await said(first, "svc serve: projections rebuilt from the whole journal (0 events)")
    expect((await svc(["workers", "invite", "--name", "lab-1"], { cwd: home, home })).code).toBe(0)
    expect((await first.stop()).code).toBe(0)
    expect(first.output()).toMatch(/INFO checkpoint at sequence 1 written: the next start folds only what comes after it/)
    // The clean stop wrote a checkpoint at the invite, with the projections as its snapshot.
    const second = await startServe("second", home, transcript)
    await said(second, "svc serve: projections from the snapshot at sequence 1 and the 0 events after it")
    const invites = await svc(["journal", "replay", "--json"], { cwd: home, home })
    expect(JSON.parse(invites.stdout)).toMatchObject({ checkpoint: { sequence: 1, matches: true }, owner: { compared: true, matches: true }, divergences: [] })
    await second.stop()
    // A journal with no snapshot (a runtime killed before its first checkpoint; an svc from
    // before snapshots): the whole fold says why (upgrade audit: it said nothing).
    const killedHome = tempDir("svc-cfg-no-snapshot-")
    const killed = await startServe("killed", killedHome, transcript)
    expect((await svc(["workers", "invite", "--name", "lab-1"], { cwd: killedHome, home: killedHome })).code).toBe(0)
    process.kill(killed.pid, "SIGKILL")
    await killed.stop()
    const after = await startServe("after", killedHome, transcript)
    await said(after, "svc serve: projections rebuilt from the whole journal (1 event): no snapshot is stored (none written yet: a journal from an svc before snapshots, or a runtime killed before its first checkpoint)")
    await after.stop()
  }, 60_000)

  it("a job a runtime killed with SIGKILL left running is stopped by the next runtime before it runs anything; the run runs again", async () => {
    const home = tempDir("svc-cfg-killed-")
    const bag = join(home, "bags-src", "long")
    const pids = join(home, "pids")
    mkdirSync(bag, { recursive: true })
    writeFileSync(
      join(bag, "bag.yaml"),
      `name: long\ndescription: a long job\nversion: 0.1.0\njobs:\n  nap:\n    description: naps a minute\n    version: 1.0.0\n    runs:\n      using: process\n      command: [sh, -c, "echo $$ >> ${pids}; exec sleep 60"]\n`
    )
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const pidsSoFar = () => (existsSync(pids) ? readFileSync(pids, "utf8").trim().split("\n").filter((l) => l !== "").map(Number) : [])
    // A killed orphan is a zombie until this machine's init reaps it, which can take a while
    // under load (signal 0 reaches a zombie): dead all the same.
    const isAlive = (pid: number) => processStat(pid) !== null
    const before = await startServe("owner killed", home, transcript)
    const submitted = await svcIn(transcript, home, ["run", "long:nap@1.0.0", "--json"])
    expect(submitted.code, submitted.stderr).toBe(0)
    const runId = JSON.parse(submitted.stdout).id as string
    const [first] = (await waitFor("the job to start", async () => pidsSoFar(), (p) => p.length === 1, { timeoutMs: 10_000, everyMs: 100 })).value
    // Its note is written just after the spawn, which the job's first line can outrun.
    await waitFor("the job's note", async () => existsSync(join(home, "children", String(first))), (noted) => noted, { timeoutMs: 5_000, everyMs: 20 })
    process.kill(before.pid, "SIGKILL")
    await before.stop()
    // Killed, svc stopped nothing: the job runs on.
    expect(isAlive(first!)).toBe(true)
    // Its admin socket is left behind: the CLI says nothing answers on it (it said there was none).
    const meanwhile = await svcIn(transcript, home, ["runs", "list"])
    expect({ code: meanwhile.code, stderr: meanwhile.stderr }).toEqual({
      code: 2,
      stderr: `svc: svc serve is not running for ${home} (nothing answers on ${home}/admin.sock: the runtime that made it stopped without removing it): start it with svc serve (svc journal tail reads the journal meanwhile)\n`
    })
    const after = await startServe("owner after the kill", home, transcript)
    expect(isAlive(first!)).toBe(false)
    expect(after.output()).toMatch(new RegExp(`WARN stopped attempt ${runId}\\.1 \\(sh\\) \\(pid ${first}, running since \\S+\\): the svc serve that started it was killed without stopping it`))
    // Its attempt ceased (the owner restarted while running it), and the run runs again: one job at a time.
    await waitFor("the owner's log to say so", async () => after.output(), (o) => o.includes(`INFO 1 attempt the last runtime was running on this owner when it stopped (${runId}.1) is placed again`), { timeoutMs: 10_000, everyMs: 100 })
    const [, second] = (await waitFor("the run to run again", async () => pidsSoFar(), (p) => p.length === 2, { timeoutMs: 15_000, everyMs: 100 })).value
    expect(isAlive(second!)).toBe(true)
    expect((await svcIn(transcript, home, ["runs", "stop", runId])).code).toBe(0)
    await waitFor("the second attempt stopped", async () => isAlive(second!), (a) => !a, { timeoutMs: 10_000, everyMs: 100 })
    expect(readdirSync(join(home, "children"))).toEqual([])
    expect((await after.stop()).code).toBe(0)
  }, 60_000)

  it("a low limit of open files is said at start, with the route's cap at half of it (resource audit: the owner went silent at it)", async () => {
    const home = tempDir("svc-cfg-nofile-")
    const low = await startServe("low nofile", home, transcript, { openFiles: 512 })
    expect(low.output()).toContain(
      `WARN this process may have at most 512 files open (ulimit -n): the worker route holds at most 224 connections, and each running job takes 5 while it starts; raise it for more than a few workers (docs/operations.md, "Open files")`
    )
    expect((await low.stop()).code).toBe(0)
  })

  it("a store a newer svc migrated is not started on (it was, and written into)", async () => {
    const home = tempDir("svc-cfg-newer-")
    const first = await startServe("first", home, transcript)
    // Answering: started whole, so that the stop below writes its checkpoint.
    expect((await svc(["workers", "status", "--json"], { cwd: home, home })).code).toBe(0)
    expect((await first.stop()).code).toBe(0)
    const db = new Database(join(home, "svc.sqlite"))
    db.exec("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (7, 'future_thing'); CREATE TABLE future_thing (x)")
    const before = db.prepare("SELECT COUNT(*) AS n FROM checkpoints").get()
    db.close()
    const refused = await serveRefused(home)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`svc: starting the owner from ${join(home, "svc.sqlite")}: ${join(home, "svc.sqlite")} was written by a newer svc: its store has migration 7 (future_thing), this svc knows up to 2; use that svc or a later one`)
    const after = new Database(join(home, "svc.sqlite"), { readonly: true })
    expect(after.prepare("SELECT COUNT(*) AS n FROM checkpoints").get()).toEqual(before)
    after.close()
  }, 60_000)

  it("keeps the journal owner-only in a home made beforehand with a looser mode, and tightens one an earlier svc left readable", async () => {
    const home = tempDir("svc-cfg-modes-")
    chmodSync(home, 0o755)
    // An earlier svc's store, 0644 (its mode followed the umask).
    const before = await startServe("before", home, transcript)
    expect((await svc(["workers", "invite", "--name", "lab-1"], { cwd: home, home })).code).toBe(0)
    expect((await before.stop()).code).toBe(0)
    chmodSync(join(home, "svc.sqlite"), 0o644)
    const owner = await startServe("owner", home, transcript)
    expect((await svc(["workers", "invite", "--name", "lab-2"], { cwd: home, home })).code).toBe(0)
    const files = readdirSync(home).filter((f) => f.startsWith("svc.sqlite"))
    expect(files).toEqual(expect.arrayContaining(["svc.sqlite", "svc.sqlite-wal", "svc.sqlite-shm"]))
    for (const f of files) expect({ f, mode: statSync(join(home, f)).mode & 0o777 }).toEqual({ f, mode: 0o600 })
    expect((await owner.stop()).code).toBe(0)
    // A new home's store is made owner-only from the start.
    const fresh = tempDir("svc-cfg-modes-new-")
    chmodSync(fresh, 0o755)
    const first = await startServe("first", fresh, transcript)
    expect((await svc(["workers", "status", "--json"], { cwd: fresh, home: fresh })).code).toBe(0)
    expect(statSync(join(fresh, "svc.sqlite")).mode & 0o777).toBe(0o600)
    expect((await first.stop()).code).toBe(0)
  }, 60_000)

  it("a clean stop leaves every commit in svc.sqlite itself, even while a reader has the store open", async () => {
    const home = tempDir("svc-cfg-wal-")
    const owner = await startServe("owner", home, transcript)
    for (const name of ["lab-1", "lab-2", "lab-3"]) expect((await svc(["workers", "invite", "--name", name], { cwd: home, home })).code).toBe(0)
    // A reader's connection, as svc journal tail --follow keeps between its polls.
    const reader = new Database(join(home, "svc.sqlite"), { readonly: true })
    try {
      const head = (reader.prepare("SELECT MAX(sequence) AS n FROM events").get() as { n: number }).n
      expect(head).toBeGreaterThanOrEqual(3)
      expect((await owner.stop()).code).toBe(0)
      // The file alone, as a backup that copies it alone has it.
      const copy = tempDir("svc-cfg-wal-copy-")
      copyFileSync(join(home, "svc.sqlite"), join(copy, "svc.sqlite"))
      const copied = new Database(join(copy, "svc.sqlite"), { readonly: true })
      expect((copied.prepare("SELECT MAX(sequence) AS n FROM events").get() as { n: number }).n).toBe(head)
      expect((copied.prepare("SELECT COUNT(*) AS n FROM checkpoints").get() as { n: number }).n).toBeGreaterThan(0)
      copied.close()
    } finally {
      reader.close()
    }
  }, 60_000)

  it("a journal it cannot read stops the start with the reason, closing what it opened", async () => {
    const home = tempDir("svc-cfg-unreadable-")
    const first = await startServe("first", home, transcript)
    expect((await svc(["workers", "invite", "--name", "lab-1"], { cwd: home, home })).code).toBe(0)
    expect((await first.stop()).code).toBe(0)
    // What an owner before the check of event times could journal (`--expires 9999999999d`).
    const db = new Database(join(home, "svc.sqlite"))
    db.prepare("INSERT INTO events (sequence, stream, stream_version, type, schema_version, payload, recorded_at) VALUES (2, 'invite-x', 1, 'WorkerInvited', 1, ?, 5)").run(
      JSON.stringify({ inviteId: "x", tokenHash: "0".repeat(64), name: null, scope: [], expiresAt: 864_000_000_000_000_000, actor: "operator", at: 5 })
    )
    db.close()
    // It used to print the error and go on listening on the worker route, with no admin socket.
    const refused = await serveRefused(home)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`svc: starting the owner from ${join(home, "svc.sqlite")}: the event at sequence 2 (WorkerInvited, stream invite-x) cannot be read`)
    expect(refused.stderr).toContain("must be a whole number of milliseconds since 1970 that a date can hold")
    expect(existsSync(join(home, "admin.sock"))).toBe(false)
  }, 60_000)
})

describe("one runtime per $SVC_HOME", () => {
  it("refuses to start a second svc serve on a home whose runtime is running", async () => {
    const home = tempDir("svc-cfg-twice-")
    await startServe("first", home, transcript)
    const second = await serveRefused(home)
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`svc serve is already running for ${home}`)
    // The first still answers.
    expect((await svc(["workers", "status", "--json"], { cwd: home, home })).code).toBe(0)
  }, 60_000)
  it("two svc serve started at one moment on a new home: one runs, the other refuses, and the certificate on disk is the one served", async () => {
    const home = tempDir("svc-cfg-race-")
    // Both found no socket answering, and the one that gave up had written its certificate over
    // the one the other served (and, on a journal, appended beside it): the home's lock decides.
    const starts = [0, 1].map(() => {
      const child = spawn(process.execPath, [SVC_BIN, "serve", "--listen", "127.0.0.1:0"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home }, stdio: ["ignore", "pipe", "pipe"] })
      const out = { stdout: "", stderr: "", code: undefined as number | null | undefined }
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out.stdout += d))
      child.stderr.setEncoding("utf8").on("data", (d: string) => (out.stderr += d))
      const closed = new Promise<void>((resolve) => child.on("close", (code) => resolve(void (out.code = code))))
      return { child, out, closed }
    })
    try {
      const loser = await Promise.race(starts.map((s) => s.closed.then(() => s)))
      const winner = starts.find((s) => s !== loser)!
      expect(loser.out.code, loser.out.stderr).toBe(1)
      expect(loser.out.stderr).toMatch(new RegExp(`^svc: svc serve is already running for ${home.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\((its admin socket answers|another process holds .*serve\.lock; it is starting or stopping)\\)\n$`))
      await waitFor("the winner to say its certificate", async () => winner.out.stdout, (o) => /TLS certificate sha256 [0-9a-f]{64}/.test(o), { timeoutMs: 20_000, everyMs: 100 })
      const served = /TLS certificate sha256 ([0-9a-f]{64})/.exec(winner.out.stdout)![1]
      const onDisk = new X509Certificate(readFileSync(join(home, "tls", "owner.crt"))).fingerprint256.replace(/:/g, "").toLowerCase()
      expect(onDisk).toBe(served)
      expect((await svc(["workers", "status", "--json"], { cwd: home, home })).code).toBe(0)
    } finally {
      for (const s of starts) s.child.kill("SIGTERM")
      await Promise.all(starts.map((s) => s.closed))
    }
  }, 60_000)

  it("a second Ctrl-C while it stops (a job that ignores SIGTERM holds the stop) ends it at once, saying so, the job killed first; the next start has nothing to stop", async () => {
    const home = tempDir("svc-cfg-twice-int-")
    const bag = join(home, "bags-src", "stub")
    const pidFile = join(home, "job.pid")
    mkdirSync(join(bag, "jobs"), { recursive: true })
    writeFileSync(join(bag, "bag.yaml"), "name: stub\ndescription: ignores SIGTERM\nversion: 0.1.0\njobs:\n  hold:\n    version: 1.0.0\n    runs:\n      using: node\n      main: jobs/hold.mjs\n")
    writeFileSync(
      join(bag, "jobs", "hold.mjs"),
      `import { writeFileSync } from "node:fs"\nprocess.on("SIGTERM", () => {})\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid))\nsetInterval(() => {}, 1000)\n`
    )
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const owner = await startServe("owner", home, transcript)
    const submitted = JSON.parse((await svcIn(transcript, home, ["run", "stub:hold@1.0.0", "--json"])).stdout) as { id: string }
    await waitFor("the job running", async () => JSON.parse((await svcIn(transcript, home, ["runs", "show", submitted.id, "--json"])).stdout), (r: { state: string }) => r.state === "running", { timeoutMs: 10_000, everyMs: 100 })
    // Delivered twice at once (as `timeout` does, to the process and to its group): one request.
    process.kill(owner.pid, "SIGINT")
    process.kill(owner.pid, "SIGINT")
    await waitFor("the stop begun", async () => owner.output(), (o) => o.includes("SIGINT: stopping"), { timeoutMs: 5_000, everyMs: 50 })
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(owner.exited()).toBe(false)
    expect(owner.output()).not.toContain("SIGINT again: stopping at once")
    // The operator's second Ctrl-C.
    process.kill(owner.pid, "SIGINT")
    await waitFor("the runtime gone", async () => owner.exited(), (gone) => gone, { timeoutMs: 5_000, everyMs: 50 })
    const exit = await owner.stop(10_000)
    expect(exit.code).toBe(130)
    expect(owner.output()).toContain("svc serve: SIGINT again: stopping at once; no last checkpoint; 1 job still running killed (SIGKILL)")
    // Killed before the runtime ended, not left running until a next start (on a worker, beside
    // the attempt its owner places again elsewhere).
    const jobPid = Number(readFileSync(pidFile, "utf8"))
    // Gone, or a zombie not reaped yet (its parent, the runtime, has ended: whoever adopts it reaps it).
    const runs = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
      } catch {
        return false
      }
    }
    await waitFor("the job gone", async () => runs(jobPid), (alive) => !alive, { timeoutMs: 2_000, everyMs: 20 })
    const next = await startServe("next", home, transcript)
    await waitFor("the next start running", async () => next.output(), (o) => o.includes("owner route"), { timeoutMs: 15_000, everyMs: 100 })
    expect(next.output()).not.toMatch(/WARN stopped attempt/)
    expect((await svcIn(transcript, home, ["workers", "status", "--json"])).code).toBe(0)
    expect((await next.stop(15_000)).code).toBe(0)
  }, 60_000)

  it("a SIGTERM while it starts (stopping a job a killed runtime left) stops the start, saying so, after the job's stop; it was the default action's silent end", async () => {
    const home = tempDir("svc-cfg-term-start-")
    const bag = join(home, "bags-src", "stub")
    const pidFile = join(home, "job.pid")
    const termFile = join(home, "job.term")
    mkdirSync(join(bag, "jobs"), { recursive: true })
    writeFileSync(join(bag, "bag.yaml"), "name: stub\ndescription: ignores SIGTERM\nversion: 0.1.0\njobs:\n  hold:\n    version: 1.0.0\n    runs:\n      using: node\n      main: jobs/hold.mjs\n")
    writeFileSync(
      join(bag, "jobs", "hold.mjs"),
      `import { writeFileSync } from "node:fs"\nprocess.on("SIGTERM", () => writeFileSync(${JSON.stringify(termFile)}, "TERM"))\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid))\nsetInterval(() => {}, 1000)\n`
    )
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const killed = await startServe("owner killed", home, transcript)
    expect((await svcIn(transcript, home, ["run", "stub:hold@1.0.0", "--json"])).code).toBe(0)
    const pid = Number((await waitFor("the job to start", async () => (existsSync(pidFile) ? readFileSync(pidFile, "utf8") : ""), (p) => p !== "", { timeoutMs: 10_000, everyMs: 50 })).value)
    await waitFor("the job's note", async () => existsSync(join(home, "children", String(pid))), (noted) => noted, { timeoutMs: 5_000, everyMs: 20 })
    process.kill(killed.pid, "SIGKILL")
    await killed.stop()
    // The next start stops the job first, giving it 5 s: the operator's SIGTERM comes meanwhile.
    const child = spawn(process.execPath, [SVC_BIN, "serve", "--listen", "127.0.0.1:0"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home }, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d))
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })))
    try {
      await waitFor("the start to stop the job", async () => existsSync(termFile), (t) => t, { timeoutMs: 10_000, everyMs: 20 })
      child.kill("SIGTERM")
      expect(await closed).toEqual({ code: 0, signal: null })
    } finally {
      child.kill("SIGKILL")
    }
    transcript.add("serve stopped while starting", out)
    expect(out).toContain("svc serve: SIGTERM while starting: stopping\n")
    // The job's stop was finished and said; no runtime answers, and the next start takes the home.
    expect(out).toMatch(/WARN stopped attempt \S+\.1 \(jobs\/hold\.mjs\) \(pid \d+, running since \S+\): the svc serve that started it was killed/)
    expect(out).not.toContain("owner route")
    // Ended: gone, or a zombie its new parent (init, here maybe a container's) has not reaped yet.
    expect(existsSync(`/proc/${pid}`) ? /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1] : "Z").toBe("Z")
    expect(readdirSync(join(home, "children"))).toEqual([])
    expect((await svcIn(transcript, home, ["runs", "list"])).code).toBe(2)
    const next = await startServe("next", home, transcript)
    expect((await svcIn(transcript, home, ["workers", "status", "--json"])).code).toBe(0)
    expect((await next.stop(15_000)).code).toBe(0)
  }, 60_000)

  it("npm start (README's main command) stops cleanly on SIGTERM: the runtime gets it too, and closes", async () => {
    const home = tempDir("svc-start-")
    const repo = fileURLToPath(new URL("../..", import.meta.url))
    // As a process manager stops it: SIGTERM to npm's own pid. npm passes it on; the runtime
    // must receive it (not a shell between them) and stop, removing its admin socket.
    const npm = spawn("npm", ["start", "--silent", "--", "--listen", "127.0.0.1:0"], {
      cwd: repo,
      env: { ...process.env, SVC_HOME: home, HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so that the finally below can clean up whatever it started.
      detached: true
    })
    let out = ""
    npm.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
    npm.stderr.setEncoding("utf8").on("data", (d: string) => (out += d))
    const socket = join(home, "admin.sock")
    try {
      await waitFor("the runtime's admin socket", async () => existsSync(socket), (x) => x, { timeoutMs: 30_000, everyMs: 100 })
      const exited = new Promise<number | null>((resolve) => npm.on("exit", (code) => resolve(code)))
      npm.kill("SIGTERM")
      await exited
      const closed = await waitFor("the runtime stopped (its admin socket removed)", async () => !existsSync(socket), (x) => x, { timeoutMs: 10_000, everyMs: 100 })
      expect(closed.value).toBe(true)
      expect(out).toContain("svc serve: SIGTERM: stopping")
    } finally {
      try {
        process.kill(-npm.pid!, "SIGKILL")
      } catch {
        // Already gone, all of it.
      }
    }
  }, 60_000)
})

describe("a command given --json that fails", () => {
  it("prints one document saying what failed, with the refusal's own code, beside its sentence on stderr; one that printed its own document adds none", async () => {
    const home = tempDir("svc-cfg-json-fail-")
    const failed = async (args: Array<string>) => {
      const r = await svcIn(transcript, home, args)
      return { code: r.code, stderr: r.stderr, doc: JSON.parse(r.stdout) as unknown }
    }
    // Not running: unreachable (exit 2); the words wrong: usage (exit 2).
    expect(await failed(["runs", "list", "--json"])).toEqual({
      code: 2,
      stderr: expect.stringContaining("svc serve is not running"),
      doc: { error: { code: "unreachable", message: expect.stringContaining("svc serve is not running"), exitCode: 2 } }
    })
    expect(await failed(["runs", "list", "--json", "--wat"])).toMatchObject({ code: 2, doc: { error: { code: "usage", message: expect.stringContaining("unknown option --wat"), exitCode: 2 } } })
    // Nothing by that name: not-found, told apart from a refusal of something there.
    expect(await failed(["bag", "remove", "nope", "--json"])).toMatchObject({ code: 1, doc: { error: { code: "not-found", exitCode: 1 } } })
    expect(await failed(["workers", "leave", "https://127.0.0.1:9", "--json"])).toMatchObject({ code: 1, doc: { error: { code: "not-found" } } })
    // A value that is another option's is not --json: nothing printed on stdout.
    const asValue = await svcIn(transcript, home, ["run", "a:b@1.0.0", "--input", "--json"])
    expect({ code: asValue.code, stdout: asValue.stdout }).toEqual({ code: 2, stdout: "" })

    const bag = join(home, "bags-src", "jf")
    mkdirSync(bag, { recursive: true })
    writeFileSync(
      join(bag, "bag.yaml"),
      "name: jf\ndescription: jobs that end at once\nversion: 0.1.0\njobs:\n  ok:\n    version: 1.0.0\n    runs:\n      using: process\n      command: [\"true\"]\n  bad:\n    version: 1.0.0\n    runs:\n      using: process\n      command: [\"false\"]\n"
    )
    expect((await svcIn(transcript, home, ["bag", "install", bag])).code).toBe(0)
    const owner = await startServe("owner", home, transcript)
    // The runtime's refusals carry its codes: a run it does not know, one that has ended.
    expect(await failed(["runs", "stop", "rNope", "--json"])).toMatchObject({ code: 1, doc: { error: { code: "unknown-run", message: expect.stringContaining("rNope"), exitCode: 1 } } })
    const ended = JSON.parse((await svcIn(transcript, home, ["run", "jf:ok@1.0.0", "--wait", "--json"])).stdout) as { id: string; state: string }
    expect(ended.state).toBe("succeeded")
    expect(await failed(["runs", "stop", ended.id, "--json"])).toMatchObject({ code: 1, doc: { error: { code: "run-finished", exitCode: 1 } } })
    expect(await failed(["workers", "revoke", "nobody", "--json"])).toMatchObject({ code: 1, doc: { error: { code: "not-found" } } })
    // A run that failed: its own document (the run), and no other after it.
    expect(await failed(["run", "jf:bad@1.0.0", "--wait", "--json"])).toMatchObject({ code: 1, doc: { state: "failed" } })
    // A token whose certificate the owner does not present: refused before the join is written,
    // so the try spends nothing (clock audit: join said it "was sent ... may have recorded it").
    const real = parseJoinToken((await svcIn(transcript, home, ["workers", "invite"])).stdout.trim())
    if (typeof real === "string") throw new Error(real)
    const joiner = tempDir("svc-cfg-json-joiner-")
    const wrong = await svcIn(transcript, joiner, ["workers", "join", formatJoinToken({ ...real, fingerprint: "a".repeat(64) }), "--json"])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toBe(
      `svc: ${real.url} presented a certificate with another fingerprint than the join token pins: this is not the owner that invited you; nothing was sent to it, so this try did not spend the token\n`
    )
    expect(JSON.parse(wrong.stdout)).toMatchObject({ error: { code: "unreachable", exitCode: 2 } })
    expect((await svcIn(transcript, joiner, ["workers", "join", formatJoinToken(real)])).code).toBe(0)
    expect((await owner.stop()).code).toBe(0)
  }, 60_000)
})

describe("clocks that differ", () => {
  it("a worker takes a pinned certificate up to a day ahead of its clock; beyond, join says both clocks may be wrong and that nothing was sent (clock audit)", async () => {
    const home = tempDir("svc-cfg-clock-")
    const day = 24 * 3600_000
    const certificate = async (from: number) => {
      const pems = await generate([{ name: "commonName", value: "svc owner" }], {
        keySize: 2048,
        algorithm: "sha256",
        notBeforeDate: new Date(Date.now() + from),
        notAfterDate: new Date(Date.now() + 30 * day),
        extensions: [{ name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] }]
      } as Parameters<typeof generate>[1])
      const dir = tempDir("svc-cfg-clock-cert-")
      writeFileSync(join(dir, "cert.pem"), pems.cert)
      writeFileSync(join(dir, "key.pem"), pems.private)
      return ["--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")]
    }
    // Valid from 2 days ahead of this machine's clock: refused, saying so; the token is not spent.
    let owner = await startServe("owner (2 days ahead)", home, transcript, { args: await certificate(2 * day) })
    const token = (await svcIn(transcript, home, ["workers", "invite"])).stdout.trim()
    const worker = tempDir("svc-cfg-clock-worker-")
    const ahead = await svcIn(transcript, worker, ["workers", "join", token])
    expect(ahead.code).toBe(2)
    expect(ahead.stderr).toMatch(/is not valid yet \(certificate is not valid before .*; this machine's time is .*\): this machine's clock or the owner's is wrong by more than a day; nothing was sent to the owner \(the connection was refused before the join\), so this try did not spend the token\n$/)
    expect(ahead.stderr).not.toContain("may have recorded it")
    expect((await owner.stop()).code).toBe(0)
    // An hour ahead (the owner's clock a little ahead when it made it): joined.
    owner = await startServe("owner (an hour ahead)", home, transcript, { args: await certificate(3600_000) })
    const soon = (await svcIn(transcript, home, ["workers", "invite"])).stdout.trim()
    const joined = await svcIn(transcript, worker, ["workers", "join", soon])
    expect(joined.code, joined.stderr).toBe(0)
    expect((await owner.stop()).code).toBe(0)
  }, 90_000)
})
