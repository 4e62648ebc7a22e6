/**
 * bench/run-node: real `node` jobs placed by the owner on 4 worker processes and run there by
 * the real executor: jobs per second, and what starting a job costs, beside `node -e 0` started
 * the same way (child_process.spawn of process.execPath, same options) in the same run.
 *
 *   npx vite-node bench/run-node.ts [--workers 4] [--slots 1] [--samples 30] [--rounds 3]
 *       [--round-seconds 5] [--profile DIR]   (CPU profile of the owner: the first throughput round)
 *   npx vite-node bench/run-node.ts --quick      (10 samples, 2 rounds of 3 s)
 *
 * Processes: the owner in a child process (this script with `--role owner`), each worker in its
 * own (`--role worker`); this process only directs them over IPC and prints.
 * Owner: the stack `svc serve` wires (as in bench/dispatch: SQLite journal with the real
 * migrations, projections, `Owner.layerWithRuns` with the Dispatcher, ChildExecutor,
 * FileRunFiles) behind WorkerRoute's real node:https handler. Its OwnerHost knows one job,
 * `bench:node@1.0.0`: a node job of a bag in a temporary directory, requiring the label
 * `pool=bench`, which the owner lacks: every run goes to a worker.
 * The job (`main.mjs`): reads its input from stdin, prints one line of JSON (the result).
 * Workers: what `svc serve` runs for a link, without the CLI: joined with an invite over the
 * route (the pinned certificate fetched and checked as `svc workers join` does), then
 * `runLink` (Link.ts: hello, advertise every 4 s, claims with Work.ts) over the real client
 * (`OwnerClient.callOwner`, `makeAgent`), with the real `ChildExecutor`, FileRunFiles in a
 * temporary directory, `--slots` slots each (the machine-wide semaphore), claims waiting 20 s
 * and heartbeats every 3 s as Serve.ts sets them, and `resolve` answering the same job.
 * Baseline: `node -e 0` spawned in the worker processes as ChildExecutor spawns a job (same
 * program, cwd, environment, stdio pipes, shell false, the input line written to stdin),
 * timed from spawn to `close` (exited and its pipes drained).
 *
 * Phases:
 * - one at a time (`--rounds` rounds, the four interleaved): `--samples` runs, each submitted
 *   in the owner process (Dispatcher.submit) and awaited there (Dispatcher.wait) before the
 *   next: submit -> result recorded; in one worker process, `--samples` of each: `node -e 0`,
 *   `node main.mjs` (the job's own start: an ES module reading its input), and the job run by
 *   the worker's executor alone (ChildExecutor.run, no owner). Means (medians beside them).
 *   The differences split a job's start: its own start, the executor, the owner + route + loop.
 * - throughput (`--rounds` rounds, order flipped each round): the owner keeps
 *   2 x workers x slots runs in flight (one more submitted for each report committed, learnt
 *   from a thin decorator around the real Journal adapter; no polling); runs finished in
 *   `--round-seconds` after 1 s warm-up; then every worker process spawns `node -e 0`
 *   `--slots` at a time for `--round-seconds`. Medians. The journal's events per job are
 *   counted by type through the same decorator.
 * No target is set for this benchmark; it prints the numbers and their ratios, and FAIL (exit
 * 1) only if a run did not succeed or a call failed.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as inspector from "node:inspector"
import { join, resolve as resolvePath } from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Runtime from "effect/Runtime"
import { Journal } from "../src/app/journal/Journal.js"
import { Projections } from "../src/app/journal/Projections.js"
import { Dispatcher } from "../src/app/runs/Dispatcher.js"
import type { ExecutionSpec } from "../src/app/runs/Executor.js"
import { runLink, type LinkStatus } from "../src/app/workers/Link.js"
import type { Offer } from "../src/app/workers/Offer.js"
import { makeSlots } from "../src/app/workers/Slots.js"
import { Owner } from "../src/app/workers/Owner.js"
import { parseJoinToken } from "../src/domain/workers/Secrets.js"
import { createServer, makeHandler } from "../src/infra/http/WorkerRoute.js"
import { layer as journalLayer } from "../src/infra/journal/SqliteJournal.js"
import { storePath } from "../src/infra/journal/StoreFile.js"
import * as ChildExecutor from "../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../src/infra/runs/FileRunFiles.js"
import { loadOrCreate } from "../src/infra/tls/OwnerCertificate.js"
import { callOwner, fetchPinnedCertificate, makeAgent } from "../src/infra/workers/OwnerClient.js"
import { benchHost, benchOwner, resolvingOnly, workerOnlyJob } from "./owner.js"
import { arg, median, printMachine } from "./support.js"

const QUICK = process.argv.includes("--quick")
const WORKERS = arg("workers", 4)
const SLOTS = arg("slots", 1)
const SAMPLES = arg("samples", QUICK ? 10 : 30)
const ROUNDS = arg("rounds", QUICK ? 2 : 3)
const ROUND_SECONDS = arg("round-seconds", QUICK ? 3 : 5)
const WARM_SECONDS = 1
const WINDOW = 2 * WORKERS * SLOTS

const ADDRESS = "bench:node@1.0.0"
const DIGEST = `sha256:${"c".repeat(64)}`
const POOL = "pool=bench"
const MAIN = `let text = ""
for await (const chunk of process.stdin) text += chunk
const input = JSON.parse(text)
console.log(JSON.stringify({ n: input.n, ok: true }))
`

/** The job as JobCatalog would resolve it from an installed bag at `bagDir`. */
const resolverAt = (bagDir: string) => resolvingOnly(workerOnlyJob(ADDRESS, "node", DIGEST, POOL, bagDir))

