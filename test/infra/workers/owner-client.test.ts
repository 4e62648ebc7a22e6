/**
 * The worker's HTTPS client against real loopback servers: a call to an address that answers
 * with another certificate than the pinned one says so, in words, not as OpenSSL's code.
 */
import { execFileSync } from "node:child_process"
import { X509Certificate } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { createServer as createNetServer, type Socket } from "node:net"
import { generate } from "selfsigned"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { it as effectIt } from "@effect/vitest"
import { afterEach, describe, expect, it, vi } from "vitest"
import { createServer as createRouteServer, makeHandler, startingHandler } from "../../../src/infra/http/WorkerRoute.js"
import { loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"
import { answerWithinMs, callOwner, certificateProblem, fetchPinnedCertificate, followingCaller, HANDSHAKE_WITHIN_MS, makeAgent } from "../../../src/infra/workers/OwnerClient.js"
import { signStep, type SuccessionStep } from "../../../src/infra/tls/Succession.js"
import { Owner } from "../../../src/app/workers/Owner.js"
import { tempDir } from "../../support/svc.js"

const servers: Array<Server> = []
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r))
})

const serveWith = async (home: string): Promise<{ url: string; cert: string; fingerprint: string }> => {
  const tls = await loadOrCreate(home)
  const server = createServer({ cert: tls.cert, key: tls.key }, (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({ kind: "ack", stop: [], newCredential: null }))
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const port = (server.address() as { port: number }).port
  return { url: `https://127.0.0.1:${port}`, cert: tls.cert, fingerprint: tls.fingerprint }
}

describe("the worker's client", () => {
  it("calls the owner whose certificate it pinned, and says plainly when the address answers with another one", async () => {
    const owner = await serveWith(join(tempDir("svc-client-"), "owner"))
    const pinned = { url: owner.url, fingerprint: owner.fingerprint, certificate: owner.cert }
    const agent = makeAgent(pinned)
    const heartbeat = { kind: "heartbeat" as const, fence: 1, running: [] }
    expect(await Effect.runPromise(callOwner(pinned, agent, "svc_wk_x", heartbeat))).toMatchObject({ kind: "ack" })
    agent.destroy()
    // Another installation answers at that address (its own certificate, made the same way).
    const impostor = await serveWith(join(tempDir("svc-client-"), "other"))
    const there = { ...pinned, url: impostor.url }
    const other = makeAgent(there)
    const failed = await Effect.runPromise(Effect.flip(callOwner(there, other, "svc_wk_x", heartbeat)))
    other.destroy()
    expect(failed._tag).toBe("Unreachable")
    expect(failed.message).toBe(
      `${impostor.url}: it presented another certificate than the one pinned at join: not the owner that invited this worker, or one that made itself a new certificate without signing the change (then join again with a new token from it)`
    )
  })

  it("calls an owner whose certificate a CA issued (served with its chain), and writes nothing to an address presenting another", async () => {
    const dir = tempDir("svc-client-ca-")
    const ssl = (...args: Array<string>) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" })
    ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=svc test CA", "-days", "30", "-keyout", "ca.key", "-out", "ca.crt")
    ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=owner", "-keyout", "leaf.key", "-out", "leaf.csr")
    writeFileSync(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "30", "-extfile", "san.ext", "-out", "leaf.crt")
    const leaf = readFileSync(join(dir, "leaf.crt"), "utf8")
    // As certbot's fullchain.pem: the certificate, then its issuer.
    const chain = leaf + readFileSync(join(dir, "ca.crt"), "utf8")
    const heard: Array<string> = []
    const server = createServer({ cert: chain, key: readFileSync(join(dir, "leaf.key"), "utf8") }, (req, res) => {
      heard.push(String(req.headers.authorization))
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ kind: "ack", stop: [], newCredential: null }))
    })
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
    const fingerprint = new X509Certificate(leaf).fingerprint256.replace(/:/g, "").toLowerCase()
    // The certificate a join fetches and pins: the one the token names, its issuer's aside.
    expect(await fetchPinnedCertificate(url, fingerprint)).toBe(new X509Certificate(leaf).toString())
    const pinned = { url, fingerprint, certificate: leaf }
    const agent = makeAgent(pinned)
    const heartbeat = { kind: "heartbeat" as const, fence: 1, running: [] }
    // It was "another certificate (TLS: UNABLE_TO_VERIFY_LEAF_SIGNATURE)": the pinned one as the only CA.
    expect(await Effect.runPromise(callOwner(pinned, agent, "svc_wk_x", heartbeat))).toMatchObject({ kind: "ack" })
    agent.destroy()
    expect(heard).toEqual(["Bearer svc_wk_x"])
    // Pinned to another certificate: the connection is refused before anything is written to it.
    const other = await loadOrCreate(join(tempDir("svc-client-"), "other"))
    const wrong = { url, fingerprint: other.fingerprint, certificate: other.cert }
    const wrongAgent = makeAgent(wrong)
    const failed = await Effect.runPromise(Effect.flip(callOwner(wrong, wrongAgent, "svc_wk_secret", heartbeat)))
    wrongAgent.destroy()
    expect(failed).toMatchObject({ _tag: "Unreachable", certificateChanged: true })
    expect(heard).toEqual(["Bearer svc_wk_x"])
  }, 30_000)

  it("refuses the pinned certificate itself once it has expired, or more than a day before it is valid, saying which; a start an hour ahead is the clocks' difference (clock audit)", async () => {
    const day = 24 * 3600 * 1000
    for (const [from, to, said] of [
      [-3 * day, -day, "has expired"],
      [2 * day, 3 * day, "is not valid yet (certificate is not valid before"],
      [3600_000, 3 * day, undefined]
    ] as const) {
      const pems = await generate([{ name: "commonName", value: "svc owner" }], { keySize: 2048, algorithm: "sha256", notBeforeDate: new Date(Date.now() + from), notAfterDate: new Date(Date.now() + to) } as Parameters<typeof generate>[1])
      const server = createServer({ cert: pems.cert, key: pems.private }, (_req, res) => res.end("{}"))
      servers.push(server)
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
      const pinned = { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, fingerprint: new X509Certificate(pems.cert).fingerprint256.replace(/:/g, "").toLowerCase(), certificate: pems.cert }
      const agent = makeAgent(pinned)
      const outcome = await Effect.runPromise(Effect.either(callOwner(pinned, agent, "svc_wk_x", { kind: "heartbeat", fence: 1, running: [] })))
      agent.destroy()
      if (said === undefined) {
        // Accepted: the server's answer ({}) is read as the call's (not a protocol answer: refused as such, not as the certificate).
        expect(outcome._tag === "Left" ? outcome.left.message : "").not.toContain("the one this worker pins")
        continue
      }
      expect(outcome._tag).toBe("Left")
      const failed = outcome._tag === "Left" ? outcome.left : undefined
      expect(failed!.message).toContain(`the owner's certificate, the one this worker pins, ${said}`)
      expect(failed).not.toHaveProperty("certificateChanged")
    }
  }, 30_000)

  it("hears an owner that is starting as such: answered at once (503, starting), a moment to call again, where calls waited out the start", async () => {
    const home = join(tempDir("svc-client-"), "owner")
    const tls = await loadOrCreate(home)
    const server = createRouteServer({ cert: tls.cert, key: tls.key, host: "127.0.0.1", port: 0 }, startingHandler)
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
    const pinned = { url, fingerprint: tls.fingerprint, certificate: tls.cert }
    const agent = makeAgent(pinned)
    const failed = await Effect.runPromise(Effect.flip(callOwner(pinned, agent, "svc_wk_x", { kind: "heartbeat", fence: 1, running: [] })))
    agent.destroy()
    // Unreachable: the link calls again, as while the owner is down, but after its first wait (it is starting).
    expect({ tag: failed._tag, message: failed.message, starting: (failed as { starting?: boolean }).starting }).toEqual({
      tag: "Unreachable",
      message: `${url} answered 503: svc serve is starting (it reads its journal): call again in a moment`,
      starting: true
    })
  })

  it("says an expired or not yet valid pinned certificate as such, and leaves other errors as they are", () => {
    const coded = (code: string) => Object.assign(new Error("x"), { code })
    expect(certificateProblem(coded("CERT_HAS_EXPIRED"))).toMatch(/^the owner's certificate, the one this worker pins, has expired/)
    expect(certificateProblem(coded("CERT_NOT_YET_VALID"))).toMatch(/not valid yet \(x; this machine's time is .*\): this machine's clock or the owner's is wrong by more than a day$/)
    expect(certificateProblem(coded("ECONNREFUSED"))).toBeUndefined()
  })
})

describe("the worker's client and an owner that does not answer (stopped with SIGSTOP)", () => {
  effectIt.effect("gives each call up after its own time from when it was made, however many are in flight: 15 s, a claim its wait and 25 s", () =>
    Effect.gen(function* () {
      const home = join(tempDir("svc-client-"), "owner")
      const tls = yield* Effect.promise(() => loadOrCreate(home))
      // Takes connections and requests, answers nothing.
      const server = createServer({ cert: tls.cert, key: tls.key }, () => {})
      servers.push(server)
      yield* Effect.promise(() => new Promise<void>((r) => server.listen(0, "127.0.0.1", r)))
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
      const pinned = { url, fingerprint: tls.fingerprint, certificate: tls.cert }
      const agent = makeAgent(pinned)
      // More calls at once than the 4 connections the agent used to allow: none waits for another's.
      const beats = yield* Effect.forEach(Array.from({ length: 6 }), () => Effect.fork(Effect.flip(callOwner(pinned, agent, "svc_wk_x", { kind: "heartbeat", fence: 1, running: [] }))))
      const claim = yield* Effect.fork(Effect.flip(callOwner(pinned, agent, "svc_wk_x", { kind: "claim", fence: 1, waitSeconds: 20 })))
      expect(answerWithinMs({ kind: "claim", fence: 1, waitSeconds: 20 })).toBe(45_000)
      yield* TestClock.adjust("14999 millis")
      for (const b of beats) expect(b.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 millis")
      for (const b of beats) expect((yield* Fiber.join(b)).message).toBe(`${url}: no answer within 15 s`)
      expect(claim.unsafePoll()).toBeNull()
      yield* TestClock.adjust("30 seconds")
      expect((yield* Fiber.join(claim)).message).toBe(`${url}: no answer within 45 s`)
      agent.destroy()
    })
  )
})

describe("the worker's client and an address that takes connections and never completes a TLS handshake", () => {
  it("ends the connection after its handshake time, failing the call saying so: a call given up left it open for as long as the other end did", async () => {
    // A plain TCP server (what a test that held the owner's port put there; an owner stopped
    // with SIGSTOP is the same to a client: the kernel takes the connection, nothing answers).
    const opened: Array<Socket> = []
    let closed = 0
    const silent = createNetServer((socket) => {
      opened.push(socket)
      // Reads (and drops) what comes, so that the client's end is seen.
      socket.resume()
      socket.on("close", () => closed++)
    })
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r))
    try {
      const home = join(tempDir("svc-client-"), "owner")
      const tls = await loadOrCreate(home)
      const url = `https://127.0.0.1:${(silent.address() as { port: number }).port}`
      const pinned = { url, fingerprint: tls.fingerprint, certificate: tls.cert }
      const agent = makeAgent(pinned, 300)
      expect(HANDSHAKE_WITHIN_MS).toBe(10_000)
      const failed = await Effect.runPromise(Effect.flip(callOwner(pinned, agent, "svc_wk_x", { kind: "heartbeat", fence: 1, running: [] })))
      expect(failed.message).toBe(`${url}: no TLS handshake within 0.3 s`)
      // Ended by the client: the server's side of it is closed, and closing the server is not held up.
      await vi.waitFor(() => expect(closed).toBe(1), { timeout: 5_000 })
      expect(opened).toHaveLength(1)
      agent.destroy()
    } finally {
      for (const s of opened) s.destroy()
      await new Promise((r) => silent.close(r))
    }
  })
})

