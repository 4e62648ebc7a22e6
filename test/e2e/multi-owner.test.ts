/**
 * One worker serving two owners (docs/runs.md, "On a worker"): three real `svc serve`
 * processes, each with its own $SVC_HOME on loopback. The worker has one slot
 * (SVC_WORKFLOW_CAPACITY=1) and is the only machine with the label the bag's job requires, so
 * every run of either owner goes to it. Both owners have work at once: the worker's arbiter runs
 * their attempts one at a time, in turn, and no owner's attempt is lost between them (each run
 * completes in its first attempt: an answer dropped by the worker would show as a second one).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServe, stopAllServes, svcIn, Transcript, waitFor, type ServeProcess } from "../support/serve.js"
import { tempDirs } from "../support/svc.js"

const NAP = "duo:nap@1.0.0"
const NAP_MS = 1_000
const RUNS_EACH = 3

const transcript = new Transcript()
const temps = tempDirs()
const home = temps.make
let ownerA: string
let ownerB: string
let worker: string
let serveA: ServeProcess
let serveB: ServeProcess
let serveW: ServeProcess

const run = (h: string, ...args: Array<string>) => svcIn(transcript, h, args)
const json = async <A>(h: string, ...args: Array<string>): Promise<A> => {
  const r = await run(h, ...args, "--json")
  expect(r.code, `svc ${args.join(" ")}: ${r.stderr}`).toBe(0)
  return JSON.parse(r.stdout) as A
}

interface RunView {
  readonly id: string
  readonly state: string
  readonly host: string | null
  readonly attempts: number
}
const runsOf = async (h: string) => (await json<{ runs: ReadonlyArray<RunView> }>(h, "runs", "list", "--limit", "0")).runs

beforeAll(async () => {
  const bag = join(home("svc-duo-bag-"), "duo")
  mkdirSync(join(bag, "jobs"), { recursive: true })
  writeFileSync(
    join(bag, "bag.yaml"),
    [
      "name: duo",
      "description: One job only the shared worker can run",
      "version: 0.1.0",
      "jobs:",
      "  nap:",
      "    version: 1.0.0",
      "    runs:",
      "      using: node",
      "      main: jobs/nap.mjs",
      "    requires:",
      "      labels: [pool=shared]",
      "    timeout: 60s",
      ""
    ].join("\n")
  )
  writeFileSync(
    join(bag, "jobs", "nap.mjs"),
    // Its result says when it really ran (an attempt waiting for the slot counts as started at its claim).
    `let s = ""; for await (const c of process.stdin) s += c; const i = JSON.parse(s); const start = Date.now(); await new Promise((r) => setTimeout(r, i.ms)); console.log(JSON.stringify({ n: i.n, start, end: Date.now() }))\n`
  )
  ownerA = home("svc-duo-a-")
  ownerB = home("svc-duo-b-")
  worker = home("svc-duo-w-")
  for (const h of [ownerA, ownerB, worker]) {
    const r = await run(h, "bag", "install", bag)
    expect(r.code, r.stderr).toBe(0)
  }
  ;[serveA, serveB] = await Promise.all([startServe("owner A", ownerA, transcript), startServe("owner B", ownerB, transcript)])
  for (const owner of [ownerA, ownerB]) {
    const invite = await run(owner, "workers", "invite", "--name", "shared")
    expect(invite.code, invite.stderr).toBe(0)
    const joined = await run(worker, "workers", "join", invite.stdout.trim())
    expect(joined.code, joined.stderr).toBe(0)
  }
  serveW = await startServe("worker", worker, transcript, { env: { SVC_WORKFLOW_CAPACITY: "1", SVC_WORKFLOW_LABELS: "pool=shared" } })
  for (const owner of [ownerA, ownerB]) {
    await waitFor(
      "the shared worker Ready",
      () => json<{ workers: ReadonlyArray<{ name: string; state: string }> }>(owner, "workers", "status"),
      (s) => s.workers.some((w) => w.name === "shared" && w.state === "Ready"),
      { timeoutMs: 15_000, everyMs: 250 }
    )
  }
}, 60_000)

afterAll(async () => {
  await stopAllServes()
  temps.removeAll()
}, 30_000)

describe("one worker with one slot, serving two owners", () => {
  it("runs both owners' work in turn, one at a time, each run in its first attempt", async () => {
    const started = Date.now()
    for (let n = 0; n < RUNS_EACH; n++) {
      for (const owner of [ownerA, ownerB]) {
        const r = await run(owner, "run", NAP, "--input", JSON.stringify({ n, ms: NAP_MS }))
        expect(r.code, r.stderr).toBe(0)
      }
    }
    for (const owner of [ownerA, ownerB]) {
      await waitFor("every run finished", () => runsOf(owner), (runs) => runs.length === RUNS_EACH && runs.every((r) => r.state === "succeeded"), {
        timeoutMs: 60_000,
        everyMs: 250
      })
    }
    const elapsed = Date.now() - started
    const ran: Array<{ readonly start: number; readonly end: number }> = []
    for (const owner of [ownerA, ownerB]) {
      for (const r of await runsOf(owner)) {
        // One attempt each: none was handed to the worker and lost on the way.
        expect(r, `run ${r.id}`).toMatchObject({ state: "succeeded", host: "shared", attempts: 1 })
        ran.push((await json<{ result: { start: number; end: number } }>(owner, "runs", "show", r.id)).result)
      }
    }
    // The worker's one slot: no two jobs ran at once, whichever owner they came from.
    ran.sort((x, y) => x.start - y.start)
    for (let i = 1; i < ran.length; i++) expect(ran[i]!.start, `job ${i} started before job ${i - 1} ended`).toBeGreaterThanOrEqual(ran[i - 1]!.end)
    // The worker's log says what ran on it, for which owner, and how it ended.
    const logged = serveW.output()
    for (const owner of [serveA, serveB]) {
      expect(logged).toMatch(new RegExp(`INFO running attempt r\\w+\\.1 \\(${NAP}\\) for the owner at ${owner.url.replace(/[.]/g, "\\.")}\n`))
      expect(logged).toMatch(new RegExp(`INFO attempt r\\w+\\.1 \\(${NAP}\\) succeeded in \\d+\\.\\d s; reporting it to the owner at ${owner.url.replace(/[.]/g, "\\.")}\n`))
    }
    // Six jobs of 1 s each, one after another: no owner's work waited out the other's idle claim (20 s).
    expect(elapsed).toBeLessThan(2 * RUNS_EACH * NAP_MS + 12_000)
  }, 90_000)

  it("each owner sees the slot the other's work holds: its run waits for it, and is placed when the worker gives it back", async () => {
    type Status = { workers: ReadonlyArray<{ name: string; state: string; used: number; elsewhere: number; reason: string }> }
    const shared = async (owner: string) => (await json<Status>(owner, "workers", "status")).workers.find((w) => w.name === "shared")!
    // A's long job takes the worker's one slot.
    const long = await json<RunView>(ownerA, "run", NAP, "--input", JSON.stringify({ n: 10, ms: 14_000 }))
    // B learns of it from the worker's next advertisement (every 4 s).
    const busy = await waitFor("B sees the slot in use by other work", () => shared(ownerB), (w) => w.elsewhere === 1, { timeoutMs: 10_000, everyMs: 250 })
    expect(busy.value).toMatchObject({ state: "Busy", used: 1 })
    expect(busy.value.reason).toBe("1 of 1 slots in use, 1 of them by other work")
    // The worker says the same of itself: it runs A's attempt, and its one slot is other work for B.
    type Served = { owners: ReadonlyArray<{ url: string; status: { running: number; busy: number } | null }> }
    const served = async () => (await json<Served>(worker, "workers", "status")).owners
    const seen = await waitFor("the worker's own view", served, (o) => o.find((x) => x.url === serveB.url)?.status?.busy === 1, { timeoutMs: 10_000, everyMs: 250 })
    expect(seen.value.find((x) => x.url === serveA.url)?.status).toMatchObject({ running: 1, busy: 0 })
    const text = await run(worker, "workers", "status")
    expect(text.stdout).toContain("runs 0 attempt(s) for it; 1 of the 1 slot held by other work (other owners, own runs): no slot free for it now")
    // B's run waits for that slot instead of being placed on a worker with none free.
    const mine = await json<RunView>(ownerB, "run", NAP, "--input", JSON.stringify({ n: 11, ms: 200 }))
    expect(mine.state).toBe("pending")
    const shown = await json<{ placement: { outcome: string; explanation: string } }>(ownerB, "runs", "show", mine.id)
    expect(shown.placement.outcome).toBe("waiting")
    expect(shown.placement.explanation).toContain("1 of 1")
    // A's job ends; the worker's link to B, with the slot free, claims saying so, and B's run is placed into that claim and runs.
    for (const [owner, id] of [[ownerA, long.id], [ownerB, mine.id]] as const) {
      await waitFor(`run ${id} succeeded`, () => json<RunView>(owner, "runs", "show", id), (r) => r.state === "succeeded", { timeoutMs: 30_000, everyMs: 250 })
      expect(await json<RunView>(owner, "runs", "show", id)).toMatchObject({ host: "shared", attempts: 1 })
    }
  }, 60_000)

  it("an owner paused longer than a worker's 15 s does not blame the worker: the job that ended meanwhile counts, in its first attempt", async () => {
    // What a suspended laptop or VM, or SIGSTOP, does to the owner: it heard nothing for 20 s,
    // and found every worker lapsed for its own silence (the attempt placed again, its result dropped).
    const nap = await json<RunView>(ownerA, "run", NAP, "--input", JSON.stringify({ n: 20, ms: 4_000 }))
    await waitFor(`run ${nap.id} running`, () => json<RunView>(ownerA, "runs", "show", nap.id), (r) => r.state === "running", { timeoutMs: 15_000, everyMs: 200 })
    const logBefore = serveA.output().length
    process.kill(serveA.pid, "SIGSTOP")
    try {
      await new Promise((resolve) => setTimeout(resolve, 20_000))
    } finally {
      process.kill(serveA.pid, "SIGCONT")
    }
    await waitFor(`run ${nap.id} succeeded`, () => json<RunView>(ownerA, "runs", "show", nap.id), (r) => r.state === "succeeded", { timeoutMs: 20_000, everyMs: 250 })
    const shown = await json<RunView & { attemptRecords: ReadonlyArray<{ state: string; reason: string | null }> }>(ownerA, "runs", "show", nap.id)
    expect(shown, JSON.stringify(shown.attemptRecords.map((a) => [a.state, a.reason]))).toMatchObject({ host: "shared", attempts: 1 })
    const log = serveA.output().slice(logBefore)
    expect(log).toMatch(/WARN this owner did not run for (19|20|21) s \(its process was stopped, the machine suspended or overloaded, or its clock stepped forward\): its workers' silence in that time is not held against them/)
    expect(log).not.toContain("is Offline")
  }, 90_000)
})