const argValue = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`--${name} is missing`)
  return process.argv[i + 1]!
}

// ---------------------------------------------------------------------------------------------
// IPC

interface Spawned {
  /** ms per start, in order. */
  readonly ms: ReadonlyArray<number>
  readonly failures: number
  /** Runs through the owner: when each step was done, ms from the submission. */
  readonly steps?: ReadonlyArray<Readonly<Record<string, number>>>
}
type ToParent =
  | { readonly type: "ready"; readonly port?: number; readonly tokens?: ReadonlyArray<string>; readonly home?: string }
  | { readonly type: "answer"; readonly id: number; readonly value: unknown }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "stopped" }
type ToChild =
  | { readonly type: "one-at-a-time"; readonly id: number; readonly samples: number; readonly first: number }
  | { readonly type: "load-start"; readonly window: number }
  | { readonly type: "load-stop"; readonly id: number }
  | { readonly type: "finished"; readonly id: number }
  | { readonly type: "usage"; readonly id: number }
  | { readonly type: "spawn-one-at-a-time"; readonly id: number; readonly samples: number; readonly main: boolean }
  | { readonly type: "executor-one-at-a-time"; readonly id: number; readonly samples: number }
  | { readonly type: "spawn-loop"; readonly id: number; readonly ms: number; readonly concurrency: number }
  | { readonly type: "profile-start" }
  | { readonly type: "profile-stop"; readonly id: number; readonly file: string }
  | { readonly type: "stop" }

const toParent = (message: ToParent) => process.send?.(message)
const answer = (id: number, value: unknown) => toParent({ type: "answer", id, value })
const cpuNow = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}
/** CPU time (us) of this process's children that have exited and been reaped (Linux: /proc/self/stat cutime + cstime). */
const childrenCpu = (): number => {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // Fields 16 and 17 of the whole line (cutime, cstime), in clock ticks of 10 ms.
    return (Number(fields[13]) + Number(fields[14])) * 10_000
  } catch {
    return NaN
  }
}
interface WorkerUsage {
  readonly self: number
  readonly children: number
}

// ---------------------------------------------------------------------------------------------
// The owner process

