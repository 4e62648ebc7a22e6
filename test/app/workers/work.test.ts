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
import * as TestClock from "effect/TestClock"
import type { ExecutorService } from "../../../src/app/runs/Executor.js"
import { JobNotRunnable, type ResolvedJob } from "../../../src/app/runs/JobCatalog.js"
import { Unreachable } from "../../../src/app/workers/Link.js"
import { jsonBytes, MAX_BODY_BYTES, Refusal, type WorkerRequest, type WorkerResponse } from "../../../src/app/workers/Protocol.js"
import { HAND_OVER_WITHIN, makeWork, MAX_REPORT_BYTES, type WorkSide } from "../../../src/app/workers/Work.js"
import { makeSlots, type Slots } from "../../../src/app/workers/Slots.js"
import * as ChildExecutor from "../../../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../../../src/infra/runs/FileRunFiles.js"
import { capturingLogs } from "../../support/logs.js"
import { nodeJob } from "../../support/runs.js"

const bagDir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "svc-work-bag-"))
// Sleeps for input.ms, printing its pid first (stderr), then its result.
fs.writeFileSync(
  nodePath.join(bagDir, "main.mjs"),
  `let s = ""; for await (const c of process.stdin) s += c; const i = JSON.parse(s); console.error("pid " + process.pid); await new Promise((r) => setTimeout(r, i.ms)); console.log(JSON.stringify({ done: i.n }))\n`
)
const job: ResolvedJob = nodeJob("sleep:nap@1.0.0", "sha256:d", bagDir)

// Prints what its input says on stdout and stderr, then a result of `result` characters.
fs.writeFileSync(
  nodePath.join(bagDir, "print.mjs"),
  `let s = ""; process.stdin.setEncoding("utf8"); for await (const c of process.stdin) s += c; const i = JSON.parse(s); process.stderr.write(i.err); await new Promise((r) => process.stdout.write(i.out, r)); console.log(JSON.stringify({ pad: "r".repeat(i.result) }))\n`
)
const printing: ResolvedJob = { ...job, job: { ...job.job, address: "print:lots@1.0.0" }, runs: { using: "node", main: "print.mjs" } }

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

