/**
 * bench/dispatch: jobs per second through the owner's runs (submit, placement, claim, report)
 * over the real HTTPS worker route, by many simulated workers running a no-op activity; the
 * latency from a submission to the answer of a claim already waiting for it (p50/p99); beside a
 * bare `node:https` server's request rate, measured in the same run with the same client.
 *
 *   npx vite-node bench/dispatch.ts [--workers 100] [--window 200] [--rounds 3]
 *       [--round-seconds 5] [--samples 500]
 *       [--profile DIR]   (CPU profiles of the owner: the first counted saturation round, the latency phase)
 *       [--trace]         (the latency phase step by step: the owner's journal appends timed per run)
 *   npx vite-node bench/dispatch.ts --quick      (50 workers, 2 rounds of 3 s, 200 samples)
 *
 * Processes (the machine has 2 cores): the owner runs in a child process (this script with
 * `--role owner`), the bare server in another (`--role bare`); this process is the simulated
 * workers and the load generator. A server's CPU time is read from the child itself.
 *
 * Owner: the stack `svc serve` wires (SQLite journal file with the real migrations, live
 * projections, checkpoint schedule, `Owner.layerWithRuns` with the Dispatcher, node:crypto
 * hashing and entropy, ChildExecutor, FileRunFiles) on a temporary SVC_HOME, served by
 * WorkerRoute.createServer + makeHandler. Its OwnerHost has no bags: `resolve` answers one
 * fixed job, `bench:noop@1.0.0` (node executor, remote-eligible, `requires.labels: [pool=bench]`,
 * no input or output schema); the owner's own labels lack `pool=bench`, so placement never keeps
 * a run on the owner: every run goes to a worker.
 * Submission: inside the owner process, through the Dispatcher service (what `svc runs submit`
 * calls), driven by IPC messages from this process: no extra HTTP endpoint, so the only HTTP the
 * owner serves is the worker route. Saturation: a submit loop keeps `--window` runs in flight:
 * it submits `--window` runs at once, then one more for each report committed (gathered per
 * event-loop turn, so their commits share the journal's group commit). It learns of reports
 * from a thin decorator around the real Journal adapter (one Effect.tap per append), not by
 * polling: a 1 ms polling timer alone cost ~80-240 us of CPU per wake-up on this VM. Latency:
 * one submission per IPC message.
 * Each run's input is `{ t, n }`: `t` the owner's clock (performance.timeOrigin + now()) just
 * before `submit`, `n` a sequence number.
 * Workers: N simulated workers, each joined over the route with its own invite (tokens minted by
 * `Owner.invite` in the owner process), then hello and an advertisement (capacity 4, labels
 * `pool=bench`, capabilities `node`, the job's address and digest as held artifact), refreshed
 * every 4 s (staggered). Each loops: claim (waitSeconds 5) -> on `work`, report ok with result
 * `{}` at once, asking for the next attempt placed on it (`claimNext`, as an svc worker whose
 * slots are busy does: docs/protocol.md) -> run the attempt handed back, or claim again; on
 * `no-work`, claim again. Each round prints the calls per job and how many attempts came back
 * with a report. One https.Agent with keep-alive and a
 * socket for every call that can be in flight (a claim and an advertisement per worker), trusting
 * the pinned certificate as the worker's agent does.
 * Bare: WorkerRoute.createServer (same certificate, same settings) with a handler that reads the
 * body, JSON.parses it and answers a fixed JSON body of the size of a real `work` answer.
 * Measured closed loop with N requests in flight (one per simulated worker) on its own agent,
 * bodies alternating the size of a real claim and a real report, the same credential header.
 *
 * Phases:
 * - saturation: `--rounds` rounds, each an owner window and a bare window (order flipped every
 *   round). Owner: the submit loop starts; after 1 s warm-up the reports the workers get acked in
 *   `--round-seconds` are counted (jobs/s); then the loop stops and the open runs drain. Bare: N
 *   in flight for `--round-seconds` (requests/s). Rates are medians over rounds.
 * - latency: no load; every worker has a claim waiting. The clocks of the two processes are
 *   compared over IPC (the ping with the shortest round trip; its half is the error bound). Then
 *   `--samples` runs (after 50 not counted), one at a time: submit, the worker's claim is
 *   answered (latency = worker's receipt - `t`, on one clock), it reports, 2 ms pause, next.
 * - afterwards, for reading the results (not targets): one placement's parts in this process
 *   for the bench's fleet (`place`; `decidePlacement`, which builds PlacementDecided unchecked,
 *   beside what the Schema-checked constructor would cost; its JSON), and the disk: bare SQLite commits with the journal's pragmas, paced as the latency phase's.
 * Targets: owner jobs/s >= 0.25 x bare requests/s (a job is at least two requests and several
 * durable commits); latency p50 <= 2 ms and p99 <= 10 ms. Prints PASS/FAIL, exits 1 on FAIL.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { X509Certificate } from "node:crypto"
import v8 from "node:v8"
import vm from "node:vm"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import type * as http from "node:http"
import * as https from "node:https"
import * as inspector from "node:inspector"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import type * as tls from "node:tls"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import { Journal } from "../src/app/journal/Journal.js"
import { Projections } from "../src/app/journal/Projections.js"
import { Dispatcher } from "../src/app/runs/Dispatcher.js"
import { CURRENT_VERSION, PlacementDecided, RunSubmitted, type Envelope } from "../src/domain/journal/Events.js"
import { place, type Candidate } from "../src/domain/placement/Placement.js"
import { activityOf, decidePlacement } from "../src/domain/runs/Decide.js"
import { evolveRuns, initialRuns } from "../src/domain/runs/Runs.js"
import { Owner } from "../src/app/workers/Owner.js"
import type { WorkerRequest } from "../src/app/workers/Protocol.js"
import { createServer, makeHandler, ROUTE } from "../src/infra/http/WorkerRoute.js"
import { layer as journalLayer, payloadOf } from "../src/infra/journal/SqliteJournal.js"
import { storePath } from "../src/infra/journal/StoreFile.js"
import { loadOrCreate } from "../src/infra/tls/OwnerCertificate.js"
import { benchHost, benchOwner, resolvingOnly, workerOnlyJob } from "./owner.js"
import { arg, Database, fmt, median, printMachine } from "./support.js"

const QUICK = process.argv.includes("--quick")
const WORKERS = arg("workers", QUICK ? 50 : 100)
const WINDOW = arg("window", WORKERS * 2)
const ROUNDS = arg("rounds", QUICK ? 2 : 3)
const ROUND_SECONDS = arg("round-seconds", QUICK ? 3 : 5)
const WARM_SECONDS = 1
const SAMPLES = arg("samples", QUICK ? 200 : 500)
const SKIP_SAMPLES = 50
const PAUSE_MS = 2
const CLAIM_WAIT_SECONDS = 5
const ADVERTISE_EVERY_MS = 4_000

const TARGET_RATIO = 0.25
const TARGET_P50_MS = 2
const TARGET_P99_MS = 10

const ADDRESS = "bench:noop@1.0.0"
const DIGEST = `sha256:${"b".repeat(64)}`
const POOL = "pool=bench"

/** One clock for both processes (both read the same system clock at their start). */
const clock = () => performance.timeOrigin + performance.now()

