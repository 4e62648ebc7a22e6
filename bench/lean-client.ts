/**
 * A lean HTTP/1.1 client for load generation: a fixed pool of keep-alive TLS connections, one
 * request in flight per connection (no pipelining), requests written as pre-built bytes and
 * answers read by their status line and Content-Length. It sends what `https.request` sends
 * for the same call (method, path, headers, body), at a fraction of its CPU per request, so
 * that on a small machine the generator leaves the cores to the server under test.
 *
 * It understands only what the servers under test answer: `Content-Length` bodies (no chunked
 * encoding), keep-alive. Anything else fails the request and reopens the connection.
 */
import * as tls from "node:tls"
import { X509Certificate } from "node:crypto"

export interface Answer {
  readonly ok: boolean
  readonly status: number
  readonly body: string | undefined
}

interface Waiting {
  readonly bytes: Buffer
  readonly keep: boolean
  readonly done: (a: Answer) => void
}

const HEADER_END = Buffer.from("\r\n\r\n")

/** The bytes of `POST path` with a JSON body and a bearer, as `https.request` would write them. */
export const requestBytes = (host: string, port: number, path: string, authorization: string, body: Buffer): Buffer =>
  Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nauthorization: ${authorization}\r\n` +
        `Host: ${host}:${port}\r\nConnection: keep-alive\r\n\r\n`
    ),
    body
  ])

class Connection {
  private socket: tls.TLSSocket | undefined
  private buffered: Buffer = Buffer.alloc(0)
  private current: Waiting | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly pool: LeanPool,
    private readonly options: tls.ConnectionOptions,
    private readonly timeoutMs: number
  ) {}

  send(w: Waiting): void {
    this.current = w
    if (this.socket === undefined || this.socket.destroyed) this.open()
    this.timer = setTimeout(() => this.fail(), this.timeoutMs)
    this.socket!.write(w.bytes)
  }

  close(): void {
    this.socket?.destroy()
    this.socket = undefined
  }

  private open(): void {
    this.buffered = Buffer.alloc(0)
    const socket = tls.connect(this.options)
    socket.setNoDelay(true)
    socket.on("data", (chunk: Buffer) => this.read(chunk))
    socket.on("error", () => this.fail())
    socket.on("close", () => {
      if (this.socket === socket) this.socket = undefined
      if (this.current !== undefined) this.fail()
    })
    this.socket = socket
  }

  private read(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk])
    const end = this.buffered.indexOf(HEADER_END)
    if (end < 0) return
    const head = this.buffered.toString("latin1", 0, end)
    const status = Number(head.slice(9, 12))
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head)
    if (m === null) return this.fail()
    const total = end + 4 + Number(m[1])
    if (this.buffered.length < total) return
    const w = this.current
    const body = w?.keep === true ? this.buffered.toString("utf8", end + 4, total) : undefined
    this.buffered = this.buffered.length === total ? Buffer.alloc(0) : this.buffered.subarray(total)
    this.finish({ ok: status === 200, status, body })
  }

  private fail(): void {
    this.socket?.destroy()
    this.socket = undefined
    this.finish({ ok: false, status: 0, body: undefined })
  }

  private finish(a: Answer): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    const w = this.current
    this.current = undefined
    if (w === undefined) return
    w.done(a)
    this.pool.next(this)
  }
}

/** Connections to one server trusting only its certificate (pinned by fingerprint, as a worker does). */
export class LeanPool {
  private readonly connections: Array<Connection>
  private readonly idle: Array<Connection>
  private readonly queue: Array<Waiting> = []
  private head = 0

  constructor(port: number, cert: string, size: number, timeoutMs = 10_000) {
    const pinned = new X509Certificate(cert).fingerprint256.replace(/:/g, "").toLowerCase()
    const options: tls.ConnectionOptions = {
      host: "127.0.0.1",
      port,
      ca: cert,
      checkServerIdentity: (_host, c) => (c.fingerprint256.replace(/:/g, "").toLowerCase() === pinned ? undefined : new Error("not the pinned certificate"))
    }
    this.connections = Array.from({ length: size }, () => new Connection(this, options, timeoutMs))
    this.idle = [...this.connections]
  }

  /** Sends `bytes` on the first idle connection, or queues it until one is free. */
  request(bytes: Buffer, keep: boolean, done: (a: Answer) => void): void {
    const w = { bytes, keep, done }
    const c = this.idle.pop()
    if (c !== undefined) c.send(w)
    else this.queue.push(w)
  }

  /** A connection finished its request: it takes the oldest queued one. */
  next(c: Connection): void {
    if (this.head < this.queue.length) {
      const w = this.queue[this.head++]!
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head)
        this.head = 0
      }
      c.send(w)
    } else this.idle.push(c)
  }

  close(): void {
    for (const c of this.connections) c.close()
  }
}
