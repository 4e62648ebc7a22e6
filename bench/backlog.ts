/**
 * bench/backlog: what a backlog costs the owner per run. The owner's CPU per finished run, and
 * the runs finished per second, while a backlog of `--backlog` runs waits behind the fleet's
 * slots, against the same with no backlog (one run submitted per report, so that nothing waits
 * beyond the slots): measured in the same run, on the same owner, one after the other.
 *
 *   npx vite-node bench/backlog.ts [--backlog 10000] [--runs 2000] [--workers 4] [--slots 2]
 *
 * - Owner: the stack `svc serve` wires for runs (Owner.layerWithRuns with the Dispatcher, the
 *   SQLite journal file with its pragmas and group commit, live projections, the checkpoint
 *   schedule, node:crypto hashing and entropy) on a temporary SVC_HOME. Its OwnerHost knows one
 *   job, `bench:noop@1.0.0`, that requires `pool=bench`, a label only the workers have.
 * - Workers: `--workers` identities (invite, join, hello, advertise: `--slots` slots each,
 *   refreshed every 4 s), driven in this process through `Owner.handle` (the route's service,
 *   without HTTPS: what is measured is the owner's work per run, not the transport): each claims
 *   (waiting up to 5 s), reports `{}` at once asking for the next attempt (`claimNext`), and runs
 *   what comes back before claiming again. Their CPU is counted too, the same in both phases.
 * - Phases: "no backlog": `2 x slots` runs in flight, one more submitted per run finished,
 *   `--runs` counted after a warm-up; "backlog": `--backlog` runs more submitted (not counted),
 *   then `--runs` counted, one more submitted per run finished as before: the backlog stands
 *   (runs keep coming as fast as they finish), and each phase's CPU holds one submission per run.
 * - Also printed, per phase: PlacementDecided events and journal bytes per finished run.
 *
 * Target: the CPU per run with the backlog at most 1.5 x the CPU per run without (a round must
 * not cost in proportion to the runs waiting). Prints PASS or FAIL; exits 1 on FAIL.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import { Journal } from "../src/app/journal/Journal.js"
import { Projections } from "../src/app/journal/Projections.js"
import { Dispatcher } from "../src/app/runs/Dispatcher.js"
import { Owner } from "../src/app/workers/Owner.js"
import type { WorkerRequest, WorkerResponse } from "../src/app/workers/Protocol.js"
import { layer as journalLayer } from "../src/infra/journal/SqliteJournal.js"
import { storePath } from "../src/infra/journal/StoreFile.js"
import { benchHost, benchOwner, resolvingOnly, workerOnlyJob } from "./owner.js"
import { arg, fmt, printMachine } from "./support.js"

const BACKLOG = arg("backlog", 10_000)
const RUNS = arg("runs", 2_000)
const WORKERS = arg("workers", 4)
const SLOTS = arg("slots", 2)
const WARM_RUNS = 300
const TARGET = 1.5
const ADDRESS = "bench:noop@1.0.0"
const DIGEST = "sha256:" + "b".repeat(64)
const POOL = "pool=bench"

const noop = workerOnlyJob(ADDRESS, "noop", DIGEST, POOL, tmpdir())

const cpuMicros = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}

interface Phase {
  readonly label: string
  readonly runs: number
  readonly seconds: number
  readonly cpuPerRunUs: number
  readonly decisionsPerRun: number
  readonly bytesPerRun: number
  readonly waitingAtEnd: number
}

const main = async () => {
  printMachine("bench/backlog")
  const home = mkdtempSync(join(tmpdir(), "svc-bench-backlog-"))
  const owner = benchOwner(
    home,
    journalLayer(storePath(home)),
    benchHost(resolvingOnly(noop), ["os=linux"]),
    { url: "https://127.0.0.1:7443", fingerprint: "ab".repeat(32) }
  )

  const program = Effect.gen(function* () {
    const service = yield* Owner
    const dispatcher = yield* Dispatcher
    const projections = yield* Projections
    const journal = yield* Journal
    const call = (credential: string, request: WorkerRequest): Effect.Effect<WorkerResponse | undefined> =>
      Effect.orElseSucceed(service.handle(credential, request), () => undefined)

    // The fleet: joined, said hello, advertised (refreshed every 4 s: an advertisement lapses after 15 s).
    const workers: Array<{ credential: string; fence: number }> = []
    for (let i = 0; i < WORKERS; i++) {
      const { token } = yield* service.invite({ scope: [], expiresInMs: null, name: `bench-${i}`, actor: "bench" })
      const joined = (yield* service.handle(token, { kind: "join", name: `bench-${i}` })) as Extract<WorkerResponse, { kind: "joined" }>
      const welcome = (yield* service.handle(joined.credential, { kind: "hello", protocol: 1, running: [] })) as Extract<WorkerResponse, { kind: "welcome" }>
      workers.push({ credential: joined.credential, fence: welcome.fence })
    }
    const advertise = (w: { credential: string; fence: number }) =>
      call(w.credential, { kind: "advertise", fence: w.fence, capacity: SLOTS, labels: ["os=linux", POOL], capabilities: ["node"], artifacts: [{ address: ADDRESS, digest: DIGEST }] })
    for (const w of workers) yield* advertise(w)
    const refresher = yield* Effect.fork(Effect.forever(Effect.zipRight(Effect.sleep("4 seconds"), Effect.forEach(workers, advertise, { discard: true }))))

    // Each worker: claim, report at once asking for the next, run what comes back.
    let finished = 0
    let onFinished: () => void = () => undefined
    const loop = (w: { credential: string; fence: number }) =>
      Effect.gen(function* () {
        let attempt: string | undefined
        for (;;) {
          if (attempt === undefined) {
            const answer = yield* call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 5, running: [] })
            if (answer?.kind === "work") attempt = answer.attempt
            continue
          }
          const ack = yield* call(w.credential, { kind: "report", fence: w.fence, attempt, outcome: { ok: true, result: {} }, claimNext: true, running: [] })
          finished++
          onFinished()
          attempt = ack?.kind === "ack" && ack.next != null ? ack.next.attempt : undefined
        }
      })
    const loops = yield* Effect.forEach(workers, (w) => Effect.fork(loop(w)))

    const submit = (n: number) => Effect.asVoid(dispatcher.submit({ address: ADDRESS, input: { n }, prefer: [], actor: "bench" }))
    const pendingNow = Effect.map(projections.state, (s) => HashMap.size(s.runs.pending))
    const eventsSince = (from: number) =>
      Effect.gen(function* () {
        let decided = 0
        let at = from
        for (;;) {
          const batch = yield* journal.read(at, 5_000)
          if (batch.length === 0) return decided
          for (const e of batch) if (e.type === "PlacementDecided") decided++
          at = batch[batch.length - 1]!.sequence
        }
      })
    const sequenceNow = Effect.map(projections.state, (s) => s.sequence)
    const storeBytes = () => statSync(storePath(home)).size + (statSync(`${storePath(home)}-wal`, { throwIfNoEntry: false })?.size ?? 0)

    /** Counts `RUNS` finished runs from now (calling `also` at each): time, CPU, decisions and bytes journaled meanwhile. */
    const measure = (label: string, also: () => void = () => undefined) =>
      Effect.gen(function* () {
        const seq0 = yield* sequenceNow
        const bytes0 = storeBytes()
        const [t0, cpu0, n0] = [performance.now(), cpuMicros(), finished]
        yield* Effect.async<void>((resume) => {
          onFinished = () => {
            also()
            if (finished - n0 >= RUNS) {
              onFinished = () => undefined
              resume(Effect.void)
            }
          }
        })
        const [t1, cpu1] = [performance.now(), cpuMicros()]
        const decided = yield* eventsSince(seq0)
        const phase: Phase = {
          label,
          runs: RUNS,
          seconds: (t1 - t0) / 1000,
          cpuPerRunUs: (cpu1 - cpu0) / RUNS,
          decisionsPerRun: decided / RUNS,
          bytesPerRun: (storeBytes() - bytes0) / RUNS,
          waitingAtEnd: yield* pendingNow
        }
        console.log(
          `  ${label.padEnd(20)} ${fmt(RUNS / phase.seconds).padStart(6)} runs/s   ${fmt(phase.cpuPerRunUs).padStart(7)} us CPU per run   ` +
            `${phase.decisionsPerRun.toFixed(2)} PlacementDecided per run   ${fmt(phase.bytesPerRun).padStart(6)} B of store per run   ${fmt(phase.waitingAtEnd)} waiting at the end`
        )
        return phase
      })

    // No backlog: twice the fleet's slots in flight, one more submitted per run finished.
    let n = 0
    const runtime = yield* Effect.runtime<never>()
    const refill = () => void Effect.runFork(Effect.provide(submit(n++), runtime.context))
    yield* Effect.forEach(Array.from({ length: 2 * WORKERS * SLOTS }), () => submit(n++), { discard: true })
    const warm = finished + WARM_RUNS
    yield* Effect.async<void>((resume) => {
      onFinished = () => {
        refill()
        if (finished >= warm) resume(Effect.void)
      }
    })
    console.log(`\n  ${WORKERS} workers x ${SLOTS} slots; ${fmt(RUNS)} runs counted per phase (after ${WARM_RUNS} to warm up)`)
    const baseline = yield* measure("no backlog", refill)

    // The backlog: submitted at once (16 at a time), then the same count measured.
    const t = performance.now()
    yield* Effect.forEach(Array.from({ length: BACKLOG }), () => submit(n++), { concurrency: 16, discard: true })
    console.log(`  ${fmt(BACKLOG)} runs submitted in ${((performance.now() - t) / 1000).toFixed(1)} s; ${fmt(yield* pendingNow)} waiting`)
    // A standing backlog: one more submitted per run finished, as in the phase without.
    const backlog = yield* measure(`backlog of ${fmt(BACKLOG)}`, refill)

    yield* Fiber.interrupt(refresher)
    yield* Effect.forEach(loops, Fiber.interrupt, { discard: true })
    return { baseline, backlog }
  })

  const { baseline, backlog } = await Effect.runPromise(Effect.scoped(Effect.provide(program, owner)))
  rmSync(home, { recursive: true, force: true })
  const ratio = backlog.cpuPerRunUs / baseline.cpuPerRunUs
  const pass = ratio <= TARGET
  console.log(
    `\n  CPU per run with the backlog / without: ${ratio.toFixed(2)} (target <= ${TARGET}: ${pass ? "PASS" : "FAIL"}); ` +
      `runs/s with / without: ${(baseline.seconds / backlog.seconds).toFixed(2)}`
  )
  process.exitCode = pass ? 0 : 1
}

void main()
