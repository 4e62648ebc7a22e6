/**
 * The worker's HTTPS client against real loopback servers: a call to an address that answers
 * with another certificate than the pinned one says so, in words, not as OpenSSL's code.
 */
import { createServer, type Server } from "node:https"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { it as effectIt } from "@effect/vitest"
import { afterEach, describe, expect, it } from "vitest"
import { createServer as createRouteServer, startingHandler } from "../../../src/infra/http/WorkerRoute.js"
import { loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"
import { answerWithinMs, callOwner, certificateProblem, makeAgent } from "../../../src/infra/workers/OwnerClient.js"
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
      `${impostor.url}: it presented another certificate than the one pinned at join (TLS: DEPTH_ZERO_SELF_SIGNED_CERT): not the owner that invited this worker, or one that made itself a new certificate (then join again with a new token from it)`
    )
  })

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
    // Unreachable: the link backs off and calls again, as while the owner is down.
    expect({ tag: failed._tag, message: failed.message }).toEqual({
      tag: "Unreachable",
      message: `${url} answered 503: svc serve is starting (it reads its journal): call again in a moment`
    })
  })

  it("says an expired or not yet valid pinned certificate as such, and leaves other errors as they are", () => {
    const coded = (code: string) => Object.assign(new Error("x"), { code })
    expect(certificateProblem(coded("CERT_HAS_EXPIRED"))).toMatch(/^the owner's certificate, the one pinned at join, has expired/)
    expect(certificateProblem(coded("CERT_NOT_YET_VALID"))).toMatch(/not valid yet: check this machine's clock$/)
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
