/** The worker route's server: the cap on connections held at once, read from the limit of open files. */
import * as http from "node:http"
import * as tls from "node:tls"
import type { AddressInfo } from "node:net"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { Owner } from "../../../src/app/workers/Owner.js"
import { connectionCapFor, MAX_CONNECTIONS_CEILING, MAX_CONNECTIONS_FLOOR, MAX_CONNECTIONS_UNKNOWN_LIMIT, openFilesLimitIn } from "../../../src/infra/http/ConnectionCap.js"
import { createServer, makeHandler, MAX_BODY_DEPTH } from "../../../src/infra/http/WorkerRoute.js"
import { loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"
import { capturingLogs } from "../../support/logs.js"
import { tempDir } from "../../support/svc.js"

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`

describe("the worker route's connection cap", () => {
  it("is half the soft limit of open files less 64, within 16 and 8,192; 4,096 where the limit is unknown", () => {
    expect(openFilesLimitIn(LIMITS)).toBe(20_000)
    expect(openFilesLimitIn(LIMITS.replace("20000               ", "unlimited           "))).toBeUndefined()
    expect(openFilesLimitIn("")).toBeUndefined()
    expect(connectionCapFor(20_000)).toBe(MAX_CONNECTIONS_CEILING)
    expect(connectionCapFor(4_096)).toBe(2_016)
    expect(connectionCapFor(1_024)).toBe(480)
    // A low limit keeps what the runtime holds at rest, and half the rest (it was at least 256:
    // under 64 the route took them all; then half of 40, with 29 held at rest, starved the CLI).
    expect(connectionCapFor(128)).toBe(32)
    expect(connectionCapFor(64)).toBe(MAX_CONNECTIONS_FLOOR)
    expect(connectionCapFor(undefined)).toBe(MAX_CONNECTIONS_UNKNOWN_LIMIT)
  })

  it("closes a connection past the cap as it arrives, and takes one again once one has gone", async () => {
    const material = await loadOrCreate(tempDir("svc-route-cap-"))
    const server = createServer({ cert: material.cert, key: material.key, host: "127.0.0.1", port: 0, maxConnections: 2 }, (_req, res) => res.end("ok"))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    /** A TLS connection: "secure" once its handshake is done, "closed" if the server closed it first. */
    const connect = () =>
      new Promise<{ readonly socket: tls.TLSSocket; readonly outcome: "secure" | "closed" }>((resolve) => {
        const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false })
        socket.once("secureConnect", () => resolve({ socket, outcome: "secure" }))
        socket.once("error", () => resolve({ socket, outcome: "closed" }))
        socket.once("close", () => resolve({ socket, outcome: "closed" }))
      })
    try {
      const first = await connect()
      const second = await connect()
      expect([first.outcome, second.outcome]).toEqual(["secure", "secure"])
      const third = await connect()
      expect(third.outcome).toBe("closed")
      first.socket.destroy()
      // The server sees the close a moment later.
      let again = await connect()
      for (let i = 0; again.outcome !== "secure" && i < 50; i++) {
        await new Promise((r) => setTimeout(r, 20))
        again = await connect()
      }
      expect(again.outcome).toBe("secure")
      second.socket.destroy()
      again.socket.destroy()
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

describe("a bug on the worker route", () => {
  it("is answered 500 without details, and said in the runtime's log with its level (it was written bare to stderr)", async () => {
    const logs: Array<string> = []
    // An owner whose handling of a call fails as a bug would.
    const owner = { answerNow: () => undefined, handle: () => Effect.die(new Error("boom")) }
    const runtime = await Effect.runPromise(Effect.scoped(Layer.toRuntime(Layer.merge(Layer.succeed(Owner, owner as unknown as Owner["Type"]), capturingLogs(logs)))))
    const server = http.createServer(makeHandler(runtime))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    const answered = await fetch(`http://127.0.0.1:${port}/api/worker`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer x" },
      body: JSON.stringify({ kind: "claim", fence: 1, waitSeconds: 0 })
    })
    expect(answered.status).toBe(500)
    expect(await answered.json()).toEqual({ code: "internal", message: "the owner failed to handle this call" })
    server.close()
    expect(logs).toEqual(["ERROR internal error on /api/worker (a bug of svc's; the call was answered 500): Error: boom"])
  })
})

