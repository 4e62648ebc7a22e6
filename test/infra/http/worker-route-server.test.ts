/** The worker route's server: the cap on connections held at once, read from the limit of open files. */
import * as tls from "node:tls"
import type { AddressInfo } from "node:net"
import { describe, expect, it } from "vitest"
import { connectionCapFor, MAX_CONNECTIONS_CEILING, MAX_CONNECTIONS_FLOOR, MAX_CONNECTIONS_UNKNOWN_LIMIT, openFilesLimitIn } from "../../../src/infra/http/ConnectionCap.js"
import { createServer } from "../../../src/infra/http/WorkerRoute.js"
import { loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"
import { tempDir } from "../../support/svc.js"

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`

describe("the worker route's connection cap", () => {
  it("is half the soft limit of open files, within 256 and 8,192; 4,096 where the limit is unknown", () => {
    expect(openFilesLimitIn(LIMITS)).toBe(20_000)
    expect(openFilesLimitIn(LIMITS.replace("20000               ", "unlimited           "))).toBeUndefined()
    expect(openFilesLimitIn("")).toBeUndefined()
    expect(connectionCapFor(20_000)).toBe(MAX_CONNECTIONS_CEILING)
    expect(connectionCapFor(4_096)).toBe(2_048)
    expect(connectionCapFor(1_024)).toBe(512)
    expect(connectionCapFor(100)).toBe(MAX_CONNECTIONS_FLOOR)
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