// ---------------------------------------------------------------------------------------------
// Messages between this process and the server processes (IPC)

interface Usage {
  readonly cpuMicros: number
  readonly rss: number
  readonly heapUsed: number
  /** The owner's journal head and store size (0 for the bare server). */
  readonly sequence: number
  readonly storeBytes: number
  readonly open: number
  /** Runs the owner keeps in memory, and settled runs it has forgotten (docs/runs.md, "Runs kept in memory"). */
  readonly kept: number
  readonly forgotten: number
}
interface OwnerReady {
  readonly type: "ready"
  readonly port: number
  readonly home: string
  readonly tokens: ReadonlyArray<string>
}
interface BareReady {
  readonly type: "ready"
  readonly port: number
}
type ToParent =
  | OwnerReady
  | BareReady
  | { readonly type: "usage"; readonly id: number; readonly usage: Usage }
  | { readonly type: "pong"; readonly id: number; readonly clock: number }
  | { readonly type: "load-stopped"; readonly id: number; readonly submitted: number }
  | { readonly type: "drained"; readonly id: number }
  | { readonly type: "profiled"; readonly id: number }
  | { readonly type: "traces"; readonly id: number; readonly traces: ReadonlyArray<Trace> }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "stopped" }
type ToChild =
  | { readonly type: "usage"; readonly id: number; readonly collect?: boolean }
  | { readonly type: "ping"; readonly id: number }
  | { readonly type: "load-start"; readonly window: number }
  | { readonly type: "load-stop"; readonly id: number }
  | { readonly type: "drain"; readonly id: number }
  | { readonly type: "submit"; readonly n: number }
  | { readonly type: "profile-start" }
  | { readonly type: "traces"; readonly id: number }
  | { readonly type: "profile-stop"; readonly id: number; readonly file: string }
  | { readonly type: "stop" }

/** With --trace: when the journal was asked to append each event of a run, and when its commit was done (owner clock). */
interface Trace {
  readonly runId: string
  readonly n: number
  readonly t: number
  readonly appends: ReadonlyArray<{ readonly type: string; readonly asked: number; readonly committed: number }>
}
const TRACE = process.argv.includes("--trace")

const toParent = (message: ToParent) => process.send?.(message)

const listen = (server: https.Server) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  })
const close = (server: https.Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })

const cpuNow = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}

// ---------------------------------------------------------------------------------------------
// The owner process

/** The one job this owner knows: a no-op that only workers (pool=bench) can run. */
const noop = workerOnlyJob(ADDRESS, "noop", DIGEST, POOL, tmpdir())