describe("the worker's client and an owner whose certificate changed", () => {
  /**
   * The route (its real handler, answering succession questions from `steps`) behind the
   * certificate `served`; every call's Authorization header and kind recorded.
   */
  const routeWith = async (served: { readonly cert: string; readonly key: string; readonly fingerprint: string }, steps: ReadonlyArray<SuccessionStep> | undefined) => {
    const owner = { answerNow: () => ({ kind: "ack", stop: [], newCredential: null }), handle: () => Effect.die(new Error("not here")) }
    const runtime = await Effect.runPromise(Effect.scoped(Layer.toRuntime(Layer.succeed(Owner, owner as unknown as Owner["Type"]))))
    const handler = makeHandler(runtime, steps === undefined ? undefined : { steps, current: served.fingerprint })
    const heard: Array<{ readonly authorization: string | undefined; readonly kind: string }> = []
    const server = createRouteServer({ cert: served.cert, key: served.key, host: "127.0.0.1", port: 0 }, (req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => heard.push({ authorization: req.headers.authorization, kind: (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { kind: string }).kind }))
      handler(req, res)
    })
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, heard }
  }
  const heartbeat = { kind: "heartbeat" as const, fence: 1, running: [] }

  it("follows a change signed with the pinned certificate's key: asked with no credential, pinned anew, saved, and the call made again", async () => {
    const before = await loadOrCreate(join(tempDir("svc-client-"), "before"))
    const after = await loadOrCreate(join(tempDir("svc-client-"), "after"))
    const route = await routeWith(after, [signStep(before, after.cert, new Date())])
    const saved: Array<string> = []
    const caller = followingCaller({ url: route.url, fingerprint: before.fingerprint, certificate: before.cert }, (next) => Effect.sync(() => void saved.push(next.fingerprint)))
    // Calls meeting the change at once follow it once.
    const answers = await Effect.runPromise(Effect.all([caller.call("svc_wk_x", heartbeat), caller.call("svc_wk_x", heartbeat)], { concurrency: "unbounded" }))
    expect(answers.map((a) => a.kind)).toEqual(["ack", "ack"])
    expect(saved).toEqual([after.fingerprint])
    expect(caller.pinned()).toEqual({ url: route.url, fingerprint: after.fingerprint, certificate: after.cert })
    // The question went without the credential; the calls with it only to the certificate followed.
    expect(route.heard).toEqual([
      { authorization: undefined, kind: "succession" },
      { authorization: "Bearer svc_wk_x", kind: "heartbeat" },
      { authorization: "Bearer svc_wk_x", kind: "heartbeat" }
    ])
    caller.close()
  }, 30_000)

  it("does not follow another installation's certificate, nor changes not signed by the pinned key: the call fails saying why, and no credential is sent", async () => {
    const pinned = await loadOrCreate(join(tempDir("svc-client-"), "pinned"))
    const other = await loadOrCreate(join(tempDir("svc-client-"), "other"))
    // An address that knows no change (an owner that made itself a new certificate, or another installation).
    const none = await routeWith(other, undefined)
    const caller = followingCaller({ url: none.url, fingerprint: pinned.fingerprint, certificate: pinned.cert }, () => Effect.die(new Error("not saved")))
    const failed = await Effect.runPromise(Effect.flip(caller.call("svc_wk_x", heartbeat)))
    expect({ tag: failed._tag, message: failed.message }).toEqual({
      tag: "Unreachable",
      message: `${none.url}: it presented another certificate than the one pinned at join: not the owner that invited this worker, or one that made itself a new certificate without signing the change (then join again with a new token from it); asked for a change signed by the pinned certificate's key: it offered no change signed by the pinned certificate's key`
    })
    caller.close()
    // One that claims a change from the pinned certificate, signed with its own key.
    const forged = await routeWith(other, [{ ...signStep(other, other.cert, new Date()), from: pinned.fingerprint }])
    const fooled = followingCaller({ url: forged.url, fingerprint: pinned.fingerprint, certificate: pinned.cert }, () => Effect.die(new Error("not saved")))
    expect((await Effect.runPromise(Effect.flip(fooled.call("svc_wk_x", heartbeat)))).message).toMatch(
      new RegExp(`; asked for a change signed by the pinned certificate's key: change 1 of 1 \\(to sha256 ${other.fingerprint}\\) is not signed by the key of the certificate before it$`)
    )
    fooled.close()
    expect([...none.heard, ...forged.heard]).toEqual([
      { authorization: undefined, kind: "succession" },
      { authorization: undefined, kind: "succession" }
    ])
  }, 30_000)

  it("reads at most 4 MiB of an answer about changes of certificate: an endless one is cut, and nothing is followed", async () => {
    const pinned = await loadOrCreate(join(tempDir("svc-client-"), "pinned"))
    const other = await loadOrCreate(join(tempDir("svc-client-"), "other"))
    let sent = 0
    const server = createServer({ cert: other.cert, key: other.key }, (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      const chunk = Buffer.alloc(64 * 1024, 32)
      const more = () => {
        while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length
        if (sent < 64 * 1024 * 1024) res.once("drain", more)
      }
      res.write('{"kind":"succession","steps":[')
      more()
    })
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
    const caller = followingCaller({ url, fingerprint: pinned.fingerprint, certificate: pinned.cert }, () => Effect.die(new Error("not saved")))
    const failed = await Effect.runPromise(Effect.flip(caller.call("svc_wk_x", { kind: "heartbeat", fence: 1, running: [] })))
    caller.close()
    expect(failed.message).toMatch(/; asked for a change signed by the pinned certificate's key: its answer about its changes of certificate is over 4 MiB$/)
    expect(sent).toBeLessThan(64 * 1024 * 1024)
  }, 30_000)

  it("fetches the certificate of an owner at an IPv6 literal address (its brackets were looked up as a name)", async () => {
    const tls = await loadOrCreate(join(tempDir("svc-client-"), "v6"))
    const server = createServer({ cert: tls.cert, key: tls.key }, (_req, res) => res.end("{}"))
    servers.push(server)
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false))
      server.listen(0, "::1", () => resolve(true))
    })
    // A machine without IPv6 loopback has nothing to test here.
    if (!listening) return
    const url = `https://[::1]:${(server.address() as { port: number }).port}`
    expect(await fetchPinnedCertificate(url, tls.fingerprint)).toBe(new X509Certificate(tls.cert).toString())
  }, 30_000)
})