const ownerChild = async (): Promise<void> => {
  const bagDir = argValue("bag")
  const home = mkdtempSync(join(tmpdir(), "svc-bench-run-node-"))
  const material = await loadOrCreate(home)
  const server = createServer({ cert: material.cert, key: material.key, host: "127.0.0.1", port: 0 }, () => undefined)
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  })
  // The real journal adapter behind a thin decorator that tells the submit loop when a run's
  // report is committed (so the loop needs no polling).
  let onReported: (count: number) => void = () => undefined
  /** Events journaled so far, by type. */
  const journaled = new Map<string, number>()
  /** One at a time: when each event of the current run was asked for and committed (performance.now()). */
  let steps: Map<string, { asked: number; committed: number }> | undefined
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
              const asked = performance.now()
              return Effect.tap(j.append(command), () =>
              Effect.sync(() => {
                const committed = performance.now()
                if (steps !== undefined) for (const e of command.events) if (!steps.has(e._tag)) steps.set(e._tag, { asked, committed })
                let reported = 0
                for (const e of command.events) {
                  journaled.set(e._tag, (journaled.get(e._tag) ?? 0) + 1)
                  if (e._tag === "AttemptReported") reported++
                }
                if (reported > 0) onReported(reported)
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
    // Not pool=bench: the owner is never eligible for the job.
    benchHost(resolverAt(bagDir)),
    { url: `https://127.0.0.1:${port}`, fingerprint: material.fingerprint }
  )
  let stop: () => void = () => undefined
  const stopped = new Promise<void>((resolve) => (stop = resolve))

  const program = Effect.gen(function* () {
    const runtime = yield* Layer.toRuntime(owner)
    server.removeAllListeners("request")
    server.on("request", makeHandler(runtime))
    const run = Runtime.runPromise(runtime)
    const projections = yield* Effect.provide(Projections, runtime.context)
    const dispatcher = yield* Effect.provide(Dispatcher, runtime.context)
    const service = yield* Effect.provide(Owner, runtime.context)

    let n = 0
    const submit = Effect.suspend(() => dispatcher.submit({ address: ADDRESS, input: { n: n++ }, prefer: [], actor: "bench" }))

    /**
     * Submits one, waits for its result, then the next: submit -> finished, per run; and the
     * run's steps as the journal saw them (ms from the submission).
     */
    const oneAtATime = (samples: number) =>
      Effect.gen(function* () {
        const ms: Array<number> = []
        const runSteps: Array<Record<string, number>> = []
        let failures = 0
        for (let i = 0; i < samples; i++) {
          steps = new Map()
          const start = performance.now()
          const view = yield* submit
          const done = yield* dispatcher.wait(view.id, 60_000)
          const end = performance.now()
          ms.push(end - start)
          const at = (type: string, which: "asked" | "committed") => (steps?.get(type)?.[which] ?? NaN) - start
          runSteps.push({
            submitAsked: at("RunSubmitted", "asked"),
            submitted: at("RunSubmitted", "committed"),
            placeAsked: at("PlacementDecided", "asked"),
            claimAsked: at("AttemptStarted", "asked"),
            placed: at("PlacementDecided", "committed"),
            claimed: at("AttemptStarted", "committed"),
            reportAsked: at("AttemptReported", "asked"),
            reported: at("AttemptReported", "committed"),
            done: end - start
          })
          steps = undefined
          if (done.state !== "succeeded") {
            failures++
            toParent({ type: "failed", message: `run ${view.id} ${done.state}: ${done.error ?? ""}` })
          }
        }
        return { ms, failures, steps: runSteps } satisfies Spawned
      })

    // Keeps `window` runs in flight: one more submitted for each report committed.
    let inFlight = 0
    let loading = false
    let window = 0
    let refillScheduled = false
    const fork = Runtime.runFork(runtime)
    const refill = () => {
      refillScheduled = false
      if (!loading) return
      for (; inFlight < window; inFlight++) fork(submit)
    }
    onReported = (count) => {
      inFlight -= count
      if (loading && !refillScheduled) {
        refillScheduled = true
        setImmediate(refill)
      }
    }
    /** Runs finished so far, and how many of them did not succeed. */
    const finished = () =>
      run(
        Effect.map(projections.state, (s) => {
          let done = 0
          let failed = 0
          for (const r of HashMap.values(s.runs.runs)) {
            if (r.state === "succeeded") done++
            else if (r.state === "failed" || r.state === "stopped") {
              done++
              failed++
            }
          }
          return { done, failed, open: HashMap.size(s.runs.open), journaled: Object.fromEntries(journaled) }
        })
      )

    // --profile DIR: the parent has this process profile the first throughput round.
    const profiler = new inspector.Session()
    if (process.argv.includes("--profile")) profiler.connect()
    process.on("message", (raw: unknown) => {
      const m = raw as ToChild
      switch (m.type) {
        case "one-at-a-time":
          n = m.first
          void run(oneAtATime(m.samples)).then((value) => answer(m.id, value))
          return
        case "load-start":
          void finished().then(({ open }) => {
            inFlight = open
            loading = true
            window = m.window
            refill()
          })
          return
        case "load-stop":
          loading = false
          return answer(m.id, null)
        case "finished":
          void finished().then((value) => answer(m.id, value))
          return
        case "usage":
          return answer(m.id, cpuNow())
        case "profile-start":
          profiler.post("Profiler.enable", () => profiler.post("Profiler.start"))
          return
        case "profile-stop":
          profiler.post("Profiler.stop", (err, result) => {
            if (err === null) writeFileSync(m.file, JSON.stringify(result.profile))
            answer(m.id, null)
          })
          return
        case "stop":
          server.close(() => {
            stop()
            toParent({ type: "stopped" })
          })
          server.closeAllConnections()
          return
        default:
          return
      }
    })

    const tokens = yield* Effect.forEach(Array.from({ length: WORKERS }, (_, i) => i), (i) =>
      Effect.map(service.invite({ scope: [], expiresInMs: null, name: `worker-${i}`, actor: "bench" }), (invite) => invite.token)
    )
    toParent({ type: "ready", port, tokens, home })
    yield* Effect.promise(() => stopped)
  })
  await Effect.runPromise(Effect.scoped(program))
  rmSync(home, { recursive: true, force: true })
  // Claims still waiting hold timers: nothing is left to do here.
  process.exit(0)
}

// ---------------------------------------------------------------------------------------------
// A worker process

/** `node -e 0`, spawned as ChildExecutor spawns a job (start()), timed to `close`. */
const spawnBare = (bagDir: string, spec: ExecutionSpec, input: string, args: ReadonlyArray<string> = ["-e", "0"]) =>
  new Promise<{ ms: number; ok: boolean }>((resolve) => {
    const start = performance.now()
    const child = spawn(process.execPath, args, { cwd: bagDir, env: ChildExecutor.childEnv(spec), stdio: ["pipe", "pipe", "pipe"], shell: false, detached: false })
    child.stdout.on("data", () => undefined)
    child.stderr.on("data", () => undefined)
    child.stdin.on("error", () => undefined)
    child.stdin.end(input)
    child.on("error", () => resolve({ ms: performance.now() - start, ok: false }))
    child.on("close", (code) => resolve({ ms: performance.now() - start, ok: code === 0 }))
  })

const workerChild = async (): Promise<void> => {
  const bagDir = argValue("bag")
  const token = argValue("token")
  const index = Number(argValue("index"))
  const home = mkdtempSync(join(tmpdir(), `svc-bench-run-node-worker-${index}-`))
  const resolve = resolverAt(bagDir)
  const executor = ChildExecutor.make()

  // As `svc workers join`: the owner's certificate fetched and checked against the token's pin, then the join call.
  const content = parseJoinToken(token)
  if (typeof content === "string") throw new Error(content)
  const certificate = await fetchPinnedCertificate(content.url, content.fingerprint)
  const pinned = { url: content.url, fingerprint: content.fingerprint, certificate }
  const agent = makeAgent(pinned)
  const joined = await Effect.runPromise(callOwner(pinned, agent, token, { kind: "join", name: `worker-${index}` }))
  if (joined.kind !== "joined") throw new Error(`join answered ${joined.kind}`)
  let credential = joined.credential

  const offer: Offer = {
    capacity: SLOTS,
    labels: ["arch=x64", "os=linux", POOL],
    capabilities: ["node", "process"],
    artifacts: [{ address: ADDRESS, digest: DIGEST }],
    withheld: []
  }
  const program = Effect.gen(function* () {
    const slots = yield* makeSlots(SLOTS)
    const statuses = yield* Ref.make<ReadonlyMap<string, LinkStatus>>(new Map())
    const transport = {
      call: (request: Parameters<typeof callOwner>[3]) => callOwner(pinned, agent, credential, request),
      saveCredential: (next: string) => Effect.sync(() => void (credential = next))
    }
    const side = { slots, resolve, executor, files: FileRunFiles.make(join(home, "work")), claimWaitSeconds: 20, heartbeatEvery: Duration.seconds(3) }
    yield* runLink({ key: "owner", url: content.url, workerId: joined.workerId, name: joined.name }, transport, Effect.succeed(offer), statuses, side).pipe(
      Effect.tapError((e) => Effect.sync(() => toParent({ type: "failed", message: `worker ${index}: link ended: ${e.message}` }))),
      Effect.ignore,
      Effect.forkScoped
    )
    // Ready once linked and advertised.
    for (;;) {
      const s = (yield* Ref.get(statuses)).get("owner")
      if (s?.lastAdvertisedAt != null) break
      yield* Effect.sleep(Duration.millis(20))
    }

    let k = 0
    const specFor = (attempt: string): ExecutionSpec => {
      const files = join(home, "direct", attempt)
      return {
        attempt,
        runId: "rdirect",
        bagDir,
        runs: { using: "node", main: "main.mjs" },
        env: [],
        workingDirectory: undefined,
        input: { n: k },
        timeoutMs: null,
        stdoutFile: `${files}.stdout`,
        stderrFile: `${files}.stderr`
      }
    }
    const input = `${JSON.stringify({ n: 0 })}\n`
    /** `node -e 0`, or with `main` the job's own main.mjs, spawned the same way (no executor). */
    const bareOneAtATime = async (samples: number, main: boolean): Promise<Spawned> => {
      const ms: Array<number> = []
      let failures = 0
      for (let i = 0; i < samples; i++) {
        const r = await spawnBare(bagDir, specFor(`rbare.${++k}`), input, main ? [join(bagDir, "main.mjs")] : ["-e", "0"])
        ms.push(r.ms)
        if (!r.ok) failures++
      }
      return { ms, failures }
    }
    const executorOneAtATime = async (samples: number): Promise<Spawned> => {
      const ms: Array<number> = []
      let failures = 0
      for (let i = 0; i < samples; i++) {
        const start = performance.now()
        const outcome = await Effect.runPromise(executor.run(specFor(`rdirect.${++k}`)))
        ms.push(performance.now() - start)
        if (!outcome.ok) failures++
      }
      return { ms, failures }
    }
    const bareLoop = async (ms: number, concurrency: number) => {
      const end = performance.now() + ms
      let count = 0
      let failures = 0
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            const r = await spawnBare(bagDir, specFor(`rbare.${++k}`), input)
            if (performance.now() > end) break
            count++
            if (!r.ok) failures++
          }
        })
      )
      return { count, failures }
    }

    let stop: () => void = () => undefined
    const stopped = new Promise<void>((r) => (stop = r))
    process.on("message", (raw: unknown) => {
      const m = raw as ToChild
      switch (m.type) {
        case "spawn-one-at-a-time":
          void bareOneAtATime(m.samples, m.main).then((value) => answer(m.id, value))
          return
        case "executor-one-at-a-time":
          void executorOneAtATime(m.samples).then((value) => answer(m.id, value))
          return
        case "spawn-loop":
          void bareLoop(m.ms, m.concurrency).then((value) => answer(m.id, value))
          return
        case "usage":
          return answer(m.id, { self: cpuNow(), children: childrenCpu() } satisfies WorkerUsage)
        case "stop":
          stop()
          return
        default:
          return
      }
    })
    toParent({ type: "ready" })
    yield* Effect.promise(() => stopped)
  })
  // Ending the scope stops the link (and anything it still runs).
  await Effect.runPromise(Effect.scoped(program))
  agent.destroy()
  rmSync(home, { recursive: true, force: true })
  toParent({ type: "stopped" })
  process.exit(0)
}