const sideWith = (slots: Slots, executor: ExecutorService): WorkSide => ({
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

/**
 * One slot, and the race made certain: as the first work comes in, something else (another
 * owner's work, this machine's own run) takes that slot, so the work finds none free. `raced`:
 * it has happened; `real.release` gives the slot back.
 */
const lastSlotTakenAsWorkArrives = Effect.map(makeSlots(1), (real) => {
  let raced = false
  const slots: Slots = { ...real, tryTake: Effect.suspend(() => (raced ? real.tryTake : Effect.as(Effect.andThen(Effect.sync(() => void (raced = true)), real.take), false))) }
  return { real, slots, raced: () => raced }
})

describe("the worker side of runs", () => {
  it.live("keeps the total running within the machine's capacity across two owners, and reports each attempt once", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(2)
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
      const slots = yield* makeSlots(2)
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

  it.live("a busy worker reports and claims the next in one call: the freed slot goes to the attempt handed back", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const { c, executor } = counting()
      let handed = 1
      const o = owner("P", 1, 20, (r) => {
        if (r.kind !== "report" || r.claimNext !== true) return undefined
        o.reports.push({ attempt: r.attempt, ok: r.outcome.ok, result: r.outcome.result })
        const next = handed < 4 ? work(`rP.${++handed}`, { n: handed, ms: 20 }) : undefined
        return Effect.succeed({ kind: "ack", stop: [], newCredential: null, next: next === undefined || next.kind !== "work" ? null : { attempt: next.attempt, runId: next.runId, address: next.address, digest: next.digest, input: next.input, timeoutMs: next.timeoutMs } })
      })
      const w = yield* makeWork(sideWith(slots, executor), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("four reports", () => o.reports.length === 4, 20_000)
      expect(o.reports.map((r) => r.attempt)).toEqual(["rP.1", "rP.2", "rP.3", "rP.4"])
      const upToLast = o.calls.slice(0, o.calls.findIndex((r) => r.kind === "report" && r.attempt === "rP.4") + 1)
      // One claim for four attempts: each report asked for the next, and its slot passed on.
      expect(upToLast.filter((r) => r.kind === "claim").length).toBe(1)
      expect(upToLast.filter((r) => r.kind === "report").every((r) => r.kind === "report" && r.claimNext === true)).toBe(true)
      expect(c.max).toBe(1)
      // The last report's answer handed nothing: the slot went back, and the claims resumed.
      yield* until("a claim after the last report", () => o.calls.slice(upToLast.length).some((r) => r.kind === "claim"))
      yield* Fiber.interrupt(f)
      expect(yield* slots.take.pipe(Effect.timeout(Duration.seconds(2)), Effect.option)).toMatchObject({ _tag: "Some" })
    })
  )

  it.live("a report that claims the next, alone in asking, lists what else the worker runs", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(2)
      let handed = 0
      const reports: Array<Extract<WorkerRequest, { kind: "report" }>> = []
      const o = owner("Q", 0, 0, (r) => {
        if (r.kind === "claim") {
          handed++
          if (handed === 1) return Effect.succeed(work("rQ.1", { n: 1, ms: 20 }))
          if (handed === 2) return Effect.succeed(work("rQ.2", { n: 2, ms: 1_500 }))
          return undefined
        }
        if (r.kind === "report") {
          reports.push(r)
          // The first report is handed a third attempt back.
          const next = r.attempt === "rQ.1" ? { attempt: "rQ.3", runId: "rQ", address: job.job.address, digest: job.job.digest, input: { n: 3, ms: 20 }, timeoutMs: null } : null
          return Effect.succeed({ kind: "ack", stop: [], newCredential: null, ...(r.claimNext === true ? { next } : {}) } as WorkerResponse)
        }
        return undefined
      })
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("three reports", () => reports.length === 3, 20_000)
      const [first] = reports
      // Alone in asking: it lists the other attempt that runs (not itself, reported in this call).
      expect(first).toMatchObject({ attempt: "rQ.1", claimNext: true, running: ["rQ.2"] })
      // The attempt handed back ran in rQ.1's slot and was reported in turn.
      expect(reports.map((r) => r.attempt).sort()).toEqual(["rQ.1", "rQ.2", "rQ.3"])
      yield* Fiber.interrupt(f)
    })
  )

  it.live("does not keep a slot for the next attempt when another owner's claims wait for it", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const a = owner("A", 2, 300)
      const b = owner("B", 0, 0)
      const wa = yield* makeWork(sideWith(slots, ChildExecutor.make()), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      yield* until("A runs", () => wa.running().length === 1)
      // B's claims now wait for the slot A's attempt holds.
      const wb = yield* makeWork(sideWith(slots, ChildExecutor.make()), b.call)
      const fb = yield* Effect.fork(wb.session(1))
      yield* until("A reports", () => a.reports.length >= 1, 20_000)
      const first = a.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")!
      expect(first.claimNext).toBeUndefined()
      // The slot went to B's claim, which found nothing and gave it back; A goes on.
      yield* until("A's second report", () => a.reports.length === 2, 20_000)
      expect(b.calls.some((r) => r.kind === "claim")).toBe(true)
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.live("a claim waiting at its owner holds no slot: this machine's own run starts at once beside it", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      let givenUp = 0
      // An owner with nothing to hand out holds each claim 2 s (a long poll).
      const o = owner("I", 0, 0, (r) =>
        r.kind === "claim" ? Effect.as(Effect.sleep(Duration.seconds(2)), noWork).pipe(Effect.onInterrupt(() => Effect.sync(() => void givenUp++))) : undefined
      )
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("a claim waits at the owner", () => o.calls.some((r) => r.kind === "claim"))
      // The machine's one slot is free for its own run, though a claim waits.
      expect(yield* slots.withSlot(Effect.succeed("ran")).pipe(Effect.timeout(Duration.millis(500)))).toBe("ran")
      // The claim was not given up: it waited its whole time, then the link claimed again.
      yield* until("a second claim", () => o.calls.filter((r) => r.kind === "claim").length === 2)
      expect(givenUp).toBe(0)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("a claim says how many of the machine's slots other work holds", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(3)
      // Two slots held by other work (another owner's attempts, this machine's own runs).
      yield* slots.take
      yield* slots.take
      const o = owner("K", 0, 0, (r) => (r.kind === "claim" ? Effect.as(Effect.sleep(Duration.seconds(10)), noWork) : undefined))
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("a claim", () => o.calls.some((r) => r.kind === "claim"))
      expect(o.calls.find((r) => r.kind === "claim")).toMatchObject({ busy: 2 })
      yield* Fiber.interrupt(f)
    })
  )

  it.live("with one slot and two owners, one owner's work runs while the other's claim waits", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const a = owner("A", 0, 0, (r) => (r.kind === "claim" ? Effect.as(Effect.sleep(Duration.seconds(10)), noWork) : undefined))
      let handed = false
      const b = owner("B", 0, 0, (r) => {
        if (r.kind !== "claim" || handed) return undefined
        handed = true
        return Effect.as(Effect.sleep(Duration.millis(300)), work("rB.1", { n: 1, ms: 50 }))
      })
      const wa = yield* makeWork(sideWith(slots, ChildExecutor.make()), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      yield* until("A's claim waits", () => a.calls.some((r) => r.kind === "claim"))
      const wb = yield* makeWork(sideWith(slots, ChildExecutor.make()), b.call)
      const fb = yield* Effect.fork(wb.session(1))
      // B's attempt runs and is reported long before A's claim would have let the slot go (10 s).
      yield* until("B's report", () => b.reports.length === 1, 5_000)
      expect(b.reports[0]).toMatchObject({ attempt: "rB.1", ok: true })
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.live("work that arrives when the last slot went meanwhile waits for a slot as an attempt the worker runs, then runs", () =>
    Effect.gen(function* () {
      const { real, slots, raced } = yield* lastSlotTakenAsWorkArrives
      const { c, executor } = counting()
      const o = owner("W", 1, 400)
      const w = yield* makeWork(sideWith(slots, executor), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the work is in and the slot gone", raced)
      yield* Effect.sleep(Duration.millis(300))
      // Kept, not started: it waits for the slot, listed as running (heartbeats tell the owner).
      expect(c.max).toBe(0)
      expect(w.running()).toEqual(["rW.1"])
      yield* until("a heartbeat listing it", () => o.calls.some((r) => r.kind === "heartbeat" && r.running.includes("rW.1")))
      // And saying it waits for a slot, so the owner shows it so.
      const beats = () => o.calls.filter((r): r is Extract<WorkerRequest, { kind: "heartbeat" }> => r.kind === "heartbeat")
      expect(beats().find((r) => r.running.includes("rW.1"))?.waiting).toEqual(["rW.1"])
      // No claim while it waits: the link claims again only once it has its slot and one is free.
      const claims = o.calls.filter((r) => r.kind === "claim").length
      yield* real.release
      // Once it has the slot, heartbeats list it running and no longer waiting (it runs 400 ms: heartbeats every 100).
      const waited = beats().length
      yield* until("a heartbeat listing it started", () => beats().slice(waited).some((r) => r.running.includes("rW.1") && r.waiting === undefined))
      yield* until("its report", () => o.reports.length === 1)
      expect(o.reports[0]).toMatchObject({ attempt: "rW.1", ok: true })
      expect(c.max).toBe(1)
      expect(o.calls.slice(0, o.calls.findIndex((r) => r.kind === "report")).filter((r) => r.kind === "claim").length).toBe(claims)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("an attempt waiting for a slot that the owner says to stop leaves the queue: it never runs, is not reported, and the slot goes on to others", () =>
    Effect.gen(function* () {
      const { real, slots, raced } = yield* lastSlotTakenAsWorkArrives
      const { c, executor } = counting()
      let stopIt = false
      const o = owner("S", 1, 50, (r) => (r.kind === "heartbeat" ? Effect.succeed(ack(stopIt && r.running.includes("rS.1") ? ["rS.1"] : [])) : undefined))
      const w = yield* makeWork(sideWith(slots, executor), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("it waits for the slot", () => raced() && w.running().includes("rS.1"))
      expect(slots.waiting()).toBeGreaterThanOrEqual(1)
      stopIt = true
      yield* until("it is gone", () => w.running().length === 0)
      // Out of the queue: the slot given back is free (the link may claim with it), nothing ran.
      yield* real.release
      yield* Effect.sleep(Duration.millis(300))
      expect(c.max).toBe(0)
      expect(o.reports).toEqual([])
      expect(real.taken()).toBe(0)
      // And a heartbeat without it followed, so the owner frees what it counted for it.
      yield* until("a heartbeat without it", () => o.calls.some((r, i) => r.kind === "heartbeat" && !r.running.includes("rS.1") && i > o.calls.findIndex((x) => x.kind === "heartbeat" && x.running.includes("rS.1"))))
      yield* Fiber.interrupt(f)
    })
  )

  it.live("with one slot, two owners handing work at once both have it run, one after the other: no answer is dropped", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const { c, executor } = counting()
      const handedOnce = (prefix: string, delayMs: number) => {
        let handed = false
        const o = owner(prefix, 0, 0, (r) => {
          if (r.kind !== "claim" || handed) return undefined
          handed = true
          return Effect.as(Effect.sleep(Duration.millis(delayMs)), work(`r${prefix}.1`, { n: 1, ms: 300 }))
        })
        return o
      }
      // A answers at once; B a moment later, when A's attempt has taken the one slot.
      const a = handedOnce("A", 0)
      const b = handedOnce("B", 100)
      const wa = yield* makeWork(sideWith(slots, executor), a.call)
      const wb = yield* makeWork(sideWith(slots, executor), b.call)
      const fa = yield* Effect.fork(wa.session(1))
      const fb = yield* Effect.fork(wb.session(1))
      yield* until("both reports", () => a.reports.length === 1 && b.reports.length === 1, 10_000)
      expect([a.reports[0]!.attempt, b.reports[0]!.attempt]).toEqual(["rA.1", "rB.1"])
      expect(c.max).toBe(1)
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.live("no claim lists what the worker runs while a report that claims the next is in flight", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(2)
      let asking = false
      let stopLong = false
      const claimsWhileAsking: Array<Extract<WorkerRequest, { kind: "claim" }>> = []
      let handed = 0
      const o = owner("C", 0, 0, (r) => {
        if (r.kind === "claim") {
          if (asking) claimsWhileAsking.push(r)
          // A short attempt, then a long one; nothing after.
          handed++
          if (handed === 1) return Effect.succeed(work("rC.1", { n: 1, ms: 20 }))
          if (handed === 2) return Effect.succeed(work("rC.2", { n: 2, ms: 30_000 }))
          return undefined
        }
        // The long attempt is stopped once the short one's report (asking for the next) is in: its slot frees up meanwhile.
        if (r.kind === "heartbeat") return Effect.succeed(ack(stopLong ? ["rC.2"] : []))
        if (r.kind === "report" && r.claimNext === true) {
          asking = true
          stopLong = true
          return Effect.as(Effect.sleep(Duration.millis(1_500)), { kind: "ack", stop: [], newCredential: null, next: null } as WorkerResponse).pipe(Effect.ensuring(Effect.sync(() => void (asking = false))))
        }
        return undefined
      })
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("a claim while the report is in flight", () => claimsWhileAsking.length > 0, 20_000)
      expect(claimsWhileAsking.every((c) => c.running === undefined)).toBe(true)
      yield* until("the report is answered", () => o.calls.some((r) => r.kind === "report") && !asking, 20_000)
      // Afterwards the claims list what runs again.
      yield* until("a listing claim", () => o.calls.some((r, i) => r.kind === "claim" && r.running !== undefined && i > o.calls.findIndex((x) => x.kind === "report")), 20_000)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("removes output files left by a process that ended while running, before it claims", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
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
      const slots = yield* makeSlots(1)
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
      yield* slots.take
      yield* slots.release
    })
  )

  it.live("an attempt stopped before any heartbeat listed it is still followed by one heartbeat without it (its slot on the owner is freed)", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
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
      const slots = yield* makeSlots(2)
      let away = 2
      const o = owner("U", 2, 50, (r) => {
        if (r.kind !== "report") return undefined
        if (r.attempt === "rU.2") return Effect.fail(new Refusal({ code: "superseded", message: "placed again" }))
        return away-- > 0 ? Effect.fail(new Unreachable({ message: "connection refused" })) : undefined
      })
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const logs: Array<string> = []
      const f = yield* Effect.fork(w.session(1).pipe(Effect.provide(capturingLogs(logs))))
      yield* until("the report of rU.1", () => o.reports.length === 1, 15_000)
      expect(o.reports[0]).toMatchObject({ attempt: "rU.1", ok: true, result: { done: 1 } })
      const tries = o.calls.filter((r) => r.kind === "report" && r.attempt === "rU.1")
      expect(tries).toHaveLength(3)
      // Said once, not at each try.
      expect(logs.filter((l) => l.includes("was not taken"))).toEqual(["WARN the report of rU.1 was not taken (connection refused); it is sent again until it is"])
      yield* until("both finished", () => w.running().length === 0)
      expect(o.calls.filter((r) => r.kind === "report" && r.attempt === "rU.2")).toHaveLength(1)
      yield* Fiber.interrupt(f)
    })
  )

  it.live("a job whose bag this worker cannot read now (too many open files) fails, saying so; one it does not hold is declined", () =>
    Effect.gen(function* () {
      const unreadable = owner("E", 1, 10)
      const side = (e: JobNotRunnable): WorkSide => ({ ...sideWith(slots, ChildExecutor.make()), resolve: () => Effect.fail(e) })
      const slots = yield* makeSlots(1)
      const w = yield* makeWork(side(new JobNotRunnable({ message: "reading bag demo: EMFILE", unreadable: true })), unreadable.call)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report", () => unreadable.reports.length === 1, 15_000)
      yield* Fiber.interrupt(f)
      const sent = unreadable.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")!
      expect(sent.outcome).toMatchObject({ ok: false, error: "its bag could not be read on this worker: reading bag demo: EMFILE", exitCode: null })
      expect(unreadable.calls.some((r) => r.kind === "decline")).toBe(false)

      const missing = owner("M", 1, 10)
      const w2 = yield* makeWork(side(new JobNotRunnable({ message: "bag demo is not installed here (svc bag install DIR)" })), missing.call)
      const g = yield* Effect.fork(w2.session(1))
      yield* until("the decline", () => missing.calls.some((r) => r.kind === "decline"), 15_000)
      yield* Fiber.interrupt(g)
      expect(missing.calls.find((r) => r.kind === "decline")).toMatchObject({ attempt: "rM.1", reason: "bag demo is not installed here (svc bag install DIR)" })
      expect(missing.reports).toEqual([])
    })
  )

  it.live("a report refused as fenced because it crossed this process's own new session goes again under it; with no new session, until its link ends", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(2)
      // The owner has the session at fence 2 (the link's hello after a cut connection) when the report, sent under 1, arrives.
      const fenced = () => Effect.fail(new Refusal({ code: "fenced", message: "another process took this worker's session over (fence 2); this process (fence 1) must stop" }))
      const o = owner("F", 1, 50, (r) => (r.kind === "report" && r.fence === 1 ? fenced() : undefined))
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call)
      const first = yield* Effect.fork(w.session(1))
      yield* until("the report sent under fence 1", () => o.calls.some((r) => r.kind === "report" && r.fence === 1), 15_000)
      // The link's new session: the same process, the claims and heartbeats of fence 2.
      yield* Fiber.interrupt(first)
      const second = yield* Effect.fork(w.session(2))
      yield* until("the report", () => o.reports.length === 1, 15_000)
      expect(o.reports[0]).toMatchObject({ attempt: "rF.1", ok: true })
      expect(o.calls.filter((r) => r.kind === "report").map((r) => (r as { fence: number }).fence)).toEqual([1, 2])
      yield* Fiber.interrupt(second)

      // Fenced with no new session of this process (another holds it): sent again until the link
      // ends, which stops its work (stopAll), the report with it; nothing is recorded.
      const g = owner("G", 1, 50, (r) => (r.kind === "report" ? fenced() : undefined))
      const w2 = yield* makeWork(sideWith(yield* makeSlots(1), ChildExecutor.make()), g.call)
      const alone = yield* Effect.fork(w2.session(1))
      yield* until("the report sent again", () => g.calls.filter((r) => r.kind === "report").length >= 2, 20_000)
      yield* w2.stopAll
      expect(w2.running()).toEqual([])
      expect(g.reports).toEqual([])
      yield* Fiber.interrupt(alone)
    })
  )

  it.live("gives the slot of a finished attempt back while its owner cannot be reached: another owner's work runs meanwhile", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      let aDown = true
      const a = owner("A", 1, 50, (r) => (r.kind === "report" && aDown ? Effect.fail(new Unreachable({ message: "connection refused" })) : undefined))
      const b = owner("B", 1, 50)
      const wa = yield* makeWork(sideWith(slots, ChildExecutor.make()), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      yield* until("A's attempt to have tried reporting", () => a.calls.some((r) => r.kind === "report"))
      // A's job is over and A is away: the one slot is free again, and B's work takes it.
      yield* until("the slot back", () => slots.taken() === 0)
      expect(wa.running()).toEqual(["rA.1"])
      const wb = yield* makeWork(sideWith(slots, ChildExecutor.make()), b.call)
      const fb = yield* Effect.fork(wb.session(1))
      yield* until("B's report", () => b.reports.length === 1)
      expect(a.reports).toEqual([])
      // A comes back: its report lands, once, and asks for no next attempt (it holds no slot to hand over).
      aDown = false
      yield* until("A's report", () => a.reports.length === 1, 15_000)
      const landed = a.calls.filter((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report").at(-1)!
      expect(landed.claimNext).toBeUndefined()
      // It says how long the job ran (50 ms here), not how long the report took to land.
      expect(Number.isInteger(landed.outcome.durationMs)).toBe(true)
      expect(landed.outcome.durationMs).toBeGreaterThanOrEqual(40)
      expect(landed.outcome.durationMs).toBeLessThan(5_000)
      yield* until("A's attempt gone", () => wa.running().length === 0)
      expect(slots.taken()).toBe(0)
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.live("carries a character a job left incomplete at the end of its output, as the owner's own copy of a local run reads it", () =>
    Effect.gen(function* () {
      const stdout = Buffer.concat([Buffer.from('log\n{"r":1}\n'), Buffer.from([0xe2, 0x82])])
      const stderr = Buffer.from([0x61, 0x62, 0x63, 0xc3])
      fs.writeFileSync(
        nodePath.join(bagDir, "tail.mjs"),
        `process.stderr.write(Buffer.from(${JSON.stringify([...stderr])})); process.stdout.write(Buffer.from(${JSON.stringify([...stdout])}))\n`
      )
      const tail: ResolvedJob = { ...job, job: { ...job.job, address: "print:tail@1.0.0" }, runs: { using: "node", main: "tail.mjs" } }
      const slots = yield* makeSlots(1)
      const o = owner("T", 1, 0)
      const side = { ...sideWith(slots, ChildExecutor.make()), resolve: () => Effect.succeed(tail) }
      const w = yield* makeWork(side, (r: WorkerRequest) => (r.kind === "claim" && o.calls.length === 0 ? Effect.succeed(work("rT.1", {})) : o.call(r)))
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report", () => o.reports.length === 1, 20_000)
      yield* Fiber.interrupt(f)
      const carried = o.calls.flatMap((r) => (r.kind === "heartbeat" ? (r.output ?? []) : r.kind === "report" && r.output !== undefined ? [r.output] : []))
      // The last bytes were held back for a rest that never came, and lost.
      expect(carried.map((d) => d.stdout).join("")).toBe(stdout.toString("utf8"))
      expect(carried.map((d) => d.stderr).join("")).toBe(stderr.toString("utf8"))
    })
  )

  describe("output larger than one body (64 KiB)", () => {
    // Escapes and characters of 2 to 4 bytes weigh more in JSON than in the file.
    const line = (i: number) => `${i} plain text, "quoted" \\ back, é € 😀, tab\t and bell \u0007 and \u0001\n`
    const out = Array.from({ length: 6_000 }, (_, i) => line(i)).join("")
    const err = Array.from({ length: 1_500 }, (_, i) => `warning ${i}: ${"w".repeat(40)}\n`).join("")

    const run = (result: number) =>
      Effect.gen(function* () {
        const slots = yield* makeSlots(1)
        const o = owner("P", 1, 0)
        const side = { ...sideWith(slots, ChildExecutor.make()), resolve: () => Effect.succeed(printing) }
        const o2 = {
          ...o,
          call: (r: WorkerRequest) => (r.kind === "claim" && o.calls.length === 0 ? Effect.succeed(work("rP.1", { out, err, result })) : o.call(r))
        }
        const w = yield* makeWork(side, o2.call)
        const f = yield* Effect.fork(w.session(1))
        yield* until("the report", () => o.reports.length === 1, 20_000)
        yield* Fiber.interrupt(f)
        const carried = o.calls.flatMap((r) => (r.kind === "heartbeat" ? (r.output ?? []) : r.kind === "report" && r.output !== undefined ? [r.output] : []))
        return { calls: o.calls, report: o.reports[0]!, stdout: carried.map((d) => d.stdout).join(""), stderr: carried.map((d) => d.stderr).join("") }
      })

    it.live("goes to the owner whole, once, in bodies of at most 64 KiB: heartbeats ahead of the report", () =>
      Effect.gen(function* () {
        const r = yield* run(10)
        expect(jsonBytes(out)).toBeGreaterThan(4 * MAX_BODY_BYTES)
        // The report was once refused for its size, and the attempt placed again forever.
        for (const call of r.calls) expect(jsonBytes(call)).toBeLessThanOrEqual(MAX_BODY_BYTES)
        expect(r.report).toMatchObject({ attempt: "rP.1", ok: true, result: { pad: "r".repeat(10) } })
        expect(r.stdout).toBe(`${out}{"pad":"rrrrrrrrrr"}\n`)
        expect(r.stderr).toBe(err)
        expect(r.calls.filter((c) => c.kind === "report")).toHaveLength(1)
      })
    )

    it.live("a result a report cannot carry fails the attempt, saying why, instead of a report the owner refuses", () =>
      Effect.gen(function* () {
        const r = yield* run(60_000)
        for (const call of r.calls) expect(jsonBytes(call)).toBeLessThanOrEqual(MAX_BODY_BYTES)
        const report = r.calls.find((c) => c.kind === "report")
        const outcome = report?.kind === "report" ? report.outcome : undefined
        expect(outcome).toMatchObject({ ok: false, exitCode: 0 })
        const [, size, room] = /^its result is (\d+) bytes of JSON, more than the (\d+) a report from a worker can carry beside the rest; a bigger result belongs in a file$/.exec(outcome?.error ?? "") ?? []
        expect(Number(size)).toBe(60_010)
        // The limit it names is the room left for a result: less than the report's, and more than the result is not.
        expect(Number(room)).toBeLessThan(MAX_REPORT_BYTES)
        expect(Number(room)).toBeGreaterThan(MAX_REPORT_BYTES - 200)
        // Its output still arrives whole.
        expect(r.stdout).toBe(`${out}{"pad":"${"r".repeat(60_000)}"}\n`)
      })
    )
  })

  it.live("stopAll (the link ended: revoked or fenced) stops everything it runs", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(3)
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

/**
 * An owner that is there but does not answer (stopped with SIGSTOP): its report hangs, it is not
 * refused nor unreachable. Its finished attempts must not keep the machine's slots from the
 * other owners. A job that ends at once (no child process) and Effect's TestClock.
 */
describe("an owner that does not answer its reports", () => {
  // A job of 1 ms (of the test clock): its claim loop is waiting for the slot when it ends.
  const instant: ExecutorService = { run: () => Effect.as(Effect.sleep("1 millis"), { ok: true, result: { done: true }, error: null, exitCode: 0, signal: null, durationMs: 1 }) }
  const quietSide = (slots: Slots): WorkSide => ({ ...sideWith(slots, instant), heartbeatEvery: Duration.hours(1) })
  /** An owner handing out one attempt, then waiting claims; its reports (and only those) never answered. */
  const silent = (prefix: string) => {
    return owner(prefix, 1, 0, (r) => (r.kind === "report" ? Effect.never : undefined))
  }
  /** Lets the forked fibers run, and the output files' real I/O happen (real time; the test clock stands still). */
  const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 150)))

  it.effect("its report not asking for the next attempt gives the slot back as the job ends: another owner's work takes it", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const a = silent("A")
      const wa = yield* makeWork(quietSide(slots), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      // B's claim loop waits for the slot too: A's report does not ask for the next (another waits).
      const b = owner("B", 1, 0)
      const wb = yield* makeWork(quietSide(slots), b.call)
      const fb = yield* Effect.fork(wb.session(1))
      // A's job, then B's (1 ms each).
      for (let i = 0; i < 3; i++) {
        yield* settle
        yield* TestClock.adjust(Duration.millis(1))
      }
      yield* settle
      const reportA = a.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")
      expect(reportA?.claimNext).toBeUndefined()
      // A's report hangs; B's attempt ran in the slot all the same, and was reported.
      expect(b.reports.map((r) => r.attempt)).toEqual(["rB.1"])
      expect(wa.running()).toEqual(["rA.1"])
      yield* Fiber.interrupt(fa)
      yield* Fiber.interrupt(fb)
    })
  )

  it.effect("its report asking for the next attempt keeps the slot for it 2 s, then gives it back", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const a = silent("A")
      const wa = yield* makeWork(quietSide(slots), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      yield* settle
      yield* TestClock.adjust(Duration.millis(1))
      yield* settle
      // Alone: A's report asks for the next attempt, keeping the slot to hand it over.
      const reportA = a.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")
      expect(reportA?.claimNext).toBe(true)
      expect(slots.taken()).toBe(1)
      yield* TestClock.adjust(Duration.subtract(HAND_OVER_WITHIN, Duration.millis(1)))
      yield* settle
      expect(slots.taken()).toBe(1)
      yield* TestClock.adjust(Duration.millis(1))
      yield* settle
      // Not answered in 2 s: the slot is back, and A's own claims take it again (its report still hangs).
      expect(a.calls.filter((r) => r.kind === "claim").length).toBeGreaterThan(1)
      expect(wa.running()).toEqual(["rA.1"])
      // Told apart for the worker's status: over, its report not answered; not running.
      expect(wa.counts()).toEqual({ running: 0, waiting: 0, reporting: 1, busy: 0 })
      yield* Fiber.interrupt(fa)
    })
  )

  it.effect("an attempt handed back after the slot went back waits for a slot and runs: it is not dropped", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      // The report is answered 3 s late, handing over the next attempt.
      const a = owner("A", 1, 0, (r) =>
        r.kind === "report" && r.attempt === "rA.1" ? Effect.as(Effect.sleep("3 seconds"), { ...ack(), next: work("rA.2", {}) } as WorkerResponse) : undefined
      )
      const wa = yield* makeWork(quietSide(slots), a.call)
      const fa = yield* Effect.fork(wa.session(1))
      yield* settle
      yield* TestClock.adjust(Duration.millis(1))
      yield* settle
      yield* TestClock.adjust("3 seconds")
      yield* settle
      yield* TestClock.adjust(Duration.millis(1))
      yield* settle
      expect(a.reports.map((r) => r.attempt)).toContain("rA.2")
      expect(slots.taken()).toBe(0)
      yield* Fiber.interrupt(fa)
    })
  )
})

describe("an owner from before revision 2", () => {
  it.live("gets reports without durationMs, which it would refuse (and with it every report)", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const o = owner("V", 1, 10)
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call, "the owner", () => 1)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report", () => o.reports.length === 1, 15_000)
      yield* Fiber.interrupt(f)
      const sent = o.calls.find((r): r is Extract<WorkerRequest, { kind: "report" }> => r.kind === "report")!
      expect(sent.outcome).toEqual({ ok: true, result: { done: 1 }, exitCode: 0 })
      // Nor where its output lies (revision 4), which it would refuse too.
      expect(sent.output).toBeDefined()
      expect(sent.output!.at).toBeUndefined()
    })
  )
})

describe("an owner of revision 4", () => {
  it.live("is told where each piece of output lies in the worker's copy, in bytes (a piece sent again is written once there)", () =>
    Effect.gen(function* () {
      const slots = yield* makeSlots(1)
      const o = owner("V", 1, 10)
      const w = yield* makeWork(sideWith(slots, ChildExecutor.make()), o.call, "the owner", () => 4)
      const f = yield* Effect.fork(w.session(1))
      yield* until("the report", () => o.reports.length === 1, 15_000)
      yield* Fiber.interrupt(f)
      const pieces = o.calls.flatMap((r) => (r.kind === "report" ? (r.output === undefined ? [] : [r.output]) : r.kind === "heartbeat" ? (r.output ?? []) : []))
      const stdout = pieces.map((p) => p.stdout).join("")
      expect(stdout.length).toBeGreaterThan(0)
      // One after the other, from the first byte to the last.
      let next = 0
      for (const p of pieces) {
        expect(p.at!.stdout[0]).toBe(next)
        next = p.at!.stdout[1]
      }
      expect(next).toBe(Buffer.byteLength(stdout))
    })
  )
})