describe("bodies no check foresaw", () => {
  /** A route over an owner whose quick answer is `answerNow` (one that throws: a bug); it must not stop the process. */
  const serving = async (answerNow: () => unknown) => {
    const logs: Array<string> = []
    const owner = { answerNow, handle: () => Effect.die(new Error("not reached")) }
    const runtime = await Effect.runPromise(Effect.scoped(Layer.toRuntime(Layer.merge(Layer.succeed(Owner, owner as unknown as Owner["Type"]), capturingLogs(logs)))))
    const server = http.createServer(makeHandler(runtime))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    const post = async (body: string) => {
      const r = await fetch(`http://127.0.0.1:${port}/api/worker`, { method: "POST", headers: { "content-type": "application/json" }, body })
      return { status: r.status, body: (await r.json()) as { code: string; message: string } }
    }
    return { logs, post, close: () => server.close() }
  }

  it("a bug thrown outside a fiber is answered 500 and logged, and the route goes on answering", async () => {
    const route = await serving(() => {
      throw new TypeError("boom")
    })
    expect(await route.post(JSON.stringify({ kind: "claim", fence: 1, waitSeconds: 0 }))).toEqual({ status: 500, body: { code: "internal", message: "the owner failed to handle this call" } })
    expect(await route.post(JSON.stringify({ kind: "reboot" }))).toMatchObject({ status: 400, body: { code: "bad-request" } })
    route.close()
    expect(route.logs).toEqual(["ERROR internal error on /api/worker (a bug of svc's; the call was answered 500): TypeError: boom"])
  })

  it("a kind every object inherits, and a value nested too deep where a string is expected, are refused as bad requests", async () => {
    const route = await serving(() => undefined)
    for (const kind of ["constructor", "__proto__", "toString", "valueOf", "hasOwnProperty"]) {
      const answer = await route.post(JSON.stringify({ kind }))
      expect(answer, kind).toMatchObject({ status: 400, body: { code: "bad-request", message: expect.stringMatching(/^the body is not a worker message: kind: Expected "join" \| "hello"/) } })
    }
    // Not an object: one sentence (the decoder's message spelt out every message's type, 1.9 KB).
    for (const [body, what] of [["null", "null"], ["1", "a number"], ['"claim"', "a string"], ["[]", "a list"]] as const) {
      expect(await route.post(body), body).toEqual({
        status: 400,
        body: { code: "bad-request", message: `the body is not a worker message: it must be a JSON object with a kind (join, hello, advertise, heartbeat, claim, decline, report, bye, leave), not ${what}` }
      })
    }
    // The body itself is one level: a name nested n deep makes a body n + 1 deep.
    const deep = (n: number) => `{"kind":"join","name":${"[".repeat(n)}${"]".repeat(n)}}`
    const deepest = await route.post(deep(MAX_BODY_DEPTH - 1))
    // Taken as deep as a report's result may nest, and its value quoted cut short.
    expect(deepest).toMatchObject({ status: 400, body: { code: "bad-request", message: expect.stringMatching(/^the body is not a worker message: name: Expected string, actual \[{100}.*…$/) } })
    expect(deepest.body.message.length).toBeLessThan(400)
    for (const n of [MAX_BODY_DEPTH, 5_000, 30_000]) {
      expect(await route.post(deep(n)), `${n}`).toEqual({
        status: 400,
        body: { code: "bad-request", message: `the body nests more than ${MAX_BODY_DEPTH} levels deep (objects and arrays within each other); at most ${MAX_BODY_DEPTH} are taken` }
      })
    }
    route.close()
    expect(route.logs).toEqual([])
  })
})