const ownerChild = async (): Promise<void> => {
  const home = mkdtempSync(join(tmpdir(), "svc-bench-dispatch-"))
  const material = await loadOrCreate(home)
  const server = createServer({ cert: material.cert, key: material.key, host: "127.0.0.1", port: 0 }, () => undefined)
  const port = await listen(server)
  // The real journal adapter, seen through a thin decorator (one Effect.tap per append): it tells
  // the submit loop when a run's report is committed (so the loop needs no polling), and with
  // --trace times each append of the latency phase's runs.
  const appendsOf = new Map<string, Array<Trace["appends"][number]>>()
  const submittedRuns = new Map<string, { n: number; t: number }>()
  let tracing = false
  let onReported: (count: number) => void = () => undefined
  const journal = journalLayer(storePath(home))
  const observedJournal = Layer.merge(
    journal,
    Layer.effect(
      Journal,
      Effect.map(Journal, (j) =>
        Journal.of({
          ...j,
          append: (command) =>
            Effect.suspend(() => {
              const asked = clock()
              return Effect.tap(j.append(command), () =>
                Effect.sync(() => {
                  let reported = 0
                  for (const e of command.events) if (e._tag === "AttemptReported") reported++
                  if (reported > 0) onReported(reported)
                  if (!tracing || !command.stream.startsWith("run-")) return
                  const committed = clock()
                  const runId = command.stream.slice("run-".length)
                  const appends = appendsOf.get(runId) ?? []
                  for (const e of command.events) appends.push({ type: e._tag, asked, committed })
                  appendsOf.set(runId, appends)
                })
              )
            })
        })
      )
    ).pipe(Layer.provide(journal))
  )
  const owner = benchOwner(
    home,
    observedJournal,
    // Not pool=bench: the owner is never eligible for the bench's job.
    benchHost(resolvingOnly(noop)),
    { url: `https://127.0.0.1:${port}`, fingerprint: material.fingerprint }
  )
  let stop: () => void = () => undefined
  const stopped = new Promise<void>((resolve) => (stop = resolve))

  const program = Effect.gen(function* () {
    const runtime = yield* Layer.toRuntime(owner)
    server.removeAllListeners("request")
    server.on("request", makeHandler(runtime))
    const runSync = Runtime.runSync(runtime)
    const runFork = Runtime.runFork(runtime)
    const projections = yield* Effect.provide(Projections, runtime.context)
    const dispatcher = yield* Effect.provide(Dispatcher, runtime.context)
    const service = yield* Effect.provide(Owner, runtime.context)
    const openNow = () => runSync(Effect.map(projections.state, (s) => HashMap.size(s.runs.open)))
    const usage = (): Usage => {
      const m = process.memoryUsage()
      const s = runSync(projections.state)
      return { cpuMicros: cpuNow(), rss: m.rss, heapUsed: m.heapUsed, sequence: s.sequence, storeBytes: statSync(storePath(home)).size, open: HashMap.size(s.runs.open), kept: HashMap.size(s.runs.runs), forgotten: s.runs.forgotten }
    }

    let n = 0
    const submitOne = Effect.suspend(() => {
      const input = { t: clock(), n: n++ }
      return Effect.tap(dispatcher.submit({ address: ADDRESS, input, prefer: [], actor: "bench" }), (run) =>
        Effect.sync(() => {
          if (tracing) submittedRuns.set(run.id, input)
        })
      )
    }).pipe(Effect.catchAll((e) => Effect.sync(() => toParent({ type: "failed", message: `submit: ${e.message}` }))))

    // Keeps `window` runs in flight: at the start it submits `window` runs together (their
    // commits share the journal's group commit), then one more for each report committed,
    // gathered per event-loop turn. Stopping it only stops new submissions.
    let submitted = 0
    let inFlight = 0
    let loading = false
    let window = 0
    let refillScheduled = false
    const refill = () => {
      refillScheduled = false
      if (!loading) return
      const missing = window - inFlight
      if (missing <= 0) return
      inFlight += missing
      submitted += missing
      for (let i = 0; i < missing; i++) runFork(submitOne)
    }
    onReported = (count) => {
      inFlight -= count
      if (loading && !refillScheduled) {
        refillScheduled = true
        setImmediate(refill)
      }
    }
    // --profile DIR: the parent has this process profile one counted saturation round and the latency phase.
    const profiler = new inspector.Session()
    if (process.argv.includes("--profile")) profiler.connect()

    process.on("message", (raw: unknown) => {
      const m = raw as ToChild
      switch (m.type) {
        case "usage":
          // collect: a full GC first, so that heapUsed is what the owner keeps (the final reading).
          if (m.collect === true) {
            v8.setFlagsFromString("--expose-gc")
            ;(vm.runInNewContext("gc") as () => void)()
          }
          return toParent({ type: "usage", id: m.id, usage: usage() })
        case "ping":
          return toParent({ type: "pong", id: m.id, clock: clock() })
        case "submit":
          n = m.n
          // Only the latency phase's runs (n >= 0) are traced.
          tracing = TRACE && m.n >= 0
          runFork(submitOne)
          return
        case "traces":
          toParent({ type: "traces", id: m.id, traces: [...submittedRuns].map(([runId, x]) => ({ runId, ...x, appends: appendsOf.get(runId) ?? [] })) })
          return
        case "load-start":
          submitted = 0
          inFlight = openNow()
          tracing = false
          // The saturation's runs are numbered apart from the latency phase's.
          n = 1_000_000_000
          loading = true
          window = m.window
          refill()
          return
        case "load-stop":
          loading = false
          return toParent({ type: "load-stopped", id: m.id, submitted })
        case "drain": {
          const check = () => (openNow() === 0 ? toParent({ type: "drained", id: m.id }) : setTimeout(check, 10))
          check()
          return
        }
        case "profile-start":
          profiler.post("Profiler.enable", () => profiler.post("Profiler.start"))
          return
        case "profile-stop":
          profiler.post("Profiler.stop", (err, result) => {
            if (err === null) writeFileSync(m.file, JSON.stringify(result.profile))
            toParent({ type: "profiled", id: m.id })
          })
          return
        case "stop":
          void close(server).then(() => {
            stop()
            toParent({ type: "stopped" })
          })
          return
      }
    })

    const tokens = yield* Effect.forEach(
      Array.from({ length: WORKERS }, (_, i) => i),
      (i) => Effect.map(service.invite({ scope: [], expiresInMs: null, name: `bench-${i}`, actor: "bench" }), (invite) => invite.token),
      { concurrency: 64 }
    )
    toParent({ type: "ready", port, home, tokens })
    yield* Effect.promise(() => stopped)
  })
  await Effect.runPromise(Effect.scoped(program))
  rmSync(home, { recursive: true, force: true })
  // Claims still waiting hold timers: nothing is left to do here.
  process.exit(0)
}

// ---------------------------------------------------------------------------------------------
// The bare server process: same certificate, same server settings, no owner behind it

/** As large as a real `work` answer (checked against the first one in the run). */
const bareAnswer = (size: number) => {
  const base = { kind: "work", attempt: "", runId: "rXXXXXXXXXXXXXXX", address: ADDRESS, digest: DIGEST, input: { t: 0, n: 0 }, timeoutMs: null, newCredential: null }
  const pad = Math.max(0, size - JSON.stringify(base).length)
  return JSON.stringify({ ...base, attempt: "a".repeat(pad) })
}

const bareChild = async (): Promise<void> => {
  const home = process.argv[process.argv.indexOf("--home") + 1]!
  const size = Number(process.argv[process.argv.indexOf("--answer-bytes") + 1])
  const answer = bareAnswer(size)
  const cert = readFileSync(join(home, "tls", "owner.crt"), "utf8")
  const key = readFileSync(join(home, "tls", "owner.key"), "utf8")
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      let ok = true
      try {
        JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        ok = false
      }
      const text = ok ? answer : JSON.stringify({ code: "bad-request", message: "not JSON" })
      res.writeHead(ok ? 200 : 400, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" })
      res.end(text)
    })
  }
  const server = createServer({ cert, key, host: "127.0.0.1", port: 0 }, handler)
  const port = await listen(server)
  process.on("message", (raw: unknown) => {
    const m = raw as ToChild
    if (m.type === "usage") {
      const mem = process.memoryUsage()
      toParent({ type: "usage", id: m.id, usage: { cpuMicros: cpuNow(), rss: mem.rss, heapUsed: mem.heapUsed, sequence: 0, storeBytes: 0, open: 0, kept: 0, forgotten: 0 } })
    } else if (m.type === "stop") void close(server).then(() => toParent({ type: "stopped" }))
  })
  toParent({ type: "ready", port })
}

// ---------------------------------------------------------------------------------------------
// This process: the simulated workers and the load generator

class Child {
  private readonly waiting = new Map<number, (m: ToParent) => void>()
  private next = 0
  private readyWaiter: ((m: ToParent) => void) | undefined
  private stopWaiter: (() => void) | undefined
  readonly exited: Promise<number | null>
  failures: Array<string> = []

