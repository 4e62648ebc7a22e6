/**
 * `svc serve` as a real child process for end-to-end tests: its own $SVC_HOME, listening on
 * loopback port 0, started and awaited by its "owner route https://..." line, stopped with
 * SIGTERM. Plus what the tests need around it: a transcript of everything any process printed
 * (for secret greps), a raw HTTPS client for the worker route, a recording TLS proxy that sits
 * between workers and their owner, and polling.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import * as https from "node:https"
import { createServer as createNetServer, type AddressInfo } from "node:net"
import { join } from "node:path"
import type { Readable, Writable } from "node:stream"
import { SVC_BIN, svc, type SvcResult } from "./svc.js"

/** Everything processes printed and servers answered during a test file: grepped for secrets. */
export class Transcript {
  readonly entries: Array<{ readonly source: string; readonly text: string }> = []
  add(source: string, text: string): void {
    if (text !== "") this.entries.push({ source, text })
  }
  /** Entries holding `needle`, by source (for a readable failure message). */
  find(needle: string, except: (e: { readonly source: string; readonly text: string }) => boolean = () => false): Array<string> {
    return this.entries.filter((e) => !except(e) && e.text.includes(needle)).map((e) => e.source)
  }
}

/** Runs `svc ARGS` with this home, recording stdout and stderr. */
export const svcIn = async (transcript: Transcript, home: string, args: ReadonlyArray<string>, cwd = home): Promise<SvcResult> => {
  const result = await svc(args, { cwd, home })
  transcript.add(`svc ${args[0] ?? ""} ${args[1] ?? ""} (stdout)`, result.stdout)
  transcript.add(`svc ${args[0] ?? ""} ${args[1] ?? ""} (stderr)`, result.stderr)
  return result
}

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** Milliseconds from SIGTERM to exit (0 when it had exited before). */
  readonly ms: number
}

export interface ServeProcess {
  readonly name: string
  readonly home: string
  /** The address printed on the "owner route" line (the public URL when one was given). */
  readonly url: string
  /** Where the owner route really listens: https://127.0.0.1:PORT */
  readonly listenUrl: string
  readonly pid: number
  readonly startedAt: number
  readonly output: () => string
  readonly exited: () => boolean
  /** SIGTERM, then wait for the exit (SIGKILL after `graceMs`: code null). */
  readonly stop: (graceMs?: number) => Promise<Exit>
}

const live = new Set<ServeProcess>()

export const startServe = (
  name: string,
  home: string,
  transcript: Transcript,
  options: { readonly publicUrl?: string; readonly env?: Record<string, string>; readonly args?: ReadonlyArray<string>; readonly openFiles?: number; readonly listen?: string } = {}
): Promise<ServeProcess> => {
  if (!existsSync(SVC_BIN)) throw new Error(`${SVC_BIN} is missing: run npm run build (npm test builds first)`)
  const args = [SVC_BIN, "serve", "--listen", options.listen ?? "127.0.0.1:0", ...(options.publicUrl === undefined ? [] : ["--public-url", options.publicUrl]), ...(options.args ?? [])]
  const startedAt = Date.now()
  // Under a limit of open files of its own (`ulimit -n`): through sh, which execs node (the same pid).
  const [program, programArgs] =
    options.openFiles === undefined ? [process.execPath, args] : ["sh", ["-c", `ulimit -n ${options.openFiles} && exec "$0" "$@"`, process.execPath, ...args]]
  const child: ChildProcessByStdio<Writable, Readable, Readable> = spawn(program, programArgs, {
    cwd: home,
    env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home, ...options.env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end()
  let stdout = ""
  let stderr = ""
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  const exitWaiters: Array<() => void> = []
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
  child.on("exit", (code, signal) => {
    exit = { code, signal }
    for (const w of exitWaiters.splice(0)) w()
  })
  let recorded = false
  const record = () => {
    if (recorded) return
    recorded = true
    transcript.add(`svc serve ${name} (stdout)`, stdout)
    transcript.add(`svc serve ${name} (stderr)`, stderr)
  }
  const waitExit = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (exit !== undefined) return resolve(true)
      const timer = setTimeout(() => resolve(false), ms)
      exitWaiters.push(() => {
        clearTimeout(timer)
        resolve(true)
      })
    })

  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer)
      child.kill("SIGKILL")
      reject(new Error(`svc serve ${name} ${why}\nstdout: ${stdout}\nstderr: ${stderr}`))
    }
    const timer = setTimeout(() => fail("printed no owner route line within 15 s"), 15_000)
    const early = () => fail("exited before it was ready")
    const onData = () => {
      const m = /svc serve: owner route (https:\/\/\S+)\/api\/worker \(listening on (\S+):(\d+)\)/.exec(stdout)
      if (m === null) return
      clearTimeout(timer)
      child.stdout.off("data", onData)
      child.off("exit", early)
      const proc: ServeProcess = {
        name,
        home,
        url: m[1]!,
        listenUrl: `https://${m[2]!}:${m[3]!}`,
        pid: child.pid!,
        startedAt,
        output: () => stdout + stderr,
        exited: () => exit !== undefined,
        stop: async (graceMs = 8_000) => {
          const t0 = Date.now()
          const was = exit !== undefined
          if (!was) child.kill("SIGTERM")
          const done = await waitExit(graceMs)
          const ms = was ? 0 : Date.now() - t0
          if (!done) {
            child.kill("SIGKILL")
            await waitExit(5_000)
            live.delete(proc)
            record()
            return { code: null, signal: "SIGKILL", ms }
          }
          live.delete(proc)
          record()
          return { code: exit!.code, signal: exit!.signal, ms }
        }
      }
      live.add(proc)
      resolve(proc)
    }
    child.stdout.on("data", onData)
    child.on("exit", early)
  })
}

