/**
 * The admin API the CLI uses to reach the running `svc serve`: HTTP over a Unix socket,
 * `$SVC_HOME/admin.sock`, mode 0600. Only the user who runs svc (and root) can connect, so no
 * operator secret is needed, and nothing of it is reachable from the network (docs/operations.md).
 */
import * as fsSync from "node:fs"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as net from "node:net"
import * as nodePath from "node:path"
import { currentUid } from "../PrivateFiles.js"

const pathIn = (home: string) => nodePath.join(home, "admin.sock")

/**
 * The longest Unix socket path the system takes (its `sun_path` less the final NUL). A longer one
 * is not refused by Node but cut short: the runtime would listen, and the CLI connect, at another
 * path (maybe another home's socket).
 */
export const SOCKET_PATH_MAX = process.platform === "linux" ? 107 : 103

export class SocketPathTooLong extends Error {}

/** Why this home's admin socket cannot be used, or null: a path longer than the system takes. */
export const socketPathProblem = (home: string): string | null => {
  const path = pathIn(home)
  const bytes = Buffer.byteLength(path)
  return bytes <= SOCKET_PATH_MAX
    ? null
    : `the admin socket ${path} would be ${bytes} bytes long, and a Unix socket path is at most ${SOCKET_PATH_MAX} bytes here: set SVC_HOME to a shorter path (a symbolic link to this directory will do)`
}

/**
 * This home's admin socket: every listen and connect takes its path from here, so a path the
 * system would cut short is refused (SocketPathTooLong) before anything uses it.
 */
export const socketPath = (home: string): string => {
  const problem = socketPathProblem(home)
  if (problem !== null) throw new SocketPathTooLong(problem)
  return pathIn(home)
}

/** A body already written as JSON (a large one, made without holding the owner's thread: app/journal/JsonInTurns.ts). */
export class JsonText {
  constructor(readonly text: string) {}
}

export interface AdminRoute {
  readonly method: "GET" | "POST"
  readonly path: string
  /** Answers [status, body]; throws only on a bug. */
  readonly handle: (body: unknown) => Promise<readonly [number, unknown]>
}

/** Whether a runtime answers on this home's admin socket (a stale socket file does not). */
export const runtimeAnswering = async (home: string): Promise<boolean> => answering(socketPath(home))

const answering = (path: string): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(path)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

export class AlreadyRunning extends Error {}

/**
 * An admin call's body at most: well above the largest input a run takes (1 MiB as JSON,
 * Dispatcher), so that an input over that is refused saying its size, not cut and unreadable.
 */
export const MAX_ADMIN_BODY_BYTES = 8 * 1024 * 1024

export const serveAdmin = async (home: string, routes: ReadonlyArray<AdminRoute>): Promise<http.Server> => {
  const path = socketPath(home)
  // One runtime per $SVC_HOME: a second would be a second journal writer.
  if (await answering(path)) throw new AlreadyRunning(`svc serve is already running for ${home}`)
  await fs.rm(path, { force: true })
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (c: Buffer) => {
      size += c.length
      if (size <= MAX_ADMIN_BODY_BYTES) chunks.push(c)
    })
    req.on("end", () => {
      const reply = (status: number, body: unknown) => {
        const text = body instanceof JsonText ? body.text : JSON.stringify(body)
        res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) })
        res.end(text)
      }
      const route = routes.find((r) => r.method === req.method && r.path === (req.url ?? "").split("?")[0])
      if (route === undefined) return reply(404, { code: "not-found", message: `no admin route ${req.method} ${req.url}` })
      // Said as what it is: a body cut at the limit used to read as "not JSON".
      if (size > MAX_ADMIN_BODY_BYTES) {
        return reply(413, { code: "payload-too-large", message: `the request is ${size} bytes, over the ${MAX_ADMIN_BODY_BYTES / 1024 / 1024} MiB an admin call takes (a run's input is at most 1 MiB)` })
      }
      let body: unknown = undefined
      if (chunks.length > 0) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        } catch {
          return reply(400, { code: "bad-request", message: "the body is not JSON" })
        }
      }
      // A caller that gave up before this runtime read its request (the runtime was stopped with
      // SIGSTOP: the CLI gives up after 60 s) has closed its side: the request is not carried
      // out. Its end is read with the request once the runtime runs again, by the next turn.
      setImmediate(() => {
        if (req.socket.readableEnded || req.socket.destroyed) return void res.destroy()
        route.handle(body).then(
          ([status, answer]) => reply(status, answer),
          (e) => reply(500, { code: "internal", message: e instanceof Error ? e.message : String(e) })
        )
      })
    })
  })
  const previous = process.umask(0o177)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(path, () => resolve())
    })
  } finally {
    process.umask(previous)
  }
  try {
    await fs.chmod(path, 0o600)
  } catch (e) {
    // Not left listening: the runtime would stay up behind a socket nobody can reach.
    await new Promise<void>((resolve) => server.close(() => resolve()))
    throw e
  }
  return server
}

export class RuntimeNotRunning extends Error {}
/** The admin socket belongs to another user: not this user's runtime, and not asked. */
export class ForeignSocket extends Error {}

/** One admin call; a missing or dead socket is RuntimeNotRunning. */
export const adminCall = (home: string, method: "GET" | "POST", path: string, body?: unknown, signal?: AbortSignal): Promise<{ readonly status: number; readonly body: unknown }> =>
  new Promise((resolve, reject) => {
    // Thrown here (a path too long), it rejects the call.
    const socket = socketPath(home)
    // A socket another user made (in a home it could write to) would read what is sent, and its
    // answers would be taken for the runtime's: not called.
    const owner = (() => {
      try {
        return fsSync.lstatSync(socket).uid
      } catch {
        return undefined
      }
    })()
    const uid = currentUid()
    if (owner !== undefined && uid !== undefined && owner !== uid) {
      throw new ForeignSocket(`${socket} belongs to uid ${owner}, not to this user (uid ${uid}): it is not this user's svc serve, and nothing was sent to it; run svc as the user that runs svc serve for this $SVC_HOME`)
    }
    const text = body === undefined ? "" : JSON.stringify(body)
    const req = http.request(
      // `signal`: the call given up (a `run --wait` stopped by Ctrl-C) closes its connection, which
      // would keep the process alive until the owner answered (a wait's 25 s).
      { socketPath: socket, method, path, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) }, ...(signal === undefined ? {} : { signal }) },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
          } catch {
            reject(new Error("the runtime answered something that is not JSON"))
          }
        })
      }
    )
    req.on("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "ENOENT"
          ? new RuntimeNotRunning(`svc serve is not running for ${home} (no ${socket})`)
          : e.code === "ECONNREFUSED"
            ? // The socket file a runtime that was killed left behind: nothing listens on it.
              new RuntimeNotRunning(`svc serve is not running for ${home} (nothing answers on ${socket}: the runtime that made it stopped without removing it)`)
            : e
      )
    )
    req.end(text)
  })