// ---------------------------------------------------------------------------------------------
// This process

class Child {
  private readonly waiting = new Map<number, (value: unknown) => void>()
  private next = 0
  private readyWaiter: ((m: ToParent) => void) | undefined
  private stopWaiter: (() => void) | undefined
  readonly exited: Promise<number | null>
  readonly failures: Array<string> = []

  constructor(
    readonly name: string,
    readonly proc: ChildProcess
  ) {
    proc.on("message", (raw: unknown) => {
      const m = raw as ToParent
      if (m.type === "ready") this.readyWaiter?.(m)
      else if (m.type === "stopped") this.stopWaiter?.()
      else if (m.type === "failed") this.failures.push(m.message)
      else {
        this.waiting.get(m.id)?.(m.value)
        this.waiting.delete(m.id)
      }
    })
    this.exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)))
  }

  ready(): Promise<ToParent & { type: "ready" }> {
    return new Promise((resolve, reject) => {
      this.readyWaiter = (m) => resolve(m as ToParent & { type: "ready" })
      void this.exited.then((code) => reject(new Error(`the ${this.name} process exited (code ${code}) before it was ready`)))
    })
  }

  ask<A>(message: (id: number) => ToChild): Promise<A> {
    const id = this.next++
    return new Promise((resolve) => {
      this.waiting.set(id, (v) => resolve(v as A))
      this.proc.send(message(id))
    })
  }

  send(message: ToChild): void {
    this.proc.send(message)
  }

  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => (this.stopWaiter = resolve))
    this.proc.send({ type: "stop" } satisfies ToChild)
    await Promise.race([stopped, this.exited, new Promise((r) => setTimeout(r, 15_000))])
    if (this.proc.connected) this.proc.disconnect()
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 10_000))])
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL")
  }
}