/** The serve processes still running: said when a test fails (test/support/on-failure.ts). */
export const liveServes = (): ReadonlyArray<ServeProcess> => [...live]

/** Cleanup for afterAll/afterEach: stops every serve process still running (SIGKILL if it hangs). */
export const stopAllServes = async (): Promise<void> => {
  await Promise.all([...live].map((p) => p.stop(5_000)))
}

export interface RouteAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly text: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown
}

export interface RouteCall {
  readonly method?: string
  readonly path?: string
  /** The whole Authorization header; `bearer` builds "Bearer X". */
  readonly authorization?: string
  readonly bearer?: string
  /** Default application/json; null sends no Content-Type. */
  readonly contentType?: string | null
  readonly body?: string | Buffer
  /** Send the body chunked, without Content-Length. */
  readonly chunked?: boolean
}

/** Trusts exactly the owner's certificate, whatever name the URL carries (as svc's own client). */
export const ownerCa = (ownerHome: string): string => readFileSync(join(ownerHome, "tls", "owner.crt"), "utf8")

/** One raw HTTPS call: the test acting as a (possibly misbehaving) client of the route. */
export const callRoute = (baseUrl: string, ca: string, call: RouteCall): Promise<RouteAnswer> =>
  new Promise((resolve, reject) => {
    const u = new URL(call.path ?? "/api/worker", baseUrl)
    const body = call.body === undefined ? undefined : typeof call.body === "string" ? Buffer.from(call.body) : call.body
    const headers: Record<string, string | number> = {}
    const contentType = call.contentType === undefined ? "application/json" : call.contentType
    if (contentType !== null) headers["content-type"] = contentType
    if (call.authorization !== undefined) headers["authorization"] = call.authorization
    else if (call.bearer !== undefined) headers["authorization"] = `Bearer ${call.bearer}`
    if (body !== undefined && call.chunked !== true) headers["content-length"] = body.length
    const req = https.request(
      u,
      { method: call.method ?? "POST", headers, ca, checkServerIdentity: () => undefined, agent: false, timeout: 20_000 },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let json: unknown = undefined
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
        })
        res.on("error", reject)
      }
    )
    req.on("timeout", () => req.destroy(new Error(`${u.href}: no answer within 20 s`)))
    req.on("error", reject)
    if (body === undefined) req.end()
    else if (call.chunked === true) {
      // Several writes without Content-Length: Transfer-Encoding: chunked.
      for (let i = 0; i < body.length; i += 16 * 1024) req.write(body.subarray(i, i + 16 * 1024))
      req.end()
    } else req.end(body)
  })

/** One exchange seen by the recording proxy. */
export interface Exchange {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly request: string
  readonly status: number
  readonly answer: string
}

