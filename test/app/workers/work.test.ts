/**
 * The worker side of runs (Work.ts) with scripted owners and real child processes: the
 * machine-wide arbiter keeps the total running within capacity across owners; an attempt told
 * to stop is stopped and not reported; a report waits out an unreachable owner; a refused
 * (superseded) report is dropped.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { ExecutorService } from "../../../src/app/runs/Executor.js"
import type { ResolvedJob } from "../../../src/app/runs/JobCatalog.js"
import { Unreachable } from "../../../src/app/workers/Link.js"
import { Refusal, type WorkerRequest, type WorkerResponse } from "../../../src/app/workers/Protocol.js"
import { makeWork, type WorkSide } from "../../../src/app/workers/Work.js"
import * as ChildExecutor from "../../../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../../../src/infra/runs/FileRunFiles.js"

const bagDir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "svc-work-bag-"))
// Sleeps for input.ms, printing its pid first (stderr), then its result.
fs.writeFileSync(
  nodePath.join(bagDir, "main.mjs"),
  `let s = ""; for await (const c of process.stdin) s += c; const i = JSON.parse(s); console.error("pid " + process.pid); await new Promise((r) => setTimeout(r, i.ms)); console.log(JSON.stringify({ done: i.n }))\n`
)
const job: ResolvedJob = {
  job: {
    address: "sleep:nap@1.0.0",
    bag: "sleep",
    job: "nap",
    digest: "sha256:d",
    executor: "node",
    remoteEligible: true,
    ownerOnly: [],
    requiredLabels: [],
    requiredBins: [],
    bounds: [],
    timeoutMs: null
  },
  bagDir,
  runs: { using: "node", main: "main.mjs" },
  env: [],
  workingDirectory: undefined,
  inputProblem: () => undefined,
  outputProblem: () => undefined
}

/** The real executor, counting how many children run at once. */
const counting = () => {
  const real = ChildExecutor.make()
  const c = { now: 0, max: 0 }
  const executor: ExecutorService = {
    run: (spec) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          c.now++
          c.max = Math.max(c.max, c.now)
        }),
        () => real.run(spec),
        () => Effect.sync(() => c.now--)
      )
  }
  return { executor, c }
}

const sideWith = (slots: Effect.Semaphore, executor: ExecutorService): WorkSide => ({
  slots,
  resolve: () => Effect.succeed(job),
  executor,
  files: FileRunFiles.make(fs.mkdtempSync(nodePath.join(os.tmpdir(), "svc-work-out-"))),
  claimWaitSeconds: 1,
  heartbeatEvery: Duration.millis(100)
})

const work = (attempt: string, input: unknown): WorkerResponse => ({
  kind: "work",
  attempt,
  runId: attempt.split(".")[0]!,
  address: job.job.address,
  digest: job.job.digest,
  input,
  timeoutMs: null,
  newCredential: null
})
const ack = (stop: ReadonlyArray<string> = []): WorkerResponse => ({ kind: "ack", stop, newCredential: null })
const noWork: WorkerResponse = { kind: "no-work", retryAfterSeconds: 0, newCredential: null }

/** An owner handing out `jobs` attempts, then none; recording reports. */
const owner = (prefix: string, jobs: number, ms: number, answer?: (r: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal | Unreachable> | undefined) => {
  let handed = 0
  const reports: Array<{ attempt: string; ok: boolean; result: unknown }> = []
  const calls: Array<WorkerRequest> = []
  const call = (r: WorkerRequest): Effect.Effect<WorkerResponse, Refusal | Unreachable> => {
    calls.push(r)
    const scripted = answer?.(r)
    if (scripted !== undefined) return scripted
    switch (r.kind) {
      case "claim":
        return handed < jobs ? Effect.succeed(work(`r${prefix}.${++handed}`, { n: handed, ms })) : Effect.as(Effect.sleep(Duration.millis(50)), noWork)
      case "report":
        reports.push({ attempt: r.attempt, ok: r.outcome.ok, result: r.outcome.result })
        return Effect.succeed(ack())
      default:
        return Effect.succeed(ack())
    }
  }
  return { call, reports, calls }
}

const until = (what: string, ok: () => boolean, ms = 10_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + ms
    while (!ok()) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`timed out waiting for ${what}`)
      yield* Effect.sleep(Duration.millis(20))
    }
  })