  constructor(readonly proc: ChildProcess) {
    proc.on("message", (raw: unknown) => {
      const m = raw as ToParent
      if (m.type === "ready") this.readyWaiter?.(m)
      else if (m.type === "stopped") this.stopWaiter?.()
      else if (m.type === "failed") this.failures.push(m.message)
      else {
        this.waiting.get(m.id)?.(m)
        this.waiting.delete(m.id)
      }
    })
    this.exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)))
  }

  ready<A extends ToParent>(): Promise<A> {
    return new Promise((resolve, reject) => {
      this.readyWaiter = (m) => resolve(m as A)
      void this.exited.then((code) => reject(new Error(`the ${this.proc.spawnargs.at(-1)} process exited (code ${code}) before it was ready`)))
    })
  }

  ask<A extends ToParent>(message: (id: number) => ToChild): Promise<A> {
    const id = this.next++
    return new Promise((resolve) => {
      this.waiting.set(id, (m) => resolve(m as A))
      this.proc.send(message(id))
    })
  }

  usage = async (collect = false): Promise<Usage> => (await this.ask<{ type: "usage"; id: number; usage: Usage }>((id) => ({ type: "usage", id, collect }))).usage

  send(message: ToChild): void {
    this.proc.send(message)
  }

  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => (this.stopWaiter = resolve))
    this.proc.send({ type: "stop" } satisfies ToChild)
    await Promise.race([stopped, this.exited, new Promise((r) => setTimeout(r, 10_000))])
    if (this.proc.connected) this.proc.disconnect()
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 10_000))])
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL")
  }
}

/**
 * The node flags `npm start` runs `svc serve` with (package.json's start script), which the
 * owner process is started with too, so that it runs as users run it; `--no-start-flags` leaves
 * them out (to measure what they change).
 */
const startFlags = (): ReadonlyArray<string> => {
  if (process.argv.includes("--no-start-flags")) return []
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { scripts: { start: string } }
  const m = /\bnode\s+((?:--\S+\s+)*)dist\/svc\.mjs serve/.exec(pkg.scripts.start)
  if (m === null) throw new Error(`package.json's start script does not run dist/svc.mjs serve with node: ${pkg.scripts.start}`)
  return m[1]!.trim().split(/\s+/).filter((f) => f !== "")
}