export interface RecordingProxy {
  readonly url: string
  readonly exchanges: Array<Exchange>
  /** Forward to the owner (its real address), presenting the owner's own certificate. */
  readonly target: (ownerListenUrl: string, ownerHome: string) => void
  /**
   * The next call whose body `matches` reaches the owner, and its answer is recorded and lost:
   * the caller's connection is cut instead (a network that broke while the answer was on its way).
   */
  readonly loseNextAnswer: (matches: (body: string) => boolean) => void
  readonly close: () => Promise<void>
}

/**
 * A TLS-terminating proxy that records every call a worker makes and every answer the owner
 * sends. It presents the owner's own certificate (so the worker's pin holds): start the owner
 * with `--public-url` set to the proxy's URL, then call `target` once the owner has its
 * certificate.
 */
export const startRecordingProxy = async (): Promise<RecordingProxy> => {
  const exchanges: Array<Exchange> = []
  let upstream: { url: string; ca: string } | undefined
  let lose: ((body: string) => boolean) | undefined
  const agent = new https.Agent({ keepAlive: true, maxSockets: 16 })
  const server = https.createServer({}, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      if (upstream === undefined) {
        res.writeHead(503).end()
        return
      }
      const request = Buffer.concat(chunks)
      const lost = lose !== undefined && lose(request.toString("utf8"))
      if (lost) lose = undefined
      const headers = { ...req.headers }
      delete headers["host"]
      delete headers["connection"]
      const out = https.request(
        new URL(req.url ?? "/", upstream.url),
        { method: req.method ?? "GET", headers, ca: upstream.ca, checkServerIdentity: () => undefined, agent },
        (answer) => {
          const back: Array<Buffer> = []
          answer.on("data", (c: Buffer) => back.push(c))
          answer.on("end", () => {
            const text = Buffer.concat(back)
            exchanges.push({
              at: Date.now(),
              method: req.method ?? "",
              path: req.url ?? "",
              authorization: req.headers["authorization"],
              request: request.toString("utf8"),
              status: answer.statusCode ?? 0,
              answer: text.toString("utf8")
            })
            if (lost) {
              res.socket?.destroy()
              return
            }
            const h = { ...answer.headers }
            delete h["connection"]
            delete h["keep-alive"]
            delete h["transfer-encoding"]
            h["content-length"] = String(text.length)
            res.writeHead(answer.statusCode ?? 502, h)
            res.end(text)
          })
        }
      )
      out.on("error", () => res.destroy())
      out.end(request)
    })
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  return {
    url: `https://127.0.0.1:${port}`,
    exchanges,
    target: (ownerListenUrl, ownerHome) => {
      const cert = ownerCa(ownerHome)
      server.setSecureContext({ cert, key: readFileSync(join(ownerHome, "tls", "owner.key"), "utf8") })
      upstream = { url: ownerListenUrl, ca: cert }
    },
    loseNextAnswer: (matches) => {
      lose = matches
    },
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy()
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/** Polls `read` every `everyMs` until `done` holds; the value and when it first held. */
export function waitFor<A, B extends A>(
  what: string,
  read: () => Promise<A>,
  done: (a: A) => a is B,
  options: { readonly timeoutMs: number; readonly everyMs: number }
): Promise<{ readonly value: B; readonly at: number }>
export function waitFor<A>(
  what: string,
  read: () => Promise<A>,
  done: (a: A) => boolean,
  options: { readonly timeoutMs: number; readonly everyMs: number }
): Promise<{ readonly value: A; readonly at: number }>
export async function waitFor<A>(
  what: string,
  read: () => Promise<A>,
  done: (a: A) => boolean,
  options: { readonly timeoutMs: number; readonly everyMs: number }
): Promise<{ readonly value: A; readonly at: number }> {
  const deadline = Date.now() + options.timeoutMs
  let last: A | undefined
  for (;;) {
    last = await read()
    const at = Date.now()
    if (done(last)) return { value: last, at }
    if (at > deadline) throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(last)}`)
    await new Promise((r) => setTimeout(r, options.everyMs))
  }
}

/**
 * A free loopback address below the ephemeral range (`HOST:PORT`), for a runtime that is restarted
 * on the address it had: a port that listen(0) hands out, freed by a stop, may be given to a
 * server of another test file running alongside before the restart takes it again.
 */
export const portBelowEphemeral = async (): Promise<string> => {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const probe = createNetServer()
      probe.once("error", () => resolve(false))
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)))
    })
    if (free) return `127.0.0.1:${port}`
  }
}