describe("the worker side of runs", () => {
  it.live("keeps the total running within the machine's capacity across two owners, and reports each attempt once", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(2)
      const { c, executor } = counting()
      const a = owner("A", 3, 200)
      const b = owner("B", 3, 200)
      const wa = yield* makeWork(sideWith(slots, executor), a.call)
      const wb = yield* makeWork(sideWith(slots, executor), b.call)
      const fa = yield* Effect.fork(wa.session(1))
      const fb = yield* Effect.fork(wb.session(1))
      yield* until("six reports", () => a.reports.length + b.reports.length === 6, 20_000)
      expect(c.max).toBeLessThanOrEqual(2)
      expect(c.max).toBe(2)
      for (const o of [a, b]) {
        expect(o.reports.map((r) => r.attempt).sort()).toEqual([1, 2, 3].map((n) => `r${o === a ? "A" : "B"}.${n}`))
        expect(o.reports.every((r) => r.ok)).toBe(true)
      }
      // Heartbeats listed what ran, and carried its output.
      const beats = [...a.calls, ...b.calls].filter((r): r is Extract<WorkerRequest, { kind: "heartbeat" }> => r.kind === "heartbeat")
      expect(beats.some((h) => h.running.length > 0)).toBe(true)
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.live("each claim lists the attempts it runs, an attempt whose report is not answered yet among them", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(2)
      let reporting = false
      const claimsWhileReporting: Array<ReadonlyArray<string> | undefined> = []
      const o = owner("L", 1, 50, (r) => {
        if (r.kind === "claim" && reporting) claimsWhileReporting.push(r.running)
        if (r.kind !== "report") return undefined
        reporting = true
        // The owner takes its time to answer the report; the worker's other slot claims meanwhile.
        return Effect.as(Effect.sleep(Duration.millis(600)), ack()).pipe(Effect.ensuring(Effect.sync(() => void (reporting = false))))
      })
      const side = sideWith(slots, ChildExecutor.make())
      const w = yield* makeWork(side, o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report is answered", () => o.calls.some((r) => r.kind === "report") && !reporting && w.running().length === 0)
      // Its output went with the report: the worker's copy is gone.
      const report = o.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")!
      expect(report.output).toMatchObject({ attempt: "rL.1" })
      yield* until("its files are removed", () => !fs.existsSync(side.files.paths("rL.1").stdout) && !fs.existsSync(side.files.paths("rL.1").stderr))
      expect(yield* side.files.attempts).toEqual([])
      const claims = o.calls.filter((r): r is Extract<WorkerRequest, { kind: "claim" }> => r.kind === "claim")
      expect(claims.every((c) => c.running !== undefined)).toBe(true)
      expect(claims[0]!.running).toEqual([])
      expect(claimsWhileReporting.length).toBeGreaterThan(0)
      expect(claimsWhileReporting.every((running) => running?.includes("rL.1"))).toBe(true)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("removes output files left by a process that ended while running, before it claims", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(1)
      const side = sideWith(slots, ChildExecutor.make())
      yield* side.files.append("rOld.1", "stdout", "half of it\n")
      yield* side.files.append("rOld.2", "stderr", "crashed\n")
      expect([...(yield* side.files.attempts)].sort()).toEqual(["rOld.1", "rOld.2"])
      yield* makeWork(side, owner("N", 0, 0).call)
      expect(yield* side.files.attempts).toEqual([])
    })
  )

  it.live("stops an attempt the owner says to stop: its child is gone and it is not reported", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(1)
      let stop: ReadonlyArray<string> = []
      const o = owner("S", 1, 30_000, (r) => (r.kind === "heartbeat" ? Effect.succeed(ack(stop)) : undefined))
      const side = sideWith(slots, ChildExecutor.make())
      const w = yield* makeWork(side, o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("it runs", () => w.running().length === 1)
      const stderr = side.files.paths("rS.1").stderr
      yield* until("its pid", () => fs.existsSync(stderr) && /pid \d+/.test(fs.readFileSync(stderr, "utf8")))
      const pid = Number(/pid (\d+)/.exec(fs.readFileSync(stderr, "utf8"))![1])
      stop = ["rS.1"]
      yield* until("it stopped", () => w.running().length === 0)
      expect(() => process.kill(pid, 0)).toThrow()
      expect(o.reports).toEqual([])
      // A stopped attempt's output is not wanted: the copy here is gone too.
      yield* until("its files are removed", () => !fs.existsSync(stderr))
      // Its slot is free again (once the claims stop taking it).
      yield* Fiber.interrupt(f)
      yield* slots.take(1)
      yield* slots.release(1)
    })
  )

  it.live("an attempt stopped before any heartbeat listed it is still followed by one heartbeat without it (its slot on the owner is freed)", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(1)
      const o = owner("Q", 1, 30_000)
      const w = yield* makeWork({ ...sideWith(slots, ChildExecutor.make()), heartbeatEvery: Duration.millis(400) }, o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("it runs", () => w.running().length === 1)
      // Told to stop in an advertisement's answer, before the first heartbeat.
      yield* w.stop(["rQ.1"])
      yield* until("it stopped", () => w.running().length === 0)
      const beats = () => o.calls.filter((r): r is Extract<WorkerRequest, { kind: "heartbeat" }> => r.kind === "heartbeat")
      yield* until("a heartbeat listing nothing", () => beats().some((h) => h.running.length === 0), 5_000)
      expect(o.reports).toEqual([])
      // And then no more: nothing runs, nothing changed.
      const sent = beats().length
      yield* Effect.sleep(Duration.millis(1_000))
      expect(beats().length).toBe(sent)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("reports after the owner comes back, and drops a report the owner refuses", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(2)
      let away = 2
      const o = owner("U", 2, 50, (r) => {
        if (r.kind !== "report") return undefined
        if (r.attempt === "rU.2") return Effect.fail(new Refusal({ code: "superseded", message: "placed again" }))
        return away-- > 0 ? Effect.fail(new Unreachable({ message: "connection refused" })) : undefined
      })
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report of rU.1", () => o.reports.length === 1, 15_000)
      expect(o.reports[0]).toMatchObject({ attempt: "rU.1", ok: true, result: { done: 1 } })
      const tries = o.calls.filter((r) => r.kind === "report" && r.attempt === "rU.1")
      expect(tries).toHaveLength(3)
      yield* until("both finished", () => w.running().length === 0)
      expect(o.calls.filter((r) => r.kind === "report" && r.attempt === "rU.2")).toHaveLength(1)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("stopAll (the link ended: revoked or fenced) stops everything it runs", () =>
    Effect.gen(function* () {
      const slots = yield* Effect.makeSemaphore(3)
      const o = owner("R", 3, 30_000)
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("three running", () => w.running().length === 3)
      yield* Fiber.interrupt(f)
      yield* w.stopAll
      expect(w.running()).toEqual([])
      expect(o.reports).toEqual([])
    })
  )
})