const spawnRole = (role: "owner" | "bare", extra: ReadonlyArray<string> = []): Child => {
  const script = fileURLToPath(import.meta.url)
  const forwarded = process.argv.slice(2)
  return new Child(
    spawn(process.execPath, [...(role === "owner" ? startFlags() : []), ...process.execArgv, process.argv[1]!, script, ...forwarded, ...extra, "--role", role], {
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
  )
}

const fingerprintOf = (cert: tls.PeerCertificate) => cert.fingerprint256.replace(/:/g, "").toLowerCase()

const agentFor = (cert: string, sockets: number): https.Agent => {
  const pinned = new X509Certificate(cert).fingerprint256.replace(/:/g, "").toLowerCase()
  // Trusting the pinned certificate alone, as the worker's agent does (OwnerClient.makeAgent,
  // which checks it before a connection is used; here Node's check, the pinned self-signed
  // certificate as the only CA); one pool shared by all simulated workers.
  return new https.Agent({
    keepAlive: true,
    ca: cert,
    checkServerIdentity: (_host, c) => (fingerprintOf(c) === pinned ? undefined : new Error("not the pinned certificate")),
    maxSockets: sockets,
    maxFreeSockets: sockets
  })
}

interface Answer {
  readonly status: number
  readonly body: string
  /** This process's clock when the answer was complete. */
  readonly at: number
}

const post = (port: number, agent: https.Agent, bearer: string, body: string | Buffer): Promise<Answer> =>
  new Promise((resolve) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: ROUTE,
        agent,
        timeout: 30_000,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${bearer}` }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), at: clock() }))
        res.on("error", () => resolve({ status: 0, body: "", at: clock() }))
      }
    )
    req.on("timeout", () => req.destroy(new Error("timeout")))
    req.on("error", () => resolve({ status: 0, body: "", at: clock() }))
    req.end(body)
  })

const body = (request: WorkerRequest) => JSON.stringify(request)

interface Received {
  readonly n: number
  /** Owner's submit time (owner clock) and receipt here (this clock). */
  readonly t: number
  readonly at: number
}

/** Everything the simulated workers saw. */
class Fleet {
  reports = 0
  /** Claims sent, and attempts handed back with a report (claimNext). */
  claims = 0
  handedBack = 0
  received: Array<Received> = []
  errors = new Map<string, number>()
  workBytes = 0
  /** Resolves when the report of run `n` is acked. */
  onReported: ((n: number) => void) | undefined
  running = true
  readonly claimBytes: number
  readonly reportBytes: number

  constructor(
    readonly port: number,
    readonly agent: https.Agent,
    readonly workers: ReadonlyArray<{ readonly credential: string; readonly fence: number }>
  ) {
    this.claimBytes = body({ kind: "claim", fence: workers[0]!.fence, waitSeconds: CLAIM_WAIT_SECONDS, running: [] }).length
    this.reportBytes = body({ kind: "report", fence: workers[0]!.fence, attempt: "rXXXXXXXXXXXXXXX.1", outcome: { ok: true, result: {} }, claimNext: true, running: [] }).length
  }

  error(what: string, a: Answer) {
    const key = `${what} ${a.status}${a.status === 0 ? "" : ` ${a.body.slice(0, 120)}`}`
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1)
  }

  async work(w: number): Promise<void> {
    const { credential, fence } = this.workers[w]!
    // As an svc worker claims: listing what it runs (nothing: it reports before it claims again).
    const claim = body({ kind: "claim", fence, waitSeconds: CLAIM_WAIT_SECONDS, running: [] })
    type Handed = { readonly attempt: string; readonly input: { readonly t: number; readonly n: number } }
    // An attempt handed back with the last report (claimNext), to run before claiming again.
    let next: { readonly work: Handed; readonly at: number } | null = null
    while (this.running || next !== null) {
      let handed: Handed
      let at: number
      if (next !== null) {
        handed = next.work
        at = next.at
        next = null
      } else {
        this.claims++
        const a = await post(this.port, this.agent, credential, claim)
        if (a.status !== 200) {
          this.error("claim", a)
          await new Promise((r) => setTimeout(r, 100))
          continue
        }
        const answer = JSON.parse(a.body) as { kind: string } & Partial<Handed>
        if (answer.kind !== "work") continue
        this.workBytes = a.body.length
        handed = answer as Handed
        at = a.at
      }
      this.received.push({ n: handed.input.n, t: handed.input.t, at })
      // As an svc worker reports when its slots are busy (this one runs one attempt at a time),
      // asking for the next attempt placed on it and listing what else it runs (nothing),
      // unless it is stopping.
      const r = await post(this.port, this.agent, credential, body({ kind: "report", fence, attempt: handed.attempt, outcome: { ok: true, result: {} }, ...(this.running ? { claimNext: true, running: [] } : {}) }))
      if (r.status !== 200) {
        this.error("report", r)
        continue
      }
      this.reports++
      this.onReported?.(handed.input.n)
      const ack = JSON.parse(r.body) as { next?: Handed | null }
      if (ack.next != null) {
        this.handedBack++
        next = { work: ack.next, at: r.at }
      }
    }
  }

  advertise(w: number) {
    const { fence } = this.workers[w]!
    return body({
      kind: "advertise",
      fence,
      capacity: 4,
      labels: ["arch=x64", "os=linux", POOL, `zone=z${w % 4}`],
      capabilities: ["node", "process"],
      artifacts: [{ address: ADDRESS, digest: DIGEST }]
    })
  }

  /** Refreshes every worker's advertisement every 4 s, spread over the interval. */
  advertising(): () => void {
    const timers: Array<NodeJS.Timeout> = []
    this.workers.forEach((wk, w) => {
      const body = this.advertise(w)
      const once = () =>
        void post(this.port, this.agent, wk.credential, body).then((a) => {
          if (a.status !== 200) this.error("advertise", a)
        })
      timers.push(
        setTimeout(() => {
          once()
          timers.push(setInterval(once, ADVERTISE_EVERY_MS))
        }, (w * ADVERTISE_EVERY_MS) / this.workers.length)
      )
    })
    return () => timers.forEach((t) => clearTimeout(t))
  }
}

/** Join, hello, first advertisement: each worker over the route, as `svc workers join` and the link do. */
const link = async (port: number, agent: https.Agent, tokens: ReadonlyArray<string>) =>
  Promise.all(
    tokens.map(async (token, i) => {
      const joined = await post(port, agent, token, JSON.stringify({ kind: "join", name: `bench-${i}` }))
      if (joined.status !== 200) throw new Error(`join answered ${joined.status} ${joined.body}`)
      const { credential } = JSON.parse(joined.body) as { credential: string }
      const hello = await post(port, agent, credential, JSON.stringify({ kind: "hello", protocol: 1, running: [] }))
      if (hello.status !== 200) throw new Error(`hello answered ${hello.status} ${hello.body}`)
      const { fence } = JSON.parse(hello.body) as { fence: number }
      return { credential, fence }
    })
  )

interface Rate {
  readonly rate: number
  readonly count: number
  readonly cpuPerUnit: number
  readonly errors: number
}

/** Bare: `concurrency` requests in flight for `ms`, bodies alternating claim-sized and report-sized. */
const saturateBare = async (bare: Child, port: number, agent: https.Agent, bearer: string, bodies: ReadonlyArray<string>, concurrency: number, ms: number): Promise<Rate> => {
  let count = 0
  let errors = 0
  const cpuStart = (await bare.usage()).cpuMicros
  const end = performance.now() + ms
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      let k = i
      while (performance.now() < end) {
        const a = await post(port, agent, bearer, bodies[k++ % bodies.length]!)
        if (performance.now() > end) break
        if (a.status === 200) count++
        else errors++
      }
    })
  )
  const cpuEnd = (await bare.usage()).cpuMicros
  return { rate: count / (ms / 1000), count, cpuPerUnit: (cpuEnd - cpuStart) / Math.max(1, count), errors }
}

const profileAt = process.argv.indexOf("--profile")
const PROFILE_DIR = profileAt >= 0 ? resolve(process.argv[profileAt + 1] ?? ".") : undefined
/** With --profile DIR: `during` runs while the owner process profiles itself into DIR/owner-NAME.cpuprofile. */
const profiled = async <A>(owner: Child, name: string, during: () => Promise<A>): Promise<A> => {
  if (PROFILE_DIR === undefined) return during()
  mkdirSync(PROFILE_DIR, { recursive: true })
  owner.send({ type: "profile-start" })
  const result = await during()
  const file = join(PROFILE_DIR, `owner-${name}.cpuprofile`)
  await owner.ask((id) => ({ type: "profile-stop", id, file }))
  console.log(`              (owner profile: ${file})`)
  return result
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Owner: the submit loop keeps `WINDOW` runs open; acked reports counted after the warm-up. */
const saturateOwner = async (owner: Child, fleet: Fleet, ms: number): Promise<Rate & { submitted: number; events: number; bytes: number; claims: number; handedBack: number }> => {
  const errorsBefore = [...fleet.errors.values()].reduce((a, b) => a + b, 0)
  owner.send({ type: "load-start", window: WINDOW })
  await sleep(WARM_SECONDS * 1000)
  const u0 = await owner.usage()
  const c0 = fleet.reports
  const k0 = fleet.claims
  const h0 = fleet.handedBack
  await sleep(ms)
  const c1 = fleet.reports
  const k1 = fleet.claims
  const h1 = fleet.handedBack
  const u1 = await owner.usage()
  const stopped = await owner.ask<{ type: "load-stopped"; id: number; submitted: number }>((id) => ({ type: "load-stop", id }))
  await owner.ask((id) => ({ type: "drain", id }))
  const count = c1 - c0
  const errors = [...fleet.errors.values()].reduce((a, b) => a + b, 0) - errorsBefore
  return {
    rate: count / (ms / 1000),
    count,
    cpuPerUnit: (u1.cpuMicros - u0.cpuMicros) / Math.max(1, count),
    errors,
    submitted: stopped.submitted,
    events: (u1.sequence - u0.sequence) / Math.max(1, count),
    bytes: (u1.storeBytes - u0.storeBytes) / Math.max(1, count),
    claims: (k1 - k0) / Math.max(1, count),
    handedBack: (h1 - h0) / Math.max(1, count)
  }
}

/** The owner's clock minus this one, from the IPC ping with the shortest round trip. */
const calibrate = async (owner: Child, pings = 200) => {
  let best = { rtt: Infinity, offset: 0 }
  for (let i = 0; i < pings; i++) {
    const t0 = clock()
    const pong = await owner.ask<{ type: "pong"; id: number; clock: number }>((id) => ({ type: "ping", id }))
    const t1 = clock()
    if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: pong.clock - (t0 + t1) / 2 }
  }
  return best
}

/**
 * What one placement costs the owner beyond `place` itself, in this process, for the bench's
 * fleet: the PlacementDecided event journals every candidate and verdict, so it grows with the
 * number of workers. Candidates made as Dispatcher.candidatesFor makes them.
 */
const placementParts = (workers: number) => {
  const owner: Candidate = { id: "owner", name: "owner", isOwner: true, revoked: false, advertisementAlive: true, scope: [], labels: ["arch=x64", "os=linux"], capabilities: ["node", "process"], bins: [], artifacts: [], slots: { capacity: 4, used: 0 } }
  const candidates: Array<Candidate> = [
    owner,
    ...Array.from({ length: workers }, (_, i): Candidate => ({
      id: `w${String(i).padStart(13, "0")}`,
      name: `bench-${i}`,
      isOwner: false,
      revoked: false,
      advertisementAlive: true,
      scope: [],
      labels: ["arch=x64", "os=linux", POOL, `zone=z${i % 4}`],
      capabilities: ["node", "process"],
      bins: [],
      artifacts: [{ address: ADDRESS, digest: DIGEST }],
      slots: { capacity: 4, used: i % 4 }
    }))
  ]
  const submitted: Envelope = {
    sequence: 1,
    stream: "run-rbench",
    streamVersion: 1,
    type: "RunSubmitted",
    schemaVersion: CURRENT_VERSION.RunSubmitted,
    recordedAt: 0,
    event: new RunSubmitted({ runId: "rbench", job: noop.job, input: { t: 0, n: 0 }, preferredLabels: [], actor: "bench", at: 0 })
  }
  const runs = evolveRuns(initialRuns, submitted)
  const quotas = { logical: null, endpoint: null }
  const notes = ["logical quota: none applies", "inference endpoint: none"]
  const decide = () => decidePlacement({ runId: "rbench", candidates, quotas, notes, now: 1 }, runs)
  const decision = decide()
  if (decision._tag !== "Decided" || decision.events[0]?._tag !== "PlacementDecided") throw new Error("the bench's placement was not decided")
  const event = decision.events[0]
  const envelope: Envelope = { ...submitted, sequence: 2, streamVersion: 2, type: "PlacementDecided", schemaVersion: CURRENT_VERSION.PlacementDecided, event }
  // The fastest of 7 short rounds: the least disturbed by other work on the machine.
  const us = (f: () => unknown) => {
    for (let i = 0; i < 100; i++) f()
    const rounds: Array<number> = []
    for (let r = 0; r < 7; r++) {
      let n = 0
      const start = performance.now()
      while (performance.now() - start < 40) {
        f()
        n++
      }
      rounds.push(((performance.now() - start) * 1000) / n)
    }
    return Math.min(...rounds)
  }
  const activity = activityOf(HashMap.unsafeGet(runs.runs, "rbench"))
  return {
    bytes: payloadOf(event).length,
    place: us(() => place(activity, candidates, quotas)),
    decide: us(decide),
    construct: us(() => new PlacementDecided({ ...event })),
    constructUnchecked: us(() => new PlacementDecided({ ...event }, true)),
    payload: us(() => payloadOf(event)),
    apply: us(() => evolveRuns(runs, envelope))
  }
}

/**
 * The disk under the journal: one small row per transaction with the journal's pragmas (WAL,
 * synchronous=FULL) through better-sqlite3, `gapMs` apart as the latency phase's commits are
 * (the process idle in between), then back to back. ms per commit, sorted.
 */
const rawCommits = async (gapMs: number, count: number) => {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-dispatch-disk-"))
  const db = new Database(join(dir, "raw.db"))
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = FULL")
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT)")
  const insert = db.prepare("INSERT INTO t (payload) VALUES (?)")
  const row = "x".repeat(300)
  const paced: Array<number> = []
  const packed: Array<number> = []
  for (let i = 0; i < count; i++) {
    await sleep(gapMs)
    const start = performance.now()
    insert.run(row)
    paced.push(performance.now() - start)
  }
  for (let i = 0; i < count; i++) {
    const start = performance.now()
    insert.run(row)
    packed.push(performance.now() - start)
  }
  db.close()
  rmSync(dir, { recursive: true, force: true })
  return { paced: paced.sort((a, b) => a - b), packed: packed.sort((a, b) => a - b) }
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!)
const ms2 = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1))
const pass = (ok: boolean) => (ok ? "PASS" : "FAIL")

const main = async (): Promise<void> => {
  printMachine("bench/dispatch")
  console.log(`  workers     ${WORKERS} simulated (capacity 4 each, one claim at a time, claim waits ${CLAIM_WAIT_SECONDS} s, advertise every ${ADVERTISE_EVERY_MS / 1000} s)`)
  console.log(`  saturation  ${WINDOW} runs kept open; ${ROUNDS} rounds of ${WARM_SECONDS} s warm-up + ${ROUND_SECONDS} s counted, owner and bare alternating`)
  console.log(`  latency     ${SAMPLES} runs one at a time (first ${SKIP_SAMPLES} not counted), ${PAUSE_MS} ms pause between`)
  console.log(`  processes   owner and bare server in child processes, this process runs the workers (2 cores shared); owner node flags: ${startFlags().join(" ") || "none"} (npm start's)\n`)

  const ownerProc = spawnRole("owner")
  const owner = await ownerProc.ready<OwnerReady>()
  const cert = readFileSync(join(owner.home, "tls", "owner.crt"), "utf8")
  const ownerAgent = agentFor(cert, 2 * WORKERS + 16)
  const setupStart = performance.now()
  const workers = await link(owner.port, ownerAgent, owner.tokens)
  const fleet = new Fleet(owner.port, ownerAgent, workers)
  // First advertisements at once (placement needs them), then every 4 s.
  await Promise.all(workers.map((w, i) => post(owner.port, ownerAgent, w.credential, fleet.advertise(i)).then((a) => (a.status === 200 ? undefined : fleet.error("advertise", a)))))
  const stopAdvertising = fleet.advertising()
  const loops = workers.map((_, w) => fleet.work(w))
  const setup = await ownerProc.usage(true)
  console.log(`  setup       ${WORKERS} workers joined, hello, advertised over the route in ${((performance.now() - setupStart) / 1000).toFixed(1)} s (journal ${fmt(setup.sequence)} events)`)

  // A first job through, to learn the size of a real `work` answer (the bare server answers as much).
  let firstDone: () => void = () => undefined
  const first = new Promise<void>((r) => (firstDone = r))
  fleet.onReported = () => firstDone()
  ownerProc.send({ type: "submit", n: -1 })
  await Promise.race([first, sleep(10_000).then(() => Promise.reject(new Error("the first run was not reported within 10 s")))])
  fleet.onReported = undefined
  const workBytes = fleet.workBytes
  const bareProc = spawnRole("bare", ["--home", owner.home, "--answer-bytes", String(workBytes)])
  const bare = await bareProc.ready<BareReady>()
  const bareAgent = agentFor(cert, WORKERS + 16)
  const bearer = workers[0]!.credential
  const fence = workers[0]!.fence
  const bareBodies = [
    JSON.stringify({ kind: "claim", fence, waitSeconds: CLAIM_WAIT_SECONDS, running: [] }),
    JSON.stringify({ kind: "report", fence, attempt: "rXXXXXXXXXXXXXXX.1", outcome: { ok: true, result: {} }, claimNext: true, running: [] })
  ]
  console.log(`  sizes       claim ${fleet.claimBytes} B, report ~${fleet.reportBytes} B, work answer ${workBytes} B (bare answers ${bareAnswer(workBytes).length} B)`)

  // Warm both up (handshakes, JIT).
  await saturateBare(bareProc, bare.port, bareAgent, bearer, bareBodies, WORKERS, 2000)
  await saturateOwner(ownerProc, fleet, 1000)
  console.log()

  console.log(`  saturation rounds`)
  const results: Record<"owner" | "bare", Array<Rate>> = { owner: [], bare: [] }
  const ownerExtra: Array<{ submitted: number; events: number; bytes: number }> = []
  const ratios: Array<number> = []
  for (let r = 0; r < ROUNDS; r++) {
    const order: Array<"owner" | "bare"> = r % 2 === 0 ? ["owner", "bare"] : ["bare", "owner"]
    const round: Partial<Record<"owner" | "bare", number>> = {}
    for (const which of order) {
      if (which === "owner") {
        const m = await (r === 0 ? profiled(ownerProc, "saturation", () => saturateOwner(ownerProc, fleet, ROUND_SECONDS * 1000)) : saturateOwner(ownerProc, fleet, ROUND_SECONDS * 1000))
        results.owner.push(m)
        ownerExtra.push(m)
        round.owner = m.rate
        console.log(
          `    round ${r + 1} owner ${fmt(m.rate).padStart(7)} jobs/s      owner CPU ${fmt(m.cpuPerUnit)} us/job, ${m.events.toFixed(2)} events/job, ${fmt(m.bytes)} B of store/job, ${(m.claims + 1).toFixed(2)} calls/job (${(100 * m.handedBack).toFixed(0)}% handed back with a report), errors ${m.errors}`
        )
      } else {
        const m = await saturateBare(bareProc, bare.port, bareAgent, bearer, bareBodies, WORKERS, ROUND_SECONDS * 1000)
        results.bare.push(m)
        round.bare = m.rate
        console.log(`    round ${r + 1} bare  ${fmt(m.rate).padStart(7)} requests/s  server CPU ${fmt(m.cpuPerUnit)} us/request, errors ${m.errors}`)
      }
    }
    ratios.push(round.owner! / round.bare!)
  }

  // Latency: every worker waits in a claim; one run at a time.
  await sleep(300)
  const before = await calibrate(ownerProc)
  fleet.received = []
  const viaIpc: Array<number> = []
  await profiled(ownerProc, "latency", async () => {
    for (let i = 0; i < SAMPLES + SKIP_SAMPLES; i++) {
      const reported = new Promise<void>((resolve) => (fleet.onReported = (n) => (n === i ? resolve() : undefined)))
      const sent = clock()
      ownerProc.send({ type: "submit", n: i })
      await Promise.race([reported, sleep(10_000).then(() => Promise.reject(new Error(`run ${i} was not reported within 10 s`)))])
      const got = fleet.received.find((x) => x.n === i)!
      if (i >= SKIP_SAMPLES) viaIpc.push(got.at - sent)
      await sleep(PAUSE_MS)
    }
  })
  fleet.onReported = undefined
  const after = await calibrate(ownerProc)
  const offset = (before.offset + after.offset) / 2
  const latencies = fleet.received
    .filter((x) => x.n >= SKIP_SAMPLES)
    .map((x) => x.at + offset - x.t)
    .sort((a, b) => a - b)
  viaIpc.sort((a, b) => a - b)
  const p50 = percentile(latencies, 0.5)
  const p99 = percentile(latencies, 0.99)

  if (TRACE) {
    const { traces } = await ownerProc.ask<{ type: "traces"; id: number; traces: ReadonlyArray<Trace> }>((id) => ({ type: "traces", id }))
    const byN = new Map(fleet.received.map((x) => [x.n, x]))
    const segments: Record<string, Array<number>> = {}
    const add = (name: string, v: number) => (segments[name] ??= []).push(v)
    let handedOver = 0
    for (const trace of traces) {
      const got = byN.get(trace.n)
      const at = (type: string) => trace.appends.find((a) => a.type === type)
      const [sub, placed, started] = [at("RunSubmitted"), at("PlacementDecided"), at("AttemptStarted")]
      if (trace.n < SKIP_SAMPLES || got === undefined || sub === undefined || placed === undefined || started === undefined) continue
      add("submit: checks, decide, append asked", sub.asked - trace.t)
      if (started.asked === sub.asked) {
        // Placed and handed to the waiting claim in the submission's own command: one append holds all three.
        add("  RunSubmitted + PlacementDecided + AttemptStarted commit (one append)", sub.committed - sub.asked)
        handedOver++
      } else {
        if (placed.asked === sub.asked) {
          // Placed in the submission's own command: one append holds both.
          add("  RunSubmitted + PlacementDecided commit (one append)", sub.committed - sub.asked)
        } else {
          add("  RunSubmitted commit (group-commit wait + fsync)", sub.committed - sub.asked)
          add("scheduler: wake, candidates, place, PlacementDecided made", placed.asked - sub.committed)
          add("  PlacementDecided commit", placed.committed - placed.asked)
        }
        add("claim: waiting claim wakes, decideClaim", started.asked - placed.committed)
        add("  AttemptStarted commit", started.committed - started.asked)
      }
      add("answer: claim answered, encoded, HTTPS write, worker reads it", got.at + offset - started.committed)
      add("total", got.at + offset - trace.t)
    }
    console.log(`\n  latency, step by step (--trace: the journal's appends timed in the owner; ms, over ${segments["total"]?.length ?? 0} runs, ${handedOver} handed to the waiting claim in the placement's commit)`)
    console.log(`    ${"step".padEnd(60)} ${"mean".padStart(6)} ${"p50".padStart(6)} ${"p99".padStart(6)}`)
    for (const [name, xs] of Object.entries(segments)) {
      const sorted = [...xs].sort((a, b) => a - b)
      const mean = xs.reduce((a, b) => a + b, 0) / xs.length
      console.log(`    ${name.padEnd(60)} ${mean.toFixed(2).padStart(6)} ${percentile(sorted, 0.5).toFixed(2).padStart(6)} ${percentile(sorted, 0.99).toFixed(2).padStart(6)}`)
    }
  }

  fleet.running = false
  stopAdvertising()
  const parts = placementParts(WORKERS)
  const disk = await rawCommits(PAUSE_MS + 3, 300)
  const ownerRate = median(results.owner.map((m) => m.rate))
  const bareRate = median(results.bare.map((m) => m.rate))
  const ratio = ownerRate / bareRate
  const ratioPass = ratio >= TARGET_RATIO
  const latencyPass = p50 <= TARGET_P50_MS && p99 <= TARGET_P99_MS
  const errors = [...fleet.errors.values()].reduce((a, b) => a + b, 0) + results.bare.reduce((a, m) => a + m.errors, 0) + ownerProc.failures.length
  const end = await ownerProc.usage(true)

  console.log("\n  results")
  console.log(`    jobs/s    owner ${fmt(ownerRate)} jobs/s, bare ${fmt(bareRate)} requests/s (medians of ${ROUNDS}), owner / bare ${ratio.toFixed(3)} (per round ${ratios.map((x) => x.toFixed(3)).join(", ")})`)
  console.log(`              owner CPU per job ${fmt(median(results.owner.map((m) => m.cpuPerUnit)))} us, bare CPU per request ${fmt(median(results.bare.map((m) => m.cpuPerUnit)))} us; ${median(ownerExtra.map((m) => m.events)).toFixed(2)} journal events and ${fmt(median(ownerExtra.map((m) => m.bytes)))} B of store per job`)
  const ownerCpuPerJob = median(results.owner.map((m) => m.cpuPerUnit))
  const bareCpuPerRequest = median(results.bare.map((m) => m.cpuPerUnit))
  console.log(`              per second of server CPU: owner ${fmt(1e6 / ownerCpuPerJob)} jobs, bare ${fmt(1e6 / bareCpuPerRequest)} requests, ratio ${(bareCpuPerRequest / ownerCpuPerJob).toFixed(3)} (not the target; a view that does not depend on how the two processes share the cores)`)
  console.log(`              target owner >= ${TARGET_RATIO} x bare: ${pass(ratioPass)}`)
  console.log(`    latency   submit -> waiting claim answered: p50 ${ms2(p50)} ms, p99 ${ms2(p99)} ms, max ${ms2(latencies[latencies.length - 1] ?? NaN)} ms (${latencies.length} runs)`)
  console.log(`              clocks: owner - here ${ms2(before.offset)} / ${ms2(after.offset)} ms before / after, error bound +-${(Math.max(before.rtt, after.rtt) / 2).toFixed(3)} ms`)
  console.log(`              counting the IPC message that asks for the submission: p50 ${ms2(percentile(viaIpc, 0.5))} ms, p99 ${ms2(percentile(viaIpc, 0.99))} ms`)
  console.log(
    `              the disk: a bare SQLite commit (WAL, synchronous=FULL, one row) ${PAUSE_MS + 3} ms apart: p50 ${ms2(percentile(disk.paced, 0.5))} ms, p99 ${ms2(percentile(disk.paced, 0.99))} ms` +
      ` (back to back: p50 ${ms2(percentile(disk.packed, 0.5))}, p99 ${ms2(percentile(disk.packed, 0.99))}); the path to the answer waits for one commit (the submission, its placement and the waiting claim's start: docs/runs.md, "A waiting claim")`
  )
  console.log(`              target p50 <= ${TARGET_P50_MS} ms, p99 <= ${TARGET_P99_MS} ms: ${pass(latencyPass)}`)
  console.log(`    errors    ${errors}${fleet.errors.size > 0 ? ` (${[...fleet.errors].map(([k, v]) => `${k}: ${v}`).join("; ")})` : ""}${ownerProc.failures.length > 0 ? ` owner: ${ownerProc.failures.slice(0, 3).join("; ")}` : ""}`)
  console.log(`    placement one PlacementDecided per job: ${fmt(parts.bytes)} B of JSON with ${WORKERS + 1} candidates; per placement (in-process, this process, fastest of 7 rounds):`)
  console.log(`              place ${parts.place.toFixed(0)} us; decidePlacement ${parts.decide.toFixed(0)} us, which builds the event unchecked (${parts.constructUnchecked.toFixed(0)} us;`)
  console.log(`              checked against its Schema it would cost ${parts.construct.toFixed(0)} us); payloadOf (JSON.stringify) ${parts.payload.toFixed(0)} us; evolveRuns (apply) ${parts.apply.toFixed(0)} us`)
  console.log(`    journal   ${fmt(end.sequence)} events, store ${(end.storeBytes / 1024 / 1024).toFixed(1)} MiB; owner heap after a full GC ${(end.heapUsed / 1024 / 1024).toFixed(1)} MiB (${fmt((end.heapUsed - setup.heapUsed) / Math.max(1, end.kept - setup.kept))} B per run kept beyond the setup's: ${fmt(end.kept)} runs kept, ${fmt(end.forgotten)} forgotten), rss ${(end.rss / 1024 / 1024).toFixed(1)} MiB`)

  await bareProc.stop()
  await ownerProc.stop()
  await Promise.race([Promise.all(loops), sleep(1000)])
  ownerAgent.destroy()
  bareAgent.destroy()
  rmSync(owner.home, { recursive: true, force: true })
  const ok = ratioPass && latencyPass && errors === 0
  console.log(`\n  ${pass(ok)}`)
  process.exit(ok ? 0 : 1)
}

const roleAt = process.argv.indexOf("--role")
const role = roleAt >= 0 ? process.argv[roleAt + 1] : undefined
const fail = (e: unknown) => {
  console.error(e)
  process.exit(1)
}
if (role === "owner") void ownerChild().catch(fail)
else if (role === "bare") void bareChild().catch(fail)
else void main().catch(fail)