const spawnRole = (role: "owner" | "worker", extra: ReadonlyArray<string>): Child => {
  const script = fileURLToPath(import.meta.url)
  return new Child(
    `${role}${extra.includes("--index") ? ` ${extra[extra.indexOf("--index") + 1]}` : ""}`,
    spawn(process.execPath, [...process.execArgv, process.argv[1]!, script, ...process.argv.slice(2), ...extra, "--role", role], {
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
  )
}

interface Finished {
  readonly done: number
  readonly failed: number
  readonly open: number
  readonly journaled: Readonly<Record<string, number>>
}

const profileAt = process.argv.indexOf("--profile")
const PROFILE_DIR = profileAt >= 0 ? resolvePath(process.argv[profileAt + 1] ?? ".") : undefined

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
const ms1 = (x: number) => x.toFixed(1)

const main = async (): Promise<void> => {
  printMachine("bench/run-node")
  console.log(`  workers     ${WORKERS} worker processes, ${SLOTS} slot(s) each; the job: node main.mjs (reads its input, prints a JSON line)`)
  console.log(`  one at a time ${SAMPLES} runs, ${SAMPLES} x node -e 0, ${SAMPLES} x executor alone, per round; ${ROUNDS} rounds`)
  console.log(`  throughput  ${WINDOW} runs kept open; ${ROUNDS} rounds of ${WARM_SECONDS} s warm-up + ${ROUND_SECONDS} s; node -e 0 ${SLOTS} at a time in each worker process\n`)

  const bagDir = mkdtempSync(join(tmpdir(), "svc-bench-run-node-bag-"))
  mkdirSync(bagDir, { recursive: true })
  writeFileSync(join(bagDir, "main.mjs"), MAIN)

  const setupStart = performance.now()
  const owner = spawnRole("owner", ["--bag", bagDir])
  const ready = await owner.ready()
  const workers = ready.tokens!.map((token, i) => spawnRole("worker", ["--bag", bagDir, "--token", token, "--index", String(i)]))
  await Promise.all(workers.map((w) => w.ready()))
  console.log(`  setup       owner and ${WORKERS} workers linked in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`)

  const idle0 = await owner.ask<number>((id) => ({ type: "usage", id }))
  await sleep(2000)
  const idleCpu = ((await owner.ask<number>((id) => ({ type: "usage", id }))) - idle0) / 2e6
  console.log(`  owner idle  ${(idleCpu * 100).toFixed(1)}% of a core over 2 s (workers linked, claims waiting, no runs)`)

  // Warm-up: JIT, the executor's first spawns, the owner's first placements.
  await owner.ask<Spawned>((id) => ({ type: "one-at-a-time", id, samples: 8, first: 1_000_000 }))
  await Promise.all(workers.map((w) => w.ask<Spawned>((id) => ({ type: "spawn-one-at-a-time", id, samples: 3, main: false }))))
  await Promise.all(workers.map((w) => w.ask<Spawned>((id) => ({ type: "spawn-one-at-a-time", id, samples: 3, main: true }))))
  await Promise.all(workers.map((w) => w.ask<Spawned>((id) => ({ type: "executor-one-at-a-time", id, samples: 3 }))))

  console.log(`\n  one at a time (ms, mean / median per round)`)
  const seq = { job: [] as Array<number>, bare: [] as Array<number>, main: [] as Array<number>, executor: [] as Array<number> }
  const jobSteps: Array<Readonly<Record<string, number>>> = []
  let failures = 0
  for (let r = 0; r < ROUNDS; r++) {
    const w = workers[r % workers.length]!
    const job = await owner.ask<Spawned>((id) => ({ type: "one-at-a-time", id, samples: SAMPLES, first: r * SAMPLES }))
    const bare = await w.ask<Spawned>((id) => ({ type: "spawn-one-at-a-time", id, samples: SAMPLES, main: false }))
    const main = await w.ask<Spawned>((id) => ({ type: "spawn-one-at-a-time", id, samples: SAMPLES, main: true }))
    const executor = await w.ask<Spawned>((id) => ({ type: "executor-one-at-a-time", id, samples: SAMPLES }))
    failures += job.failures + bare.failures + main.failures + executor.failures
    seq.job.push(...job.ms)
    jobSteps.push(...(job.steps ?? []))
    seq.bare.push(...bare.ms)
    seq.main.push(...main.ms)
    seq.executor.push(...executor.ms)
    console.log(
      `    round ${r + 1}  node -e 0 ${ms1(mean(bare.ms))} / ${ms1(median(bare.ms))}   node main.mjs ${ms1(mean(main.ms))} / ${ms1(median(main.ms))}   executor alone ${ms1(mean(executor.ms))} / ${ms1(median(executor.ms))}   job submit -> result ${ms1(mean(job.ms))} / ${ms1(median(job.ms))}`
    )
  }

  console.log(`\n  throughput`)
  const rates = { job: [] as Array<number>, bare: [] as Array<number> }
  const ownerCpu: Array<number> = []
  const workerCpu: Array<number> = []
  const jobCpu: Array<number> = []
  const bareCpu: Array<number> = []
  const spawnerCpu: Array<number> = []
  const workersUsage = async (): Promise<WorkerUsage> => {
    const all = await Promise.all(workers.map((w) => w.ask<WorkerUsage>((id) => ({ type: "usage", id }))))
    return { self: all.reduce((a, u) => a + u.self, 0), children: all.reduce((a, u) => a + u.children, 0) }
  }
  const eventsPerJob: Array<number> = []
  const placementsPerJob: Array<number> = []
  for (let r = 0; r < ROUNDS; r++) {
    const order: Array<"job" | "bare"> = r % 2 === 0 ? ["job", "bare"] : ["bare", "job"]
    for (const which of order) {
      if (which === "job") {
        if (r === 0 && PROFILE_DIR !== undefined) owner.send({ type: "profile-start" })
        owner.send({ type: "load-start", window: WINDOW })
        await sleep(WARM_SECONDS * 1000)
        const a = await owner.ask<Finished>((id) => ({ type: "finished", id }))
        const cpu0 = await owner.ask<number>((id) => ({ type: "usage", id }))
        const w0 = await workersUsage()
        await sleep(ROUND_SECONDS * 1000)
        const b = await owner.ask<Finished>((id) => ({ type: "finished", id }))
        const cpu1 = await owner.ask<number>((id) => ({ type: "usage", id }))
        const w1 = await workersUsage()
        await owner.ask<number>((id) => ({ type: "load-stop", id }))
        if (r === 0 && PROFILE_DIR !== undefined) {
          const file = join(PROFILE_DIR, "owner-throughput.cpuprofile")
          await owner.ask((id) => ({ type: "profile-stop", id, file }))
          console.log(`              (owner profile: ${file})`)
        }
        // The open runs finish before the next measurement.
        while ((await owner.ask<{ open: number }>((id) => ({ type: "finished", id }))).open > 0) await sleep(50)
        const jobs = Math.max(1, b.done - a.done)
        const rate = (b.done - a.done) / ROUND_SECONDS
        rates.job.push(rate)
        ownerCpu.push((cpu1 - cpu0) / jobs)
        workerCpu.push((w1.self - w0.self) / jobs)
        jobCpu.push((w1.children - w0.children) / jobs)
        const perJob = Object.entries(b.journaled).map(([type, count]) => [type, (count - (a.journaled[type] ?? 0)) / jobs] as const)
        const events = perJob.reduce((x, [, v]) => x + v, 0)
        eventsPerJob.push(events)
        placementsPerJob.push(perJob.find(([type]) => type === "PlacementDecided")?.[1] ?? 0)
        console.log(
          `    round ${r + 1}  jobs        ${rate.toFixed(1).padStart(6)}/s  CPU per job: the job's process ${ms1((w1.children - w0.children) / jobs / 1000)} ms, worker process ${ms1((w1.self - w0.self) / jobs / 1000)} ms, owner ${ms1((cpu1 - cpu0) / jobs / 1000)} ms` +
            `; journaled per job: ${events.toFixed(2)} events (${perJob.filter(([, v]) => v > 0).map(([t, v]) => `${t} ${v.toFixed(2)}`).join(", ")})`
        )
      } else {
        const w0 = await workersUsage()
        const results = await Promise.all(workers.map((w) => w.ask<{ count: number; failures: number }>((id) => ({ type: "spawn-loop", id, ms: ROUND_SECONDS * 1000, concurrency: SLOTS }))))
        const w1 = await workersUsage()
        const count = results.reduce((a, x) => a + x.count, 0)
        failures += results.reduce((a, x) => a + x.failures, 0)
        rates.bare.push(count / ROUND_SECONDS)
        bareCpu.push((w1.children - w0.children) / Math.max(1, count))
        spawnerCpu.push((w1.self - w0.self) / Math.max(1, count))
        console.log(
          `    round ${r + 1}  node -e 0   ${(count / ROUND_SECONDS).toFixed(1).padStart(6)}/s  CPU per start: the process ${ms1((w1.children - w0.children) / Math.max(1, count) / 1000)} ms, the spawning process ${ms1((w1.self - w0.self) / Math.max(1, count) / 1000)} ms`
        )
      }
    }
  }
  const end = await owner.ask<Finished>((id) => ({ type: "finished", id }))
  failures += end.failed

  const jobMean = mean(seq.job)
  const bareMean = mean(seq.bare)
  const mainMean = mean(seq.main)
  const executorMean = mean(seq.executor)
  const jobRate = median(rates.job)
  const bareRate = median(rates.bare)
  const callFailures = [owner, ...workers].flatMap((c) => c.failures)
  const row = (label: string, xs: ReadonlyArray<number>) =>
    console.log(`      ${label.padEnd(50)} ${ms1(mean(xs)).padStart(7)} ms  (median ${ms1(median(xs)).padStart(6)})  ${(mean(xs) / bareMean).toFixed(2)} x node -e 0`)
  console.log("\n  results")
  console.log(`    starting a job, one at a time (${seq.job.length} of each; mean, median):`)
  row("node -e 0, spawned as the executor spawns a job", seq.bare)
  row("node main.mjs (the job itself), spawned the same", seq.main)
  row("the job run by the executor alone (no owner)", seq.executor)
  row("the job through svc: submit -> result", seq.job)
  console.log(`      cost of starting a job, beyond node -e 0: ${ms1(jobMean - bareMean)} ms = the job's own start (ESM main, reading stdin) ${ms1(mainMean - bareMean)} ms`)
  console.log(`        + the executor (checks, output files, pipes) ${ms1(executorMean - mainMean)} ms + owner, route and worker loop (submit, placement, claim, report) ${ms1(jobMean - executorMean)} ms`)
  const step = (from: string, to: string) => mean(jobSteps.map((x) => x[to]! - (from === "" ? 0 : x[from]!)))
  console.log(`      a run through svc, step by step as the owner's journal saw it (mean ms):`)
  console.log(`        submit -> RunSubmitted asked ${ms1(step("", "submitAsked"))}, committed ${ms1(step("submitAsked", "submitted"))}; -> PlacementDecided asked ${ms1(step("submitted", "placeAsked"))}, committed ${ms1(step("placeAsked", "placed"))}`)
  console.log(`        -> AttemptStarted (claimed) asked ${ms1(step("placed", "claimAsked"))}, committed ${ms1(step("claimAsked", "claimed"))}`)
  console.log(`        -> the report arrives (answer sent, worker runs the job with its executor, reads the output, reports) ${ms1(step("claimed", "reportAsked"))}`)
  console.log(`           of which beyond the executor alone: ${ms1(step("claimed", "reportAsked") - executorMean)}`)
  console.log(`        -> AttemptReported committed ${ms1(step("reportAsked", "reported"))}; -> Dispatcher.wait answers ${ms1(step("reported", "done"))}`)
  console.log(`    throughput: ${jobRate.toFixed(1)} jobs/s vs ${bareRate.toFixed(1)} node -e 0/s (medians of ${ROUNDS}), ${(jobRate / bareRate).toFixed(2)} x`)
  const cpuJob = median(jobCpu) + median(workerCpu) + median(ownerCpu)
  const cpuBare = median(bareCpu) + median(spawnerCpu)
  console.log(
    `      CPU per job ${ms1(cpuJob / 1000)} ms (the job's process ${ms1(median(jobCpu) / 1000)}, worker process ${ms1(median(workerCpu) / 1000)}, owner ${ms1(median(ownerCpu) / 1000)}) vs per node -e 0 ${ms1(cpuBare / 1000)} ms` +
      ` (the process ${ms1(median(bareCpu) / 1000)}, the spawning process ${ms1(median(spawnerCpu) / 1000)}), ${(cpuJob / cpuBare).toFixed(2)} x (medians over rounds)`
  )
  console.log(`      journaled: ${median(eventsPerJob).toFixed(2)} events per job, ${median(placementsPerJob).toFixed(2)} of them PlacementDecided (medians)`)
  console.log(`    failures: ${failures}${callFailures.length > 0 ? ` (${callFailures.slice(0, 5).join("; ")})` : ""}`)

  await Promise.all(workers.map((w) => w.stop()))
  await owner.stop()
  rmSync(bagDir, { recursive: true, force: true })
  const ok = failures === 0 && callFailures.length === 0
  console.log(`\n  ${ok ? "PASS (no target; no failures)" : "FAIL"}`)
  process.exit(ok ? 0 : 1)
}

const roleAt = process.argv.indexOf("--role")
const role = roleAt >= 0 ? process.argv[roleAt + 1] : undefined
const fail = (e: unknown) => {
  console.error(e)
  process.exit(1)
}
if (role === "owner") void ownerChild().catch(fail)
else if (role === "worker") void workerChild().catch(fail)
else void main().catch(fail)
