/**
 * The owner's runs through the real owner (`Owner.layerWithRuns`): the worker route's calls,
 * the real deciders and projections over the memory journal, the real child-process executor
 * for the owner's own runs, and Effect's TestClock for every time rule (the 15 s advertisement,
 * the 30 s claim deadline), at both sides of each bound. Child processes run in real time;
 * a test waits for what they cause (a report wakes `wait`), never for a clock.
 */
import { LABEL_RULE } from "../../../src/domain/manifest/Formats.js"
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Clock from "effect/Clock"
import * as TestClock from "effect/TestClock"
import { Checkpoints } from "../../../src/app/journal/Checkpoints.js"
import { Journal, JournalError, layerMemory, makeMemory } from "../../../src/app/journal/Journal.js"
import { layer as projectionsLayer, layerFrom as projectionsFrom, Projections } from "../../../src/app/journal/Projections.js"
import { foldJournal } from "../../../src/app/journal/Replay.js"
import { Dispatcher, OwnerHost, progressOf, type OwnerHostSettings, type RunDetail } from "../../../src/app/runs/Dispatcher.js"
import { AWAITING_WORKERS, IN_LINE } from "../../../src/app/runs/RunViews.js"
import { Freshness } from "../../../src/app/workers/Freshness.js"
import { JobNotRunnable, valueCheck, type ResolvedJob } from "../../../src/app/runs/JobCatalog.js"
import { OutputNotKept, RunFiles, type RunFilesService } from "../../../src/app/runs/RunFiles.js"
import { layerWithRuns, Owner, OwnerAddress } from "../../../src/app/workers/Owner.js"
import * as Presence from "../../../src/app/workers/Presence.js"
import { WorkerRequest as WorkerRequestSchema, type WorkerRequest, type WorkerResponse } from "../../../src/app/workers/Protocol.js"
import { canonicalState, initialStateRetaining } from "../../../src/domain/journal/OwnerState.js"
import type { Candidate } from "../../../src/domain/placement/Placement.js"
import * as RunDecide from "../../../src/domain/runs/Decide.js"
import * as NodeHashing from "../../../src/infra/journal/NodeHashing.js"
import * as SqliteJournal from "../../../src/infra/journal/SqliteJournal.js"
import * as SqliteStore from "../../../src/infra/journal/SqliteStore.js"
import * as ChildExecutor from "../../../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../../../src/infra/runs/FileRunFiles.js"
import { formatValidators } from "../../../src/infra/manifest/FormatValidators.js"
import * as NodeEntropy from "../../../src/infra/workers/NodeEntropy.js"
import { capturingLogs } from "../../support/logs.js"
import { nodeJob, runsDeps } from "../../support/runs.js"

// ---- An owner with one installed bag --------------------------------------------------------

const bagDir = mkdtempSync(join(tmpdir(), "svc-dispatcher-bag-"))
writeFileSync(
  join(bagDir, "main.mjs"),
  `let text = ""
for await (const chunk of process.stdin) text += chunk
const input = JSON.parse(text)
console.log("working on " + input.text)
console.log(JSON.stringify(input.misfit ? { misfit: true } : { text: input.text, length: input.text.length }))
`
)

const DIGEST = "sha256:0d1g3st"
const ECHO = "demo:echo@1.0.0"
const GPU = "demo:gpu@1.0.0"
const INPUT_SCHEMA = { type: "object", required: ["text"], properties: { text: { type: "string" }, misfit: { type: "boolean" } }, additionalProperties: false }
const OUTPUT_SCHEMA = { type: "object", required: ["text", "length"], properties: { text: { type: "string" }, length: { type: "integer" } } }

/** As JobCatalog checks them. */
const check = valueCheck(formatValidators)
const resolved = (name: string, requiredLabels: ReadonlyArray<string>): ResolvedJob =>
  nodeJob(`demo:${name}@1.0.0`, DIGEST, bagDir, { requiredLabels, inputProblem: check(INPUT_SCHEMA, "input"), outputProblem: check(OUTPUT_SCHEMA, "output") })
/** `echo` runs anywhere (the owner keeps it); `gpu` needs a label only workers have; `local` only the owner runs. */
const LOCAL = "demo:local@1.0.0"
const installed = new Map([
  [ECHO, resolved("echo", [])],
  [GPU, resolved("gpu", ["gpu=true"])],
  [LOCAL, { ...resolved("local", []), job: { ...resolved("local", []).job, remoteEligible: false, ownerOnly: ["owner only: it uses the owner's agent runtime"] } }]
])
const host: OwnerHostSettings = {
  capacity: 2,
  labels: ["os=linux"],
  capabilities: ["node", "process"],
  bins: () => Effect.succeed([]),
  resolve: (address) => {
    const job = installed.get(address)
    return job === undefined ? Effect.fail(new JobNotRunnable({ message: `no installed bag holds ${address}` })) : Effect.succeed(job)
  },
  withSlot: (effect) => effect
}

const ownerOn = <E>(journal: Layer.Layer<Journal, E>, projections: typeof projectionsLayer = projectionsLayer, deps = runsDeps(host)) => layerWithRuns.pipe(
  Layer.provideMerge(projections),
  Layer.provideMerge(
    Layer.mergeAll(
      journal,
      Layer.succeed(Checkpoints, { write: () => Effect.void, latest: Effect.succeed(undefined), snapshot: Effect.succeed(undefined) }),
      NodeHashing.layer,
      NodeEntropy.layer,
      deps,
      Layer.succeed(OwnerAddress, { url: "https://owner.test:7443", fingerprint: "ab".repeat(32) })
    )
  )
)
const TestOwner = ownerOn(layerMemory)
/** The same owner on a real SQLite journal (group commit: appends made in one turn share a commit). */
const SqliteOwner = Layer.suspend(() => {
  const file = join(mkdtempSync(join(tmpdir(), "svc-dispatcher-journal-")), "journal.sqlite")
  return ownerOn(Layer.scoped(Journal, SqliteJournal.make(file)).pipe(Layer.provide(SqliteStore.layerStore(file))))
})

/** On SQLite, keeping settled runs in generations of 2 (Runs.ts): the third settled run on forgets the oldest. */
const RETAIN = 2
const ForgetfulOwner = Layer.suspend(() => {
  const file = join(mkdtempSync(join(tmpdir(), "svc-dispatcher-journal-")), "journal.sqlite")
  return ownerOn(Layer.scoped(Journal, SqliteJournal.make(file)).pipe(Layer.provide(SqliteStore.layerStore(file))), projectionsFrom(initialStateRetaining(RETAIN)))
})

/** The commands appended, in order (each one commit), by an owner on `CountingOwner`. */
let appended: Array<{ readonly stream: string; readonly types: ReadonlyArray<string> }> = []
const CountingOwner = ownerOn(
  Layer.effect(
    Journal,
    Effect.map(makeMemory, (j) => {
      appended = []
      return Journal.of({ ...j, append: (c) => Effect.tap(j.append(c), () => void appended.push({ stream: c.stream, types: c.events.map((e) => e._tag) })) })
    })
  )
)

// ---- Helpers ---------------------------------------------------------------------------------

type Answer = Either.Either<WorkerResponse, { readonly code: string; readonly message: string }>
const call = (bearer: string, request: WorkerRequest) => Effect.flatMap(Owner, (o) => Effect.either(o.handle(bearer, request)))
const ok = <K extends WorkerResponse["kind"]>(r: Answer, kind: K) => {
  if (Either.isLeft(r)) throw new Error(`refused: ${r.left.code}: ${r.left.message}`)
  expect(r.right.kind).toBe(kind)
  return r.right as Extract<WorkerResponse, { kind: K }>
}
const refusal = (r: Answer) => (Either.isLeft(r) ? r.left.code : `answered ${r.right.kind}`)

interface Linked {
  readonly credential: string
  readonly workerId: string
  readonly fence: number
  readonly labels: ReadonlyArray<string>
  /** The session's key its welcome gave (a hello resuming the session presents it). */
  readonly sessionKey?: string
}

/** Invite, join and hello: a linked worker with its credential and fence. */
const linked = (name: string, labels: ReadonlyArray<string> = ["gpu=true", "os=linux"], scope: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const { token } = yield* (yield* Owner).invite({ scope, expiresInMs: null, name, actor: "operator" })
    const joined = ok(yield* call(token, { kind: "join", name }), "joined")
    const welcome = ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
    return { credential: joined.credential, workerId: joined.workerId, fence: welcome.fence, labels, ...(welcome.sessionKey === undefined ? {} : { sessionKey: welcome.sessionKey }) } satisfies Linked
  })

/** The worker's offer: it holds both jobs of the bag. */
const advertise = (w: Linked, busy?: number) =>
  call(w.credential, {
    kind: "advertise",
    fence: w.fence,
    capacity: 2,
    labels: [...w.labels],
    capabilities: ["node"],
    artifacts: [ECHO, GPU].map((address) => ({ address, digest: DIGEST })),
    ...(busy === undefined ? {} : { busy })
  }).pipe(Effect.map((r) => ok(r, "ack")))

const claimNow = (w: Linked) => call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 0 })
const heartbeat = (w: Linked, running: ReadonlyArray<string>, waiting?: ReadonlyArray<string>) =>
  call(w.credential, { kind: "heartbeat", fence: w.fence, running: [...running], ...(waiting === undefined ? {} : { waiting: [...waiting] }) })
const report = (w: Linked, attempt: string, result: unknown = { text: "hi", length: 2 }) =>
  call(w.credential, { kind: "report", fence: w.fence, attempt, outcome: { ok: true, result, exitCode: 0 } })

const submit = (address: string, input: unknown = { text: "hi" }, prefer: ReadonlyArray<string> = []) =>
  Effect.flatMap(Dispatcher, (d) => d.submit({ address, input, prefer, actor: "operator" }))
const show = (runId: string) => Effect.flatMap(Dispatcher, (d) => d.show(runId))
const head = Effect.flatMap(Journal, (j) => j.head)
const sequence = Effect.flatMap(Projections, (p) => Effect.map(p.state, (s) => s.sequence))
const reserved = (hostId: string) =>
  Effect.flatMap(Projections, (p) => Effect.map(p.state, (s) => Option.match(HashMap.get(s.ledger.physical, hostId), { onNone: () => 0, onSome: (x) => x.reserved })))

/** Real time, for fibers driven by other fibers or child processes (the TestClock stands still). */
const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))
/** Polls, in real time, until the scheduler's round (or a child process) has done what `ok` expects. */
const until = <A, E, R>(what: string, get: Effect.Effect<A, E, R>, holds: (a: A) => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      const a = yield* get
      if (holds(a)) return a
      yield* realSleep(5)
    }
    return yield* Effect.dieMessage(`never came: ${what}`)
  })
/** Lets a scheduler round that may have been started finish, before checking that nothing changed. */
const quiet = realSleep(30)

/** A claim of `w` waiting for work (forked), once it is parked on the owner. */
const waitingClaim = (w: Linked, waitSeconds = 30) => Effect.tap(Effect.fork(call(w.credential, { kind: "claim", fence: w.fence, waitSeconds })), () => quiet)
/** The commits (each one append) of a run's stream on `CountingOwner`, by the event types each held. */
const commitsOf = (runId: string) => appended.filter((c) => c.stream === `run-${runId}`).map((c) => c.types)

const attempt = (detail: RunDetail, n: number) => detail.attemptRecords.find((a) => a.n === n)
const placedOn = (runId: string, n: number) => until(`attempt ${runId}.${n} placed`, show(runId), (d) => attempt(d, n) !== undefined)

/** A run of `gpu` placed on `w` and claimed there: answers the run id and the attempt id. */
const runningOn = (w: Linked, prefer: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    const run = yield* submit(GPU, { text: "hi" }, prefer)
    yield* placedOn(run.id, 1)
    const work = ok(yield* claimNow(w), "work")
    expect(work.attempt).toBe(`${run.id}.1`)
    return { runId: run.id, id: work.attempt }
  })

/** A worker of capacity 2 running two runs, and a third run waiting for room. */
const fullWithThirdWaiting = Effect.gen(function* () {
  const w = yield* linked("lab-1")
  yield* advertise(w) // capacity 2
  const first = yield* runningOn(w)
  yield* runningOn(w)
  const third = yield* submit(GPU, { text: "third" })
  expect((yield* show(third.id)).placement).toMatchObject({ outcome: "waiting" })
  return { w, first, third }
})

// ---- Admission ----------------------------------------------------------------------------------

describe("admission", () => {
  it.effect("a refused submission names the problem and leaves the journal and the projections as they were", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      yield* linked("lab-1")
      const before = [yield* head, yield* sequence]
      const refused = (i: { address: string; input: unknown; prefer?: ReadonlyArray<string> }) =>
        Effect.flip(dispatcher.submit({ address: i.address, input: i.input, prefer: i.prefer ?? [], actor: "operator" }))
      expect(yield* refused({ address: ECHO, input: {} })).toMatchObject({
        code: "invalid-input",
        message: "input does not match the job's input_schema: input lacks the required property \"text\""
      })
      expect(yield* refused({ address: ECHO, input: { text: 5 } })).toMatchObject({ code: "invalid-input", message: "input does not match the job's input_schema: input.text must be string" })
      expect(yield* refused({ address: "demo:nope@1.0.0", input: { text: "hi" } })).toMatchObject({ code: "not-runnable", message: "no installed bag holds demo:nope@1.0.0" })
      expect(yield* refused({ address: ECHO, input: { text: "hi" }, prefer: ["fast"] })).toMatchObject({ code: "bad-preference", message: `--prefer takes KEY=VALUE labels; "fast" is not ${LABEL_RULE}` })
      expect(yield* refused({ address: ECHO, input: { text: "x".repeat(1024 * 1024) } })).toMatchObject({ code: "input-too-large" })
      // Too deep to be written as JSON again (it threw inside the owner).
      expect(yield* refused({ address: ECHO, input: JSON.parse("[".repeat(100_000) + "]".repeat(100_000)) })).toMatchObject({
        code: "invalid-input",
        message: "the input nests more than 512 levels deep (arrays and objects within each other); at most 512 are taken"
      })
      // A secret's shape anywhere in it, value or key: the journal would keep it for ever.
      const SECRET = `svc_wk_${"A".repeat(30)}123456`
      for (const [input, at] of [
        [{ text: SECRET }, " (at text)"],
        [{ text: "hi", more: [{ token: `Bearer ${SECRET}` }] }, " (at more[0].token)"],
        [{ text: "hi", [SECRET]: 1 }, " (at svc_wk_… (its name))"],
        // A key that is not a plain word is quoted: its control characters are not printed as they are.
        [{ text: "hi", "k\u001b[31m\nx": [SECRET] }, ' (at ["k\\u001b[31m\\nx"][0])']
      ] as const) {
        const r = yield* refused({ address: ECHO, input })
        expect(r).toMatchObject({
          code: "invalid-input",
          message: `the input${at} holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…): refused, so that no secret is recorded or shown; a job takes a secret from $SVC_HOME/secrets on the host that runs it (docs/executors.md, "Secrets")`
        })
        expect(r.message).not.toContain(SECRET)
      }
      expect([yield* head, yield* sequence]).toEqual(before)
      expect(yield* dispatcher.list()).toEqual({ runs: [], total: 0, forgotten: 0 })
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("a submission with an idempotency key", () => {
  const keyed = (key: string, input: unknown = { text: "hi" }, prefer: ReadonlyArray<string> = [], address = GPU) =>
    Effect.flatMap(Dispatcher, (d) => d.submit({ address, input, prefer, actor: "operator", key }))

  it.effect("sent again is answered with the run it made (existing), not made again; at the same moment too; its id is the key's", () =>
    Effect.gen(function* () {
      const first = yield* keyed("build-42/step-3", { text: "hi", misfit: false })
      expect(first.existing).toBeUndefined()
      const events = yield* sequence
      // The same submission, its input's keys in another order and its preferences repeated.
      const again = yield* keyed("build-42/step-3", { misfit: false, text: "hi" })
      expect(again).toMatchObject({ id: first.id, existing: true, state: "pending" })
      expect(yield* sequence).toBe(events)
      // Two at once: one run.
      const both = yield* Effect.all([keyed("at-once"), keyed("at-once")], { concurrency: "unbounded" })
      expect(both[0].id).toBe(both[1].id)
      expect(both.filter((r) => r.existing === true)).toHaveLength(1)
      expect((yield* Effect.flatMap(Dispatcher, (d) => d.list())).total).toBe(2)
      // Derived from the key alone: the same on any owner, another for another key.
      expect(first.id).toMatch(/^r[0-9A-Za-z]{10}$/)
      expect((yield* keyed("build-42/step-4")).id).not.toBe(first.id)
      expect((yield* show(first.id)).key).toBe("build-42/step-3")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("whose run the owner has forgotten since is refused, saying where its story is, and nothing is written", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const old = yield* keyed("nightly-1")
      yield* dispatcher.stop(old.id, "operator")
      // Settled runs after it, until it is forgotten (generations of RETAIN).
      for (let i = 0; i < 4; i++) yield* dispatcher.stop((yield* submit(GPU)).id, "operator")
      expect((yield* dispatcher.list()).runs.map((r) => r.id)).not.toContain(old.id)
      const before = [yield* head, yield* sequence]
      expect(yield* Effect.flip(keyed("nightly-1"))).toMatchObject({
        code: "key-used",
        message: `the idempotency key nightly-1 names run ${old.id}, submitted earlier and since forgotten by this owner (it keeps the latest settled runs): svc runs show ${old.id} says what it became`
      })
      expect([yield* head, yield* sequence]).toEqual(before)
      expect(yield* show(old.id)).toMatchObject({ id: old.id, state: "stopped", key: "nightly-1" })
    }).pipe(Effect.provide(ForgetfulOwner))
  )

  it.effect("another submission under a used key is refused, saying what differs, and changes nothing; a malformed key is refused", () =>
    Effect.gen(function* () {
      const first = yield* keyed("k1", { text: "hi" }, ["zone=a"])
      const before = [yield* head, yield* sequence]
      const refused = (input: unknown, prefer: ReadonlyArray<string>, address = GPU) => Effect.flip(keyed("k1", input, prefer, address))
      expect(yield* refused({ text: "other" }, ["zone=a"])).toMatchObject({
        code: "key-used",
        message: `the idempotency key k1 names run ${first.id} already, and it was submitted with another input: a key names one submission; use another key for another one`
      })
      expect((yield* refused({ text: "hi" }, ["zone=b"])).message).toContain("and it was submitted with other preferences (zone=a)")
      expect((yield* refused({ text: "hi" }, ["zone=a"], ECHO)).message).toContain(`and it was submitted as a run of ${GPU}, not ${ECHO}`)
      expect(yield* Effect.flip(keyed("with space"))).toMatchObject({ code: "bad-key" })
      expect(yield* Effect.flip(keyed(""))).toMatchObject({ code: "bad-key" })
      expect(yield* Effect.flip(keyed(`svc_wk_${"A".repeat(30)}123456`))).toMatchObject({ code: "bad-key" })
      expect([yield* head, yield* sequence]).toEqual(before)
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- On the owner -----------------------------------------------------------------------------

describe("on the owner", () => {
  it.effect("a job the owner can run is placed on the owner and succeeds, in a real child process", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const submitted = yield* submit(ECHO, { text: "hello" })
      // Placed in the submission's own commit: already running on the owner when submit answers.
      expect(submitted).toMatchObject({ address: ECHO, state: "running", attempts: 1, host: "owner" })
      // The report wakes `wait`; its own deadline (TestClock) never comes.
      const done = yield* dispatcher.wait(submitted.id, 60_000)
      expect(done).toMatchObject({ state: "succeeded", host: "owner", attempts: 1, result: { text: "hello", length: 5 }, error: null })
      const detail = yield* show(submitted.id)
      expect(detail.placement).toMatchObject({ outcome: "placed", host: "owner", record: { executionHost: "owner", selectionProvenance: "locality: the owner keeps what it can run" } })
      expect(detail.attemptRecords).toEqual([expect.objectContaining({ id: `${submitted.id}.1`, host: "owner", state: "reported", holdsSlot: false, fence: null })])
      expect(detail.output.stdout).toContain("working on hello")
      expect(yield* reserved("owner")).toBe(0)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an attempt waiting for one of the machine's slots (other owners' work holds them) says so, and its run time leaves the wait out", () => {
    // The machine's slots held by other work until `free` opens.
    let free: Deferred.Deferred<void> | undefined
    const gated: OwnerHostSettings = { ...host, withSlot: (effect) => Effect.zipRight(Deferred.await(free!), effect) }
    return Effect.gen(function* () {
      free = yield* Deferred.make<void>()
      const submitted = yield* submit(ECHO, { text: "later" })
      const waiting = yield* until("the wait noted", show(submitted.id), (d) => (d.attemptRecords[0]?.waitingForSlotSince ?? null) !== null)
      expect(waiting.attemptRecords[0]).toMatchObject({ state: "running", holdsSlot: true })
      // Other work gives a slot back 30 s later (the test's clock): the job starts, and runs.
      yield* TestClock.adjust("30 seconds")
      yield* Deferred.succeed(free, undefined)
      const done = yield* (yield* Dispatcher).wait(submitted.id, 60_000)
      expect(done).toMatchObject({ state: "succeeded" })
      const detail = yield* show(submitted.id)
      expect(detail.attemptRecords[0]!.waitingForSlotSince).toBeNull()
      // What it ran, measured by the executor: the 30 s it waited are not in it.
      expect(detail.attemptRecords[0]!.ranMs).toBeLessThan(30_000)
    }).pipe(Effect.provide(ownerOn(layerMemory, projectionsLayer, runsDeps(gated))))
  })

  it.effect("an attempt whose pinned bag the owner no longer holds (replaced since the submission) is declined and goes to a worker that holds it; a job that stays on the owner fails (runs audit)", () => {
    // The submission resolves the bag as it was; the attempt's start finds other content installed.
    const seen = new Map<string, number>()
    const replaced: OwnerHostSettings = {
      ...host,
      resolve: (address) => {
        const n = (seen.get(address) ?? 0) + 1
        seen.set(address, n)
        return Effect.map(host.resolve(address), (r) => (n === 1 ? r : { ...r, job: { ...r.job, digest: "sha256:replaced" } }))
      }
    }
    return Effect.gen(function* () {
      const w = yield* linked("lab-1", ["os=linux"])
      yield* advertise(w)
      const submitted = yield* submit(ECHO, { text: "hi" })
      const again = yield* placedOn(submitted.id, 2)
      expect(attempt(again, 1)).toMatchObject({
        host: "owner",
        state: "declined",
        holdsSlot: false,
        reason: `the installed bag demo changed since the run was submitted (digest sha256:replaced, not ${DIGEST}); a worker that holds the bag the run pins may run it`
      })
      expect(attempt(again, 2)).toMatchObject({ host: w.workerId, state: "assigned" })
      expect(again.placement!.explanation).toContain("owner (eligibility: it declined an earlier attempt of this activity: the bag the run pins is no longer installed on it)")
      expect(yield* reserved("owner")).toBe(0)
      // Owner-only: nowhere else to go, so it fails saying why.
      const local = yield* submit(LOCAL, { text: "hi" })
      const done = yield* (yield* Dispatcher).wait(local.id, 60_000)
      expect(done).toMatchObject({ state: "failed", host: "owner", error: `the installed bag demo changed since the run was submitted (digest sha256:replaced, not ${DIGEST})` })
    }).pipe(Effect.provide(ownerOn(layerMemory, projectionsLayer, runsDeps(replaced))))
  })

  it.effect("an owner's decline is lifted once it holds the bag the run pins again: the run comes back to it (the attack saw it blocked for good, its reason untrue)", () => {
    // The submission resolves the bag as it was (the first resolve); later ones find other content, until it is `back`.
    let resolves = 0
    let back = false
    // The owner's jobs wait for a slot until `free` opens: what places the run again is the submission's round, not a job's end.
    let free: Deferred.Deferred<void> | undefined
    const replaced: OwnerHostSettings = {
      ...host,
      resolve: (address) => Effect.map(host.resolve(address), (r) => (++resolves === 1 || back ? r : { ...r, job: { ...r.job, digest: "sha256:replaced" } })),
      withSlot: (effect) => Effect.zipRight(Deferred.await(free!), effect)
    }
    return Effect.gen(function* () {
      free = yield* Deferred.make<void>()
      const dispatcher = yield* Dispatcher
      // Declined on the owner once replaced; no worker holds it.
      const submitted = yield* submit(ECHO, { text: "hi" })
      const blocked = yield* until("declined on the owner", show(submitted.id), (d) => attempt(d, 1)?.state === "declined")
      yield* quiet
      expect((yield* show(submitted.id)).placement!.explanation).toContain("owner (eligibility: it declined an earlier attempt of this activity: the bag the run pins is no longer installed on it)")
      expect(blocked.attempts).toBe(1)
      // The same content installed again: the round a submission asks for places it on the owner,
      // where it runs (the attack saw the submission placed alone, this run left blocked).
      back = true
      const next = yield* submit(ECHO, { text: "next" })
      yield* until("placed on the owner again", show(submitted.id), (d) => attempt(d, 2)?.host === "owner")
      yield* Deferred.succeed(free, undefined)
      const done = yield* dispatcher.wait(submitted.id, 60_000)
      expect(done).toMatchObject({ state: "succeeded", host: "owner", attempts: 2 })
      expect(yield* dispatcher.wait(next.id, 60_000)).toMatchObject({ state: "succeeded", host: "owner", attempts: 1 })
    }).pipe(Effect.provide(ownerOn(layerMemory, projectionsLayer, runsDeps(replaced))))
  })

  it.effect("a result that does not fit output_schema fails the run with that reason", () =>
    Effect.gen(function* () {
      const submitted = yield* submit(ECHO, { text: "hi", misfit: true })
      const done = yield* (yield* Dispatcher).wait(submitted.id, 60_000)
      expect(done).toMatchObject({ state: "failed", host: "owner", result: null, error: "output does not match the job's output_schema: output lacks the required property \"text\"; output lacks the required property \"length\"" })
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- Waiting on a run ------------------------------------------------------------------------------

describe("waiting on a run", () => {
  it.effect("given what the caller has seen, wait answers as soon as the run's progress differs: a blocked run placed once a worker can take it", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const submitted = yield* submit(GPU)
      expect(submitted).toMatchObject({ state: "pending", host: null, attempts: 0 })
      expect(submitted.explanation).toBe("blocked; excluded: owner (eligibility: lacks label gpu=true)")
      const seen = progressOf(submitted)
      // What the caller has seen already is not news; without `seen`, only the end is.
      const follower = yield* Effect.fork(dispatcher.wait(submitted.id, 60_000, seen))
      const ender = yield* Effect.fork(dispatcher.wait(submitted.id, 60_000))
      // A caller that saw something older is answered at once.
      expect(yield* dispatcher.wait(submitted.id, 60_000, progressOf({ ...submitted, explanation: null }))).toEqual(submitted)
      yield* realSleep(20)
      expect(yield* Fiber.poll(follower)).toEqual(Option.none())
      // A worker with the label comes: the run is placed on it, and the follower hears of it (TestClock: no deadline passed).
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const placed = yield* Fiber.join(follower)
      expect(placed).toMatchObject({ id: submitted.id, state: "assigned", host: "lab-1", attempts: 1 })
      expect(placed.explanation).toBe("placed on worker 'lab-1'; excluded: owner (eligibility: lacks label gpu=true)")
      expect(yield* Fiber.poll(ender)).toEqual(Option.none())
      // Its claim and report: the one waiting without `seen` hears of the end only.
      const work = ok(yield* claimNow(w), "work")
      ok(yield* report(w, work.attempt), "ack")
      expect(yield* Fiber.join(ender)).toMatchObject({ state: "succeeded", host: "lab-1" })
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- Runs kept in memory ---------------------------------------------------------------------------

describe("runs kept in memory", () => {
  it.effect("settled runs beyond two generations are forgotten from memory, and still shown, waited on and refused a stop from the journal", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      // A run stopped before any host could take it (no worker yet): it never had an attempt.
      const never = yield* submit(GPU)
      yield* dispatcher.stop(never.id, "operator")
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const files = yield* RunFiles
      const done: Array<{ runId: string; id: string }> = []
      for (let i = 0; i < 5; i++) {
        const r = yield* runningOn(w)
        // Output, as its heartbeats would bring it.
        yield* files.append(r.id, "stdout", `working on ${i}\n`)
        ok(yield* report(w, r.id), "ack")
        done.push(r)
      }
      // Generations of 2: the stopped run and the first three settled; the 3rd retired the first
      // two, the 5th the next two; the last starts a generation.
      const list = yield* dispatcher.list()
      expect(list.forgotten).toBe(4)
      expect(list.runs.map((r) => r.id)).toEqual(done.slice(3).map((r) => r.runId))
      // Forgotten without an attempt: no output was removed, and none is said removed.
      expect((yield* show(never.id)).output).toEqual({ attempt: null, stdout: "", stderr: "", removed: false, skipped: { stdout: 0, stderr: 0 }, files: null })
      const [first] = done
      // Shown from its stream in the journal, as it was when kept.
      const shown = yield* show(first!.runId)
      expect(shown).toMatchObject({ id: first!.runId, state: "succeeded", host: "lab-1", result: { text: "hi", length: 2 }, explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label gpu=true)" })
      expect(shown.attemptRecords).toEqual([expect.objectContaining({ id: first!.id, host: w.workerId, hostName: "lab-1", state: "reported", holdsSlot: false })])
      // The output of forgotten runs is removed with them; that of runs kept stays.
      expect(shown.output).toEqual({ attempt: first!.id, stdout: "", stderr: "", removed: true, skipped: { stdout: 0, stderr: 0 }, files: null })
      yield* until("the forgotten runs' output removed", files.attempts, (ids) => ids.length === 2)
      expect([...(yield* files.attempts)].sort()).toEqual(done.slice(3).map((r) => r.id).sort())
      // Noted as removed, for an owner that keeps more of them later: those that had output only.
      for (const r of done.slice(0, 3)) expect(yield* files.wasRemoved(r.runId)).toBe(true)
      for (const r of done.slice(3)) expect(yield* files.wasRemoved(r.runId)).toBe(false)
      expect(yield* files.wasRemoved(never.id)).toBe(false)
      expect((yield* show(done[4]!.runId)).output).toMatchObject({ attempt: done[4]!.id, stdout: "working on 4\n", stderr: "", removed: false, skipped: { stdout: 0, stderr: 0 }, files: { stdout: expect.stringMatching(/\.stdout$/), stderr: null } })
      expect(yield* dispatcher.wait(first!.runId, 60_000)).toMatchObject({ id: first!.runId, state: "succeeded" })
      const before = [yield* head, yield* sequence]
      expect(yield* Effect.flip(dispatcher.stop(first!.runId, "operator"))).toMatchObject({ code: "run-finished", message: `run ${first!.runId} has already succeeded` })
      // A late repeat of its report is refused, and nothing is written.
      expect(refusal(yield* report(w, first!.id))).toBe("unknown-activity")
      expect([yield* head, yield* sequence]).toEqual(before)
      expect(yield* Effect.flip(show("rNoSuchRun1"))).toMatchObject({ code: "unknown-run" })
      // The journal, folded again from the same empty state, forgets the same runs.
      const live = yield* Effect.flatMap(Projections, (p) => p.state)
      const replayed = yield* foldJournal(new Map(), initialStateRetaining(RETAIN))
      expect(JSON.stringify(canonicalState(replayed.state))).toBe(JSON.stringify(canonicalState(live)))
      expect(live.runs.forgotten).toBe(4)
    }).pipe(Effect.provide(ForgetfulOwner))
  )

  it.effect("list filters by state and keeps the most recently submitted; a state it does not know is refused", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const settled = yield* runningOn(w)
      ok(yield* report(w, settled.id), "ack")
      const running = yield* runningOn(w)
      const assigned = yield* submit(GPU)
      const waiting = yield* submit(GPU)
      const ids = (l: { readonly runs: ReadonlyArray<{ readonly id: string }> }) => l.runs.map((r) => r.id)
      expect(ids(yield* dispatcher.list())).toEqual([settled.runId, running.runId, assigned.id, waiting.id])
      expect(yield* dispatcher.list({ limit: 2 })).toMatchObject({ runs: [{ id: assigned.id }, { id: waiting.id }], total: 4, forgotten: 0 })
      expect(yield* dispatcher.list({ states: ["running", "succeeded"] })).toMatchObject({ runs: [{ id: settled.runId }, { id: running.runId }], total: 2 })
      expect(yield* dispatcher.list({ states: ["pending"], limit: 5 })).toMatchObject({ runs: [{ id: waiting.id, state: "pending" }], total: 1 })
      expect(yield* Effect.flip(dispatcher.list({ states: ["done"] }))).toMatchObject({ code: "bad-filter", message: '"done" is not a run state; the states are pending, assigned, running, succeeded, failed, stopped' })
      expect(yield* Effect.flip(dispatcher.list({ limit: -1 }))).toMatchObject({ code: "bad-filter" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("at start, output files of runs the owner does not keep (forgotten while it was down) are removed", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-dispatcher-out-"))
    writeFileSync(join(dir, "rGone1.1.stdout"), "old output\n")
    writeFileSync(join(dir, "rGone1.2.stderr"), "old errors\n")
    const deps = Layer.mergeAll(ChildExecutor.layer, FileRunFiles.layer(dir), Layer.succeed(OwnerHost, host))
    // An attempt of the owner's own that printed nothing: its files were made as it started, empty.
    writeFileSync(join(dir, "rQuiet1.1.stdout"), "")
    writeFileSync(join(dir, "rQuiet1.1.stderr"), "")
    return Effect.gen(function* () {
      const files = yield* RunFiles
      yield* until("the stray output removed", files.attempts, (ids) => ids.length === 0)
      expect(readdirSync(dir)).toEqual([FileRunFiles.REMOVED_LIST])
      expect(yield* files.wasRemoved("rGone1")).toBe(true)
      // Not said removed: it had no output to remove.
      expect(yield* files.wasRemoved("rQuiet1")).toBe(false)
    }).pipe(Effect.provide(ownerOn(layerMemory, projectionsLayer, deps)))
  })

  it.effect("output files that cannot be removed (a read-only directory) are said once a sweep, and the owner goes on", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-dispatcher-out-ro-"))
    for (let i = 0; i < 3; i++) writeFileSync(join(dir, `rStuck${i}.1.stdout`), "old output\n")
    const real = FileRunFiles.make(dir)
    const stuck: RunFilesService = { ...real, remove: (attempt) => Effect.fail(new OutputNotKept({ message: `the output files of ${attempt} in ${dir} could not be removed: EROFS: read-only file system` })) }
    const logs: Array<string> = []
    const deps = Layer.mergeAll(ChildExecutor.layer, Layer.succeed(RunFiles, stuck), Layer.succeed(OwnerHost, host))
    return Effect.gen(function* () {
      yield* until("the sweep said so", Effect.sync(() => logs.filter((l) => l.startsWith("WARN"))), (warned) => warned.length > 0)
      expect(logs.filter((l) => l.startsWith("WARN"))).toEqual([
        expect.stringMatching(
          /^WARN the output files of 3 attempts of forgotten runs could not be removed \(the output files of rStuck\d\.1 in \S+ could not be removed: EROFS: read-only file system\); they are tried again when the next generation of runs is forgotten, and at the next start$/
        )
      ])
      // The owner goes on answering.
      const dispatcher = yield* Dispatcher
      expect(yield* dispatcher.list()).toMatchObject({ total: 0 })
    }).pipe(Effect.provide(ownerOn(layerMemory, projectionsLayer, deps)), Effect.provide(capturingLogs(logs)))
  })

  it.effect("a run in flight is kept however many runs settle after it", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const held = yield* runningOn(w)
      for (let i = 0; i < 6; i++) {
        const r = yield* runningOn(w)
        ok(yield* report(w, r.id), "ack")
      }
      expect((yield* (yield* Dispatcher).list()).forgotten).toBe(RETAIN * 2)
      expect(yield* show(held.runId)).toMatchObject({ state: "running", host: "lab-1" })
      ok(yield* report(w, held.id), "ack")
      expect(yield* show(held.runId)).toMatchObject({ state: "succeeded" })
    }).pipe(Effect.provide(ForgetfulOwner))
  )
})

// ---- On a worker ------------------------------------------------------------------------------

describe("on a worker", () => {
  it.effect("a job needing a label only the worker has is placed there; a waiting claim is answered with it; the report completes it", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const claim = yield* waitingClaim(w)
      expect(claim.unsafePoll()).toBeNull()
      const run = yield* submit(GPU)
      const work = ok(yield* claim.await.pipe(Effect.flatten), "work")
      expect(work).toEqual({ kind: "work", attempt: `${run.id}.1`, runId: run.id, address: GPU, digest: DIGEST, input: { text: "hi" }, timeoutMs: null, outputLimit: 16 * 1024 * 1024, newCredential: null })
      const running = yield* show(run.id)
      expect(running).toMatchObject({ state: "running", host: "lab-1", explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label gpu=true)" })
      expect(attempt(running, 1)).toMatchObject({ host: w.workerId, hostName: "lab-1", state: "running", fence: w.fence, holdsSlot: true })
      expect(yield* reserved(w.workerId)).toBe(1)
      ok(yield* report(w, work.attempt, { text: "hi", length: 2 }), "ack")
      expect(yield* show(run.id)).toMatchObject({ state: "succeeded", result: { text: "hi", length: 2 }, error: null })
      expect(yield* reserved(w.workerId)).toBe(0)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a report that claims the next: the report is recorded, and the attempt placed on the worker starts and comes back in the answer", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const first = yield* runningOn(w)
      // Placed on the worker, not claimed yet.
      const second = yield* submit(GPU, { text: "second" })
      yield* placedOn(second.id, 1)
      expect(attempt(yield* show(second.id), 1)).toMatchObject({ host: w.workerId, state: "assigned" })
      const answer = ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: first.id, outcome: { ok: true, result: { text: "hi", length: 2 }, exitCode: 0 }, claimNext: true }), "ack")
      expect((yield* show(first.runId)).state).toBe("succeeded")
      // With the owner's output limit: the worker keeps no more of each stream (docs/runs.md, "How much output is kept").
      expect(answer.next).toEqual({ attempt: `${second.id}.1`, runId: second.id, address: GPU, digest: DIGEST, input: { text: "second" }, timeoutMs: null, outputLimit: 16 * 1024 * 1024 })
      expect(attempt(yield* show(second.id), 1)).toMatchObject({ host: w.workerId, state: "running", fence: w.fence })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a report that claims the next, while a run waits for a slot: the slot it frees takes the run, handed over in the answer (one call per attempt)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const a = yield* runningOn(w)
      yield* runningOn(w)
      const queued = yield* submit(GPU, { text: "queued" })
      expect((yield* show(queued.id)).placement).toMatchObject({ outcome: "waiting" })
      const answer = ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 } }, claimNext: true }), "ack")
      expect(answer.next).toMatchObject({ attempt: `${queued.id}.1`, runId: queued.id, input: { text: "queued" } })
      expect(attempt(yield* show(queued.id), 1)).toMatchObject({ host: w.workerId, state: "running" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("output sent again (its answer was lost) is written once, where its pieces say they lie: the same piece, a longer one, a shorter one, then the report", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const beat = (stdout: string, from: number, to: number, stderr = "", errAt: readonly [number, number] = [0, 0]) =>
        call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout, stderr, at: { stdout: [from, to], stderr: errAt } }] }).pipe(Effect.map((r) => ok(r, "ack")))
      yield* beat("line 1\n", 0, 7)
      yield* beat("line 1\n", 0, 7) // its answer was lost: sent again, the same
      yield* beat("line 2\n", 7, 14)
      yield* beat("line 2\nline 3\n", 7, 21) // lost again; the next call had room for more
      yield* beat("é\n", 21, 24, "oops\n", [0, 5])
      yield* beat("é", 21, 23) // shorter than the piece before it: nothing new
      const reported = yield* call(w.credential, {
        kind: "report",
        fence: w.fence,
        attempt: a.id,
        outcome: { ok: true, result: { text: "hi", length: 2 }, exitCode: 0 },
        output: { attempt: a.id, stdout: "\nlast\n", stderr: "", at: { stdout: [23, 29], stderr: [5, 5] } }
      })
      ok(reported, "ack")
      expect((yield* show(a.runId)).output).toMatchObject({ stdout: "line 1\nline 2\nline 3\né\nlast\n", stderr: "oops\n" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker that sends past the owner's output limit (one that does not keep to it) is cut by the owner: its own line past the limit is kept whole, the rest once, then one line of the owner's", () => {
    const small = ownerOn(layerMemory, projectionsLayer, Layer.mergeAll(ChildExecutor.layer, FileRunFiles.layer(mkdtempSync(join(tmpdir(), "svc-dispatcher-limit-")), 1024), Layer.succeed(OwnerHost, host)))
    return Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const beat = (attempt: string, stdout: string, from: number, to: number) =>
        call(w.credential, { kind: "heartbeat", fence: w.fence, running: [attempt], output: [{ attempt, stdout, stderr: "", at: { stdout: [from, to], stderr: [0, 0] } }] }).pipe(Effect.map((r) => ok(r, "ack")))
      // A worker that kept to the limit: 1,024 bytes, then its own line, past the limit: kept whole,
      // even cut across two pieces.
      const line = "[svc: output past the first 1 KiB of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n"
      yield* beat(a.id, "x".repeat(1023) + "\n", 0, 1024)
      yield* beat(a.id, line.slice(0, 20), 1024, 1044)
      yield* beat(a.id, line.slice(20), 1044, 1024 + line.length)
      expect((yield* show(a.runId)).output.stdout).toBe(`${"x".repeat(1023)}\n${line}`)
      // One that does not: kept up to the limit, then the owner's line, once.
      const b = yield* runningOn(w)
      yield* beat(b.id, "y".repeat(1000), 0, 1000)
      yield* beat(b.id, "z".repeat(1000), 1000, 2000)
      yield* beat(b.id, "z".repeat(1000), 1000, 2000) // its answer was lost: sent again
      yield* beat(b.id, "w".repeat(1000), 2000, 3000)
      expect((yield* show(b.runId)).output.stdout).toBe(`${"y".repeat(1000)}${"z".repeat(24)}\n${line}`)
      // Pieces that start past the limit (an owner restarted with a lower one: its marks are gone): the line, once.
      ok(yield* report(w, a.id), "ack")
      const c = yield* runningOn(w)
      yield* beat(c.id, "q".repeat(1000) + "\n", 0, 1001)
      yield* beat(c.id, "r".repeat(100), 5000, 5100)
      yield* beat(c.id, "s".repeat(100), 5100, 5200)
      expect((yield* show(c.runId)).output.stdout).toBe(`${"q".repeat(1000)}\n${line}`)
    }).pipe(Effect.provide(small))
  })

  it.effect("a piece whose at does not cover its text is refused, nothing written (at [0, 0] with text had it written whole past the owner's output limit)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const before = [yield* head, yield* sequence]
      const piece = (stdout: string, at: readonly [number, number]) => ({ attempt: a.id, stdout, stderr: "", at: { stdout: at, stderr: [0, 0] as const } })
      const beat = yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [piece("z".repeat(100), [0, 0])] })
      expect(Either.getLeft(beat).pipe(Option.getOrUndefined)).toMatchObject({
        code: "bad-request",
        message: `the stdout of "${a.id}": its text is 100 bytes (UTF-8) for the 0 bytes at [0, 0] of the worker's copy: it must be at least as long and at most three times (each byte that is not UTF-8 arrives as a U+FFFD of 3); nothing was recorded`
      })
      const reported = yield* call(w.credential, { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 } }, output: piece("y", [5, 9]) })
      expect(refusal(reported)).toBe("bad-request")
      expect([yield* head, yield* sequence]).toEqual(before)
      expect((yield* show(a.runId)).output).toMatchObject({ stdout: "", stderr: "" })
      // As long as its bytes, or longer by invalid bytes (a U+FFFD of 3 for each): taken.
      ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [piece("ok\uFFFD\n", [0, 4])] }), "ack")
      expect((yield* show(a.runId)).output.stdout).toBe("ok\uFFFD\n")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("output for an attempt not placed on the worker is refused, not answered as kept; a report carries only its own attempt's", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const before = yield* head
      // An attempt its run never had, and what is no attempt id at all.
      const foreign = { attempt: `${a.runId}.7`, stdout: "lost?", stderr: "" }
      const beat = yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout: "mine", stderr: "" }, foreign] })
      expect(refusal(beat)).toBe("unknown-activity")
      expect(refusal(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: "garbage", stdout: "x", stderr: "" }] }))).toBe("unknown-activity")
      const mixed = yield* call(w.credential, { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 } }, output: { ...foreign, attempt: "rOTHER.1" } })
      expect(refusal(mixed)).toBe("bad-request")
      // Nothing recorded: the run still runs, and no output was kept.
      expect(yield* head).toBe(before)
      expect((yield* show(a.runId)).state).toBe("running")
      ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout: "mine", stderr: "" }] }), "ack")
      // A run the owner does not keep (settled and forgotten, or never known: it cannot tell): accepted, not kept,
      // so that a superseded job still running there does not get every heartbeat of its worker refused.
      ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: "rFORGOTTEN1.1", stdout: "late", stderr: "" }] }), "ack")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a run's view names its host's id, and says when another worker carries that name (texts then add the id)", () =>
    Effect.gen(function* () {
      const old = yield* linked("lab-1")
      yield* (yield* Owner).revoke(old.workerId, "operator")
      const again = yield* linked("lab-1")
      yield* advertise(again)
      const a = yield* runningOn(again)
      const v = yield* show(a.runId)
      expect(v).toMatchObject({ host: "lab-1", hostId: again.workerId, hostNameShared: true })
      // Each attempt on a name the fleet shares says so too (runs show added ids only among the run's own attempts).
      const detail = yield* (yield* Dispatcher).show(a.runId)
      expect(detail.attemptRecords.map((x) => [x.hostName, x.hostNameShared])).toEqual([["lab-1", true]])
      const single = yield* linked("lab-2")
      expect(single.workerId).not.toBe(again.workerId)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a report that claims the next, with nothing placed on the worker: next is null; without claimNext there is no next at all", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const b = yield* runningOn(w)
      const before = yield* head
      const withNext = ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 } }, claimNext: true }), "ack")
      expect(withNext.next).toBeNull()
      // The report alone was journaled.
      expect((yield* head) - before).toBe(1)
      const plain = ok(yield* report(w, b.id), "ack")
      expect(plain).not.toHaveProperty("next")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a report that claims the next and lists what the worker runs: an attempt it leaves out was a lost answer, and is placed again", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const a = yield* runningOn(w)
      // Started for the worker by a claim whose answer never arrived: the worker does not run it.
      const lost = yield* runningOn(w)
      const answer = ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 } }, claimNext: true, running: [] }), "ack")
      expect(attempt(yield* show(lost.runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false, reason: expect.stringMatching(/did not list it/) })
      // Placed again by the round the report waits for (the slots are free), and handed over in its answer.
      expect(answer.next).toMatchObject({ attempt: `${lost.runId}.2`, runId: lost.runId })
      expect(attempt(yield* show(lost.runId), 2)).toMatchObject({ host: w.workerId, state: "running" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a refused report claims nothing: the attempt placed on the worker stays assigned", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const placed = yield* submit(GPU)
      yield* placedOn(placed.id, 1)
      const refused = yield* call(w.credential, { kind: "report", fence: w.fence, attempt: "rnosuchrun.1", outcome: { ok: true, result: { text: "hi", length: 2 } }, claimNext: true })
      expect(refusal(refused)).toBe("unknown-activity")
      expect(attempt(yield* show(placed.id), 1)).toMatchObject({ state: "assigned" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a submission and its placement are one commit: the run's stream holds both when submit answers", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const before = yield* head
      const run = yield* submit(GPU)
      expect(run).toMatchObject({ attempts: 1, host: "lab-1", explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label gpu=true)" })
      const events = (yield* Effect.flatMap(Journal, (j) => j.read(before, 100))).filter((e) => e.stream === `run-${run.id}`)
      expect(events.map((e) => [e.type, e.streamVersion])).toEqual([
        ["RunSubmitted", 1],
        ["PlacementDecided", 2]
      ])
      expect(events[1]!.sequence).toBe(events[0]!.sequence + 1)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a placement on a worker whose claim waits starts the attempt in the placement's commit, and answers the claim with it", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const claim = yield* waitingClaim(w)
      const run = yield* submit(GPU)
      const work = ok(yield* claim.await.pipe(Effect.flatten), "work")
      expect(work).toMatchObject({ attempt: `${run.id}.1`, runId: run.id, address: GPU, digest: DIGEST, input: { text: "hi" } })
      expect(appended.filter((c) => c.stream === `run-${run.id}`)).toEqual([{ stream: `run-${run.id}`, types: ["RunSubmitted", "PlacementDecided", "AttemptStarted"] }])
      const detail = yield* show(run.id)
      expect(attempt(detail, 1)).toMatchObject({ host: w.workerId, state: "running", fence: w.fence, holdsSlot: true })
      expect(yield* reserved(w.workerId)).toBe(1)
      ok(yield* report(w, work.attempt), "ack")
      expect(yield* show(run.id)).toMatchObject({ state: "succeeded" })
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("the scheduler's placement hands over too: a run placed when room frees up starts in that commit for the waiting claim", () =>
    Effect.gen(function* () {
      const { w, first, third } = yield* fullWithThirdWaiting
      const claim = yield* waitingClaim(w)
      ok(yield* report(w, first.id), "ack")
      const work = ok(yield* claim.await.pipe(Effect.flatten), "work")
      expect(work.attempt).toBe(`${third.id}.1`)
      expect(commitsOf(third.id)).toEqual([["RunSubmitted", "PlacementDecided"], ["PlacementDecided", "AttemptStarted"]])
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a claim whose wait is over, or whose caller left, is not handed anything: the attempt is assigned and claimed later", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const over = yield* waitingClaim(w, 1)
      yield* TestClock.adjust("1 second")
      ok(yield* over.await.pipe(Effect.flatten), "no-work")
      const left = yield* waitingClaim(w)
      yield* Fiber.interrupt(left)
      const run = yield* submit(GPU)
      expect(attempt(yield* show(run.id), 1)).toMatchObject({ host: w.workerId, state: "assigned" })
      expect(commitsOf(run.id)).toEqual([["RunSubmitted", "PlacementDecided"]])
      const work = ok(yield* claimNow(w), "work")
      expect(work.attempt).toBe(`${run.id}.1`)
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("an attempt its worker says waits there for a free slot is shown so, since the first heartbeat saying it, until one no longer does", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const r = yield* runningOn(w)
      const waitingSince = () => Effect.map(show(r.runId), (d) => attempt(d, 1)?.waitingForSlotSince)
      expect(yield* waitingSince()).toBeNull()
      yield* TestClock.adjust("2 seconds")
      // An attempt it does not run is not taken for one of its own.
      ok(yield* heartbeat(w, [r.id], [r.id, "rOther1.1"]), "ack")
      expect(yield* waitingSince()).toBe(new Date(2_000).toISOString())
      yield* TestClock.adjust("3 seconds")
      ok(yield* heartbeat(w, [r.id], [r.id]), "ack")
      expect(yield* waitingSince()).toBe(new Date(2_000).toISOString())
      // It got a slot: the next heartbeat does not say it waits.
      ok(yield* heartbeat(w, [r.id]), "ack")
      expect(yield* waitingSince()).toBeNull()
      // A new session forgets what the last one said, until a heartbeat says it again.
      ok(yield* heartbeat(w, [r.id], [r.id]), "ack")
      expect(yield* waitingSince()).not.toBeNull()
      ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [r.id] }), "welcome")
      expect(yield* waitingSince()).toBeNull()
      // Not journaled: the run's stream holds its submission, placement and start, no more.
      const types = (yield* Effect.flatMap(Journal, (j) => j.read(0, 1000))).filter((e) => e.stream === `run-${r.runId}`).map((e) => e.type)
      expect(types).toEqual(["RunSubmitted", "PlacementDecided", "AttemptStarted"])
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("slots a worker says other work holds count as used: a run waits while they are busy, and is placed when a refresh gives them back", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      // Capacity 2, both slots held by other work (another owner's attempts, its own runs).
      yield* advertise(w, 2)
      const run = yield* submit(GPU)
      const waiting = yield* show(run.id)
      expect(waiting.placement).toMatchObject({ outcome: "waiting" })
      expect(waiting.placement?.explanation).toContain("2 of 2")
      const owner = yield* Owner
      expect((yield* owner.status).find((x) => x.id === w.workerId)).toMatchObject({ state: "Busy", used: 2, elsewhere: 2, free: 0 })
      // The same refresh again is not journaled (busy is runtime state, not the offer).
      const before = yield* head
      yield* advertise(w, 2)
      expect(yield* head).toBe(before)
      // One slot given back: the refresh asks for a round, and the run is placed there.
      yield* advertise(w, 1)
      yield* placedOn(run.id, 1)
      expect(attempt(yield* show(run.id), 1)).toMatchObject({ host: w.workerId })
      expect((yield* owner.status).find((x) => x.id === w.workerId)).toMatchObject({ used: 2, elsewhere: 1 })
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a claim saying fewer slots are busy elsewhere gets the run waiting for that worker at once, not after the next advertisement", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w, 2)
      const run = yield* submit(GPU)
      expect((yield* show(run.id)).placement).toMatchObject({ outcome: "waiting" })
      // Its other work gave a slot back; it claims (a worker claims only with a slot free), saying so.
      const claim = yield* Effect.fork(call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 30, busy: 1 }))
      const work = ok(yield* claim.await.pipe(Effect.flatten), "work")
      expect(work.attempt).toBe(`${run.id}.1`)
      expect((yield* (yield* Owner).status).find((x) => x.id === w.workerId)).toMatchObject({ elsewhere: 1 })
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a claim that lists what the worker runs withdraws the worker's claims still parked (their caller went away): the placement goes to the new claim", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      // A claim whose connection dropped, which the owner has not seen yet: still parked.
      const stale = yield* waitingClaim(w)
      const fresh = yield* Effect.tap(Effect.fork(call(w.credential, { kind: "claim", fence: w.fence, waitSeconds: 30, running: [] })), () => quiet)
      ok(yield* stale.await.pipe(Effect.flatten), "no-work")
      const run = yield* submit(GPU)
      const work = ok(yield* fresh.await.pipe(Effect.flatten), "work")
      expect(work.attempt).toBe(`${run.id}.1`)
      expect(attempt(yield* show(run.id), 1)).toMatchObject({ host: w.workerId, state: "running" })
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a claim of a session taken over since is not handed anything: woken, it is refused as fenced; the new session claims the attempt", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const stale = yield* waitingClaim(w)
      // A second process with the same credential says hello: a new session, a new fence.
      const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(welcome.fence).toBeGreaterThan(w.fence)
      const run = yield* submit(GPU)
      expect(refusal(yield* stale.await.pipe(Effect.flatten))).toBe("fenced")
      // Placed once the new session has said what it offers.
      yield* advertise({ ...w, fence: welcome.fence })
      yield* placedOn(run.id, 1)
      expect(attempt(yield* show(run.id), 1)).toMatchObject({ state: "assigned" })
      const work = ok(yield* claimNow({ ...w, fence: welcome.fence }), "work")
      expect(work.attempt).toBe(`${run.id}.1`)
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a waiting claim is answered at once when its session is taken over or its worker revoked, not with no work at its wait's end", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const stale = yield* waitingClaim(w)
      const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      yield* quiet
      // No time passed (the test clock stands still): the takeover itself answered it.
      expect(refusal(yield* stale.await.pipe(Effect.flatten))).toBe("fenced")
      const waiting = yield* waitingClaim({ ...w, fence: welcome.fence })
      yield* (yield* Owner).revoke("lab-1", "operator")
      yield* quiet
      expect(refusal(yield* waiting.await.pipe(Effect.flatten))).toBe("revoked")
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("a waiting claim is answered with no work at once when its process says bye", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const waiting = yield* waitingClaim(w)
      ok(yield* call(w.credential, { kind: "bye", fence: w.fence }), "ack")
      yield* quiet
      // The test clock stands still: the bye answered it, not the end of its 30 s.
      ok(yield* waiting.await.pipe(Effect.flatten), "no-work")
    }).pipe(Effect.provide(CountingOwner))
  )

  it.effect("submissions at once, on the SQLite journal's group commit, never promise a worker more slots than it has", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      // All decided within one event-loop turn, before any of their commits.
      const runs = yield* Effect.all(Array.from({ length: 5 }, (_, i) => submit(GPU, { text: `r${i}` })), { concurrency: "unbounded" })
      const details = yield* Effect.forEach(runs, (r) => show(r.id))
      expect(details.filter((d) => d.placement?.outcome === "placed")).toHaveLength(2)
      expect(yield* reserved(w.workerId)).toBe(2)
      const placed = details.filter((d) => d.placement?.outcome === "placed").map((d) => d.id)
      // The first two submitted are the ones placed; the others wait, in order.
      expect(placed).toEqual(runs.slice(0, 2).map((r) => r.id))
    }).pipe(Effect.provide(SqliteOwner))
  )

  it.effect("a run submitted while an earlier one waits for room is not placed ahead of it", () =>
    Effect.gen(function* () {
      const { w, first, third } = yield* fullWithThirdWaiting
      // The third waits for room: the fourth is only submitted; the scheduler places in order.
      const fourth = yield* submit(GPU, { text: "fourth" })
      expect((yield* show(fourth.id)).placement).toBeNull()
      ok(yield* report(w, first.id), "ack")
      const placed = yield* until("the third placed", show(third.id), (d) => d.placement?.outcome === "placed")
      expect(attempt(placed, 1)).toMatchObject({ host: w.workerId })
      const waiting = yield* until("the fourth decided", show(fourth.id), (d) => d.placement !== null)
      expect(waiting.placement).toMatchObject({ outcome: "waiting" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a backlog of one kind waits in line behind its first run: one decision, not one per run, in each round and at a change of the fleet; placed in submission order as room frees (backlog audit)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w) // capacity 2
      const a = yield* runningOn(w)
      yield* runningOn(w)
      const backlog: Array<string> = []
      for (let i = 0; i < 30; i++) backlog.push((yield* submit(GPU, { text: `n${i}` })).id)
      yield* quiet
      const decided = Effect.map(Effect.flatMap(Journal, (j) => j.read(0, 100_000)), (es) => es.filter((e) => e.type === "PlacementDecided" && backlog.includes(e.stream.slice("run-".length))).length)
      // The first was decided (waiting) at its submission; rounds since left the rest in line, undecided.
      expect(yield* decided).toBe(1)
      const first = yield* show(backlog[0]!)
      expect(first.placement).toMatchObject({ outcome: "waiting" })
      expect(first.inLine).toBeUndefined()
      const tenth = yield* until("the tenth in line", show(backlog[9]!), (d) => d.inLine !== undefined)
      expect(tenth).toMatchObject({ explanation: IN_LINE, placement: null, inLine: { behind: backlog[0], ahead: 9, behindExplanation: first.explanation } })

      // A change of the fleet (a second worker, its slots held by other work): the first is decided again, the rest not.
      const w2 = yield* linked("lab-2")
      yield* advertise(w2, 2)
      yield* until("the first decided again", decided, (n) => n === 2)
      yield* quiet
      expect(yield* decided).toBe(2)
      expect((yield* show(backlog[0]!)).explanation).toContain("lab-2")

      // A slot freed: the first is placed, the second decided (waiting), the rest in line behind it.
      ok(yield* report(w, a.id), "ack")
      const placed = yield* until("the first placed", show(backlog[0]!), (d) => d.placement?.outcome === "placed")
      expect(attempt(placed, 1)).toMatchObject({ host: w.workerId })
      const second = yield* until("the second decided", show(backlog[1]!), (d) => d.placement !== null)
      expect(second.placement).toMatchObject({ outcome: "waiting" })
      const later = yield* until("the tenth behind the second", show(backlog[9]!), (d) => d.inLine?.behind === backlog[1])
      expect(later.inLine).toMatchObject({ ahead: 8 })
      // How far along it is changes; what a caller waiting on it is told does not (one line, not one per run placed before it).
      expect(progressOf(later)).toBe(progressOf(tenth))
      expect(yield* decided).toBe(4)

      // Another kind is not held up by this line: a job the owner runs is placed at once.
      const other = yield* submit(ECHO)
      const echoed = yield* until("the other kind placed", show(other.id), (d) => d.placement?.outcome === "placed")
      expect(attempt(echoed, 1)).toMatchObject({ host: "owner" })
      // Stopping the first in line: the next is decided in its place.
      yield* Effect.flatMap(Dispatcher, (d) => d.stop(backlog[1]!, "operator"))
      const third = yield* until("the third decided", show(backlog[2]!), (d) => d.placement !== null)
      expect(third.placement).toMatchObject({ outcome: "waiting" })
      expect((yield* until("the tenth behind the third", show(backlog[9]!), (d) => d.inLine?.behind === backlog[2])).inLine).toMatchObject({ ahead: 7 })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker's result is checked against output_schema: one that does not fit fails the run with the reason", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* report(w, id, { text: "hi", length: "two" }), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "failed", result: null, error: "output does not match the job's output_schema: output.length must be integer" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker's result nested too deep to be taken fails the run saying so, and the owner goes on", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* report(w, id, JSON.parse("[".repeat(30_000) + "]".repeat(30_000))), "ack")
      expect(yield* show(runId)).toMatchObject({
        state: "failed",
        result: null,
        error: "the output nests more than 512 levels deep (arrays and objects within each other); at most 512 are taken"
      })
      expect((yield* submit(ECHO, { text: "after" })).state).toBe("running")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a retried report is answered as the first and recorded once", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* report(w, id), "ack")
      const after = yield* head
      ok(yield* report(w, id), "ack")
      // Even a retry carrying another outcome: the first one stands.
      ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: id, outcome: { ok: false, error: "late", exitCode: 1 } }), "ack")
      expect(yield* head).toBe(after)
      expect(yield* show(runId)).toMatchObject({ state: "succeeded", result: { text: "hi", length: 2 } })
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- What supersedes an attempt --------------------------------------------------------------

describe("a lapsed advertisement", () => {
  /**
   * lab-1 (zone=a, preferred) runs the attempt and then falls silent at 0 s; lab-2 keeps
   * advertising every 5 s. Answers with the clock at 14.9 s.
   */
  const silentAfterClaim = Effect.gen(function* () {
    const w1 = yield* linked("lab-1", ["gpu=true", "zone=a"])
    const w2 = yield* linked("lab-2", ["gpu=true", "zone=b"])
    yield* advertise(w1)
    yield* advertise(w2)
    const { runId, id } = yield* runningOn(w1, ["zone=a"])
    for (const t of [5_000, 5_000, 4_900]) {
      yield* TestClock.adjust(t)
      yield* advertise(w2)
    }
    return { w1, w2, runId, id }
  })

  it.effect("the owner's log says lab-1 went Offline and that the attempt it held is placed again, once", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const capture = capturingLogs(logs)
      yield* Effect.gen(function* () {
        const { w1, w2 } = yield* silentAfterClaim
        expect(logs.filter((l) => l.includes("Offline"))).toEqual([])
        expect(logs).toContain(`INFO worker lab-1 (${w1.workerId}) is advertising: it can take work`)
        yield* TestClock.adjust(1_100)
        yield* quiet
        expect(logs.filter((l) => l.includes("Offline"))).toEqual([`WARN worker lab-1 (${w1.workerId}) is Offline: no advertisement for 15 s; the attempt it held is placed again`])
        yield* advertise(w2)
        yield* TestClock.adjust(5_000)
        expect(logs.filter((l) => l.includes("Offline"))).toHaveLength(1)
      }).pipe(Effect.provide(Presence.layer.pipe(Layer.provideMerge(TestOwner))), Effect.provide(capture))
    })
  )

  it.effect("a worker that says bye holding an attempt: the owner's log says the attempt it held is placed again, though its slot was freed at the bye (the attack saw the line without it)", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const capture = capturingLogs(logs)
      yield* Effect.gen(function* () {
        const w1 = yield* linked("lab-1", ["gpu=true", "zone=a"])
        yield* advertise(w1)
        yield* runningOn(w1, ["zone=a"])
        ok(yield* call(w1.credential, { kind: "bye", fence: w1.fence }), "ack")
        yield* quiet
        yield* TestClock.adjust(1_000)
        yield* quiet
        expect(yield* reserved(w1.workerId)).toBe(0)
        expect(logs.filter((l) => l.includes("Offline"))).toEqual([`INFO worker lab-1 (${w1.workerId}) is Offline: its svc serve stopped cleanly (it said so); the attempt it held is placed again`])
      }).pipe(Effect.provide(Presence.layer.pipe(Layer.provideMerge(TestOwner))), Effect.provide(capture))
    })
  )

  it.effect("at 14.9 s the attempt still counts; at 15 s the next round supersedes it and places the run again", () =>
    Effect.gen(function* () {
      const { w1, w2, runId } = yield* silentAfterClaim
      // A round at 14.9 s (a kick) leaves it alone.
      yield* (yield* Dispatcher).kick
      yield* quiet
      const before = yield* show(runId)
      expect(before).toMatchObject({ state: "running", attempts: 1 })
      expect(attempt(before, 1)).toMatchObject({ state: "running", holdsSlot: true })
      yield* TestClock.adjust(100)
      const after = yield* placedOn(runId, 2)
      expect(attempt(after, 1)).toMatchObject({ host: w1.workerId, state: "superseded", reason: "its worker's advertisement lapsed (no refresh for 15 s)", endedAt: new Date(15_000).toISOString(), holdsSlot: true })
      expect(attempt(after, 2)).toMatchObject({ host: w2.workerId, state: "assigned", assignedAt: new Date(15_000).toISOString() })
      expect(after).toMatchObject({ state: "assigned", host: "lab-2" })
      expect(after.placement!.explanation).toBe("placed on worker 'lab-2'; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-1' (eligibility: its advertisement expired (no refresh for 15 s))")
      // The superseded attempt keeps lab-1's slot until lab-1 is seen to have stopped it.
      expect([yield* reserved(w1.workerId), yield* reserved(w2.workerId)]).toEqual([1, 1])
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("runs placed again (their worker lapsed) take their place in the line by submission, ahead of the runs submitted after them", () =>
    Effect.gen(function* () {
      const w1 = yield* linked("lab-1")
      yield* advertise(w1)
      const a = yield* runningOn(w1)
      const b = yield* runningOn(w1)
      const c = yield* submit(GPU, { text: "c" })
      const d = yield* submit(GPU, { text: "d" })
      yield* until("d in line behind c", show(d.id), (v) => v.inLine?.behind === c.id)
      // lab-1 falls silent: at 15 s a and b are superseded, pending again before c and d; nothing can take them.
      yield* TestClock.adjust(15_000)
      yield* until("a pending again", show(a.runId), (v) => v.state === "pending")
      const behindA = yield* until("the line made again, a first", show(d.id), (v) => v.inLine?.behind === a.runId)
      expect(behindA.inLine).toMatchObject({ ahead: 3 })
      // A worker with room for two: a and b first, in their order; c decided (waiting), d behind it.
      const w2 = yield* linked("lab-2")
      yield* advertise(w2)
      yield* placedOn(a.runId, 2)
      yield* placedOn(b.runId, 2)
      expect([attempt(yield* show(a.runId), 2)?.host, attempt(yield* show(b.runId), 2)?.host]).toEqual([w2.workerId, w2.workerId])
      const waiting = yield* until("c decided", show(c.id), (v) => v.placement?.outcome === "waiting")
      expect(waiting.inLine).toBeUndefined()
      expect((yield* until("d behind c again", show(d.id), (v) => v.inLine?.behind === c.id)).inLine).toMatchObject({ ahead: 1 })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a run declined while a line waits is judged again at once, ahead of the runs submitted after it (no time passes: the line is made again for it)", () =>
    Effect.gen(function* () {
      const w1 = yield* linked("lab-1")
      yield* advertise(w1)
      const a = yield* runningOn(w1)
      yield* runningOn(w1)
      const c = yield* submit(GPU, { text: "c" })
      const d = yield* submit(GPU, { text: "d" })
      yield* until("d in line behind c", show(d.id), (v) => v.inLine?.behind === c.id)
      // lab-1 declines a: pending again, its decline standing (lab-1 has not advertised since); its slot is free.
      ok(yield* call(w1.credential, { kind: "decline", fence: w1.fence, attempt: a.id, reason: "not today" }), "ack")
      const declined = yield* until("a decided again", show(a.runId), (v) => v.state === "pending" && v.placement?.outcome === "blocked")
      expect(declined.placement?.explanation).toContain("it declined an earlier attempt of this activity")
      // The slot a freed goes to c, the first in line; d is decided then (waiting), as the first of its kind.
      yield* placedOn(c.id, 1)
      expect((yield* until("d decided", show(d.id), (v) => v.placement !== null)).placement).toMatchObject({ outcome: "waiting" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker that says bye holding an attempt: superseded at once, saying so, the run placed again, and its slot freed (it stopped the attempt before its bye)", () =>
    Effect.gen(function* () {
      const w1 = yield* linked("lab-1", ["gpu=true", "zone=a"])
      const w2 = yield* linked("lab-2", ["gpu=true", "zone=b"])
      yield* advertise(w1)
      yield* advertise(w2)
      const { runId } = yield* runningOn(w1, ["zone=a"])
      ok(yield* call(w1.credential, { kind: "bye", fence: w1.fence }), "ack")
      const after = yield* placedOn(runId, 2)
      // Ceased, not only superseded: the runs audit saw it "superseded; holds a slot" until the worker's next hello, for good when none came.
      expect(attempt(after, 1)).toMatchObject({ host: w1.workerId, state: "ceased", holdsSlot: false, reason: "its worker ended its session cleanly (it said so: its svc serve stopped, or the machine joined again) before the attempt ended" })
      expect(attempt(after, 2)).toMatchObject({ host: w2.workerId, state: "assigned" })
      expect([yield* reserved(w1.workerId), yield* reserved(w2.workerId)]).toEqual([0, 1])
      // Its exclusion says what the owner knows, not that its advertisement lapsed.
      expect(after.placement!.explanation).toContain("worker 'lab-1' (eligibility: its svc serve stopped cleanly (it said so))")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker whose bye says it leaves (svc workers leave): its attempt's reason says so", () =>
    Effect.gen(function* () {
      const w1 = yield* linked("lab-1", ["gpu=true", "zone=a"])
      const w2 = yield* linked("lab-2", ["gpu=true", "zone=b"])
      yield* advertise(w1)
      yield* advertise(w2)
      const { runId } = yield* runningOn(w1, ["zone=a"])
      ok(yield* call(w1.credential, { kind: "bye", fence: w1.fence, leaving: true }), "ack")
      const after = yield* placedOn(runId, 2)
      // Its slot is freed by the leave that follows (which says how many it freed), not by the bye.
      expect(attempt(after, 1)).toMatchObject({ state: "superseded", holdsSlot: true, reason: "its worker left this owner (svc workers leave on its machine, which stopped it first) before the attempt ended" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the late report of the superseded attempt is refused as superseded and changes nothing", () =>
    Effect.gen(function* () {
      const { w1, w2, runId, id } = yield* silentAfterClaim
      yield* TestClock.adjust(100)
      yield* placedOn(runId, 2)
      const before = [yield* head, yield* sequence, JSON.stringify(yield* show(runId))]
      const late = yield* report(w1, id)
      expect(refusal(late)).toBe("superseded")
      expect(Either.isLeft(late) && late.left.message).toBe(
        `attempt ${id} was superseded (its worker's advertisement lapsed (no refresh for 15 s)): its activity was placed again, and this late report is refused`
      )
      expect([yield* head, yield* sequence, JSON.stringify(yield* show(runId))]).toEqual(before)
      // The attempt that counts completes the run.
      const work = ok(yield* claimNow(w2), "work")
      expect(work.attempt).toBe(`${runId}.2`)
      ok(yield* report(w2, work.attempt), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "succeeded", attempts: 2, host: "lab-2" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a heartbeat that lists the superseded attempt is told to stop it; one that no longer lists it frees the slot", () =>
    Effect.gen(function* () {
      const { w1, runId, id } = yield* silentAfterClaim
      yield* TestClock.adjust(100)
      yield* placedOn(runId, 2)
      const dispatcher = yield* Dispatcher
      expect(yield* dispatcher.stopsFor(w1.workerId)).toEqual([id])
      expect(ok(yield* heartbeat(w1, [id]), "ack").stop).toEqual([id])
      expect(yield* reserved(w1.workerId)).toBe(1)
      expect(ok(yield* heartbeat(w1, []), "ack").stop).toEqual([])
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
      expect(yield* reserved(w1.workerId)).toBe(0)
      expect(yield* dispatcher.stopsFor(w1.workerId)).toEqual([])
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("the claim deadline", () => {
  it.effect("an assigned attempt not claimed is still assigned at 29.999 s, superseded and freed at 30 s, and placed again", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const run = yield* submit(GPU)
      yield* placedOn(run.id, 1)
      // The worker keeps advertising (so it does not lapse), but never claims.
      for (let t = 0; t < 25_000; t += 5_000) {
        yield* TestClock.adjust(5_000)
        yield* advertise(w)
      }
      yield* TestClock.adjust(4_999)
      yield* advertise(w)
      yield* quiet
      expect(yield* show(run.id)).toMatchObject({ state: "assigned", attempts: 1 })
      yield* TestClock.adjust(1)
      const again = yield* placedOn(run.id, 2)
      expect(attempt(again, 1)).toMatchObject({ state: "ceased", holdsSlot: false, reason: "its worker did not claim it within 30 s" })
      expect(attempt(again, 2)).toMatchObject({ host: w.workerId, state: "assigned", assignedAt: new Date(30_000).toISOString() })
      expect(yield* reserved(w.workerId)).toBe(1)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the 30 s leave out the owner's own pauses (a suspended owner, its clock stepped forward): no worker could claim then (clock audit)", () =>
    Effect.gen(function* () {
      const freshness = yield* Freshness
      // The owner's beat, every second, as the presence check gives it.
      const beats = (seconds: number, w?: Linked) =>
        Effect.gen(function* () {
          for (let i = 1; i <= seconds; i++) {
            yield* TestClock.adjust("1 second")
            freshness.awake(yield* Clock.currentTimeMillis, true)
            if (w !== undefined && i % 4 === 0) yield* advertise(w)
          }
        })
      freshness.awake(0, true)
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const run = yield* submit(GPU)
      yield* placedOn(run.id, 1)
      yield* beats(20, w)
      // The owner's beat misses 14 s (one jump of its clock), excused but a beat's worth (its
      // rounds at deadlines within the jump may see the gap first, in parts of more than 5 s).
      yield* TestClock.adjust("14 seconds")
      freshness.awake(yield* Clock.currentTimeMillis, true)
      const excused = freshness.deafSince(0)
      expect(excused).toBeGreaterThanOrEqual(4_000)
      yield* advertise(w)
      yield* quiet
      // 34 s since it was assigned, fewer than 30 of them the owner's own: still the worker's to claim.
      expect(yield* show(run.id)).toMatchObject({ state: "assigned", attempts: 1 })
      yield* beats(Math.ceil(excused / 1000), w)
      const again = yield* placedOn(run.id, 2)
      expect(attempt(again, 1)).toMatchObject({ state: "ceased", reason: "its worker did not claim it within 30 s" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("so is one the scheduler placed (no round runs after it: the deadline it hints alone wakes it)", () =>
    Effect.gen(function* () {
      const w1 = yield* linked("lab-1", ["gpu=true", "os=linux", "zone=a"])
      const w2 = yield* linked("lab-2")
      yield* advertise(w1)
      yield* advertise(w2)
      const { runId, id } = yield* runningOn(w1, ["zone=a"])
      // Declined: the run is pending again and the scheduler's round places it on lab-2, which never claims.
      ok(yield* call(w1.credential, { kind: "decline", fence: w1.fence, attempt: id, reason: "not today" }), "ack")
      yield* until("placed on lab-2 by the scheduler", show(runId), (d) => attempt(d, 2)?.state === "assigned")
      for (let t = 0; t < 25_000; t += 5_000) {
        yield* TestClock.adjust(5_000)
        yield* advertise(w1)
        yield* advertise(w2)
      }
      yield* TestClock.adjust(4_999)
      yield* advertise(w1)
      yield* advertise(w2)
      yield* quiet
      expect(attempt(yield* show(runId), 2)).toMatchObject({ host: w2.workerId, state: "assigned" })
      yield* TestClock.adjust(1)
      yield* until("superseded at 30 s", show(runId), (d) => attempt(d, 2)?.state === "ceased")
      expect(attempt(yield* show(runId), 2)).toMatchObject({ state: "ceased", reason: "its worker did not claim it within 30 s" })
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("a report's run time", () => {
  it.effect("a worker's report says how long the job ran: kept on the attempt (its end is when the report arrived), journaled; a report without it as before", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      // The owner hears the report a minute after the job ended (the worker advertising meanwhile).
      for (let i = 0; i < 12; i++) {
        yield* TestClock.adjust("5 seconds")
        yield* advertise(w)
      }
      yield* TestClock.adjust("3 seconds")
      ok(yield* call(w.credential, { kind: "report", fence: w.fence, attempt: id, outcome: { ok: true, result: { text: "hi", length: 2 }, exitCode: 0, durationMs: 3_020 } }), "ack")
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "reported", ranMs: 3_020, endedAt: new Date(63_000).toISOString() })
      const events = yield* Effect.flatMap(Journal, (j) => j.readStream(`run-${runId}`))
      expect(events.map((e) => e.event).find((e) => e._tag === "AttemptReported")).toMatchObject({ ranMs: 3_020 })
      // Without it (an older worker): no ranMs.
      const second = yield* runningOn(w)
      ok(yield* report(w, second.id), "ack")
      expect(attempt(yield* show(second.runId), 1)).not.toHaveProperty("ranMs")
      // Not a run time: the route's schema refuses the body.
      const decode = Schema.decodeUnknownEither(WorkerRequestSchema)
      for (const durationMs of [-5, 1.5, 400 * 86_400_000]) {
        expect(Either.isLeft(decode({ kind: "report", fence: 1, attempt: id, outcome: { ok: true, result: {}, durationMs } }))).toBe(true)
      }
      expect(Either.isRight(decode({ kind: "report", fence: 1, attempt: id, outcome: { ok: true, result: {}, durationMs: 3_020 } }))).toBe(true)
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("an owner's restart", () => {
  /**
   * One journal, two owners over it in turn (`on` builds each): the first linked lab-1, which
   * advertised; the second knows nothing of the first's freshness.
   */
  const restarted = Effect.gen(function* () {
    const journal = yield* makeMemory
    const on = ownerOn(Layer.succeed(Journal, journal))
    const w = yield* Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      return w
    }).pipe(Effect.provide(on))
    return { journal, on, w }
  })

  it.effect("a worker not heard from since the owner started may call back within 15 s: a run it could take is not decided till then; then blocked saying so, and placed on it once it calls", () =>
    Effect.gen(function* () {
      const { on, w } = yield* restarted
      yield* Effect.gen(function* () {
        const run = yield* submit(GPU)
        // Within 15 s of the start it is not decided: the worker may call back (the operator audit
        // saw runs shown blocked, and journaled so, for the seconds workers took to call back).
        expect(run).toMatchObject({ state: "pending", explanation: AWAITING_WORKERS, awaitingWorkers: true })
        expect((yield* show(run.id)).placement).toBeNull()
        yield* TestClock.adjust("14 seconds")
        yield* quiet
        expect(yield* show(run.id)).toMatchObject({ placement: null, explanation: AWAITING_WORKERS })
        // Still silent when the grace ends: blocked, saying so.
        yield* TestClock.adjust("1 second")
        const blocked = yield* until("the grace's round", show(run.id), (d) => d.placement !== null)
        expect(blocked.placement).toMatchObject({ outcome: "blocked" })
        expect(blocked).not.toHaveProperty("awaitingWorkers")
        expect(blocked.placement!.explanation).toContain("worker 'lab-1' (eligibility: no advertisement from it since the owner started)")
        // It calls (a new session, then its advertisement): the run is placed on it.
        const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
        yield* advertise({ ...w, fence: welcome.fence })
        yield* placedOn(run.id, 1)
      }).pipe(Effect.provide(on))
    })
  )

  it.effect("a run left undecided for a worker calling back is placed on it when it does, only that placement journaled; one the owner runs is placed at once", () =>
    Effect.gen(function* () {
      const { journal, on, w } = yield* restarted
      yield* Effect.gen(function* () {
        const run = yield* submit(GPU)
        const echo = yield* submit(ECHO)
        // The owner runs echo (locality): nothing to wait for, though the worker could take it too.
        expect(yield* until("echo placed", show(echo.id), (d) => d.placement !== null)).toMatchObject({ placement: { outcome: "placed", host: "owner" } })
        yield* TestClock.adjust("3 seconds")
        const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
        yield* advertise({ ...w, fence: welcome.fence })
        const placed = yield* placedOn(run.id, 1)
        expect(placed).toMatchObject({ explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label gpu=true)", placement: { outcome: "placed", host: w.workerId } })
        expect((yield* journal.readStream(`run-${run.id}`)).map((e) => e.event._tag)).toEqual(["RunSubmitted", "PlacementDecided"])
      }).pipe(Effect.provide(on))
    })
  )
})

describe("a worker's restart", () => {
  it.effect("a hello listing nothing supersedes its running attempts, frees their slots, and the run is placed again", () =>
    Effect.gen(function* () {
      // Past the owner's own restart grace (within it, a run a worker may soon take is left undecided).
      yield* TestClock.adjust("16 seconds")
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(welcome.stop).toEqual([])
      // Not placed on it by what its previous process advertised: its labels, capacity and bags
      // may have changed with the restart (fleet audit).
      yield* quiet
      const waiting = yield* show(runId)
      expect(waiting).toMatchObject({ state: "pending", attempts: 1 })
      expect(attempt(waiting, 1)).toMatchObject({ state: "ceased", holdsSlot: false, reason: "its worker restarted without it" })
      expect(waiting.explanation).toContain("it started a new session (said hello) and has not advertised in it yet: what it offers now is not known")
      // Its first advertisement, the same as before (nothing new journaled), places it there.
      yield* advertise({ ...w, fence: welcome.fence })
      const again = yield* placedOn(runId, 2)
      expect(attempt(again, 2)).toMatchObject({ host: w.workerId, state: "assigned" })
      const late = yield* call(w.credential, { kind: "report", fence: welcome.fence, attempt: id, outcome: { ok: true, result: { text: "hi", length: 2 } } })
      expect(refusal(late)).toBe("superseded")
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a hello listing its attempt (a network blip) keeps it; an attempt the owner does not know is to be stopped", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [id, "rUnknown.1"] }), "welcome")
      expect(welcome.stop).toEqual(["rUnknown.1"])
      yield* quiet
      expect(yield* show(runId)).toMatchObject({ state: "running", attempts: 1 })
      ok(yield* report({ ...w, fence: welcome.fence }, id), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "succeeded" })
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("a worker's new session and the decisions of waiting runs", () => {
  it.effect("a worker saying hello again (a network break, a takeover) journals no decision for a run it cannot take, when its advertisement says what it said before (attack: two per run, for nothing)", () =>
    Effect.gen(function* () {
      // Past the owner's own restart grace, where decisions are deferred anyway.
      yield* TestClock.adjust("16 seconds")
      const w = yield* linked("lab-1", ["os=linux"])
      yield* advertise(w)
      const run = yield* submit(GPU)
      const decided = yield* until("its decision", show(run.id), (d) => d.placement !== null)
      expect(decided.placement!.explanation).toContain("lacks label gpu=true")
      const decisions = () => commitsOf(run.id).filter((types) => types.includes("PlacementDecided")).length
      const before = decisions()
      const welcome = ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      yield* quiet
      // A round meanwhile (another run submitted) does not decide it for the moment of the hello.
      yield* submit(ECHO)
      yield* quiet
      expect(decisions()).toBe(before)
      yield* advertise({ ...w, fence: welcome.fence })
      yield* quiet
      expect(decisions()).toBe(before)
      expect((yield* show(run.id)).placement!.explanation).toContain("lacks label gpu=true")
    }).pipe(Effect.provide(CountingOwner))
  )
})

describe("workers status on an owner with its bags", () => {
  it.effect("a worker holding the owner's jobs only with other digests, or jobs the owner lacks, needs setup, saying which (it was Ready, 1 of 1 slots free, while every run excluded it)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      const offering = (artifacts: ReadonlyArray<{ address: string; digest: string }>) =>
        call(w.credential, { kind: "advertise", fence: w.fence, capacity: 2, labels: [...w.labels], capabilities: ["node"], artifacts: [...artifacts] }).pipe(Effect.map((r) => ok(r, "ack")))
      const statusOf = Effect.map(Effect.flatMap(Owner, (o) => o.status), (all) => all.find((x) => x.id === w.workerId)!)
      yield* offering([{ address: GPU, digest: "sha256:other" }, { address: "demo:absent@1.0.0", digest: DIGEST }])
      expect(yield* statusOf).toMatchObject({
        state: "Needs setup",
        reason:
          "it holds none of this owner's jobs as installed here (demo:absent@1.0.0 is not installed on this owner, it holds demo:gpu@1.0.0 with another digest): install the same bags on both (svc bag install), so that their digests agree"
      })
      // Only jobs the owner does not hold: Ready (the owner has nothing to run there yet, its own setup).
      yield* offering([{ address: "demo:absent@1.0.0", digest: DIGEST }])
      expect(yield* statusOf).toMatchObject({ state: "Ready" })
      // One of them as the owner holds it: Ready.
      yield* offering([{ address: GPU, digest: "sha256:other" }, { address: ECHO, digest: DIGEST }])
      expect(yield* statusOf).toMatchObject({ state: "Ready" })
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("a claim's answer that never arrived", () => {
  // A long poll, as workers claim: the run placed again by the round the claim asks for wakes it.
  const claimListing = (w: Linked, running: ReadonlyArray<string>, waitSeconds = 5) => call(w.credential, { kind: "claim", fence: w.fence, waitSeconds, running: [...running] })

  it.effect("the worker's next claim, not listing the attempt, has it placed again: that claim is answered with the new attempt", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      // The answer to this claim is lost on its way: the worker never starts the attempt.
      const { runId, id } = yield* runningOn(w)
      expect(yield* reserved(w.workerId)).toBe(1)
      const work = ok(yield* claimListing(w, []), "work")
      expect(work.attempt).toBe(`${runId}.2`)
      const detail = yield* show(runId)
      expect(attempt(detail, 1)).toMatchObject({
        state: "ceased",
        holdsSlot: false,
        reason: "its worker's next claim did not list it: the answer that handed it out never arrived"
      })
      expect(attempt(detail, 2)).toMatchObject({ host: w.workerId, state: "running" })
      expect(yield* reserved(w.workerId)).toBe(1)
      expect(refusal(yield* report(w, id))).toBe("superseded")
      ok(yield* report(w, work.attempt), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "succeeded" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("the same process saying hello again without it (its link started again) has it placed again, said as an answer that never arrived, not a restart", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId } = yield* runningOn(w)
      ok(yield* call(w.credential, { kind: "hello", protocol: 1, running: [], resumes: { fence: w.fence, key: w.sessionKey! } }), "welcome")
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", reason: "its worker said hello again without it, resuming its session: its svc serve restarted (killed, and started again on the same boot), or its link started again and the answer that handed it out never arrived" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a heartbeat listing an attempt whose report is recorded (its answer lost, the report sent again) is not told to stop it", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* report(w, id), "ack")
      expect(ok(yield* heartbeat(w, [id]), "ack").stop).toEqual([])
      ok(yield* report(w, id), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "succeeded", attempts: 1 })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a claim listing the attempt keeps it running; a claim without the list (an older worker) changes nothing", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      const before = yield* head
      expect(ok(yield* claimListing(w, [id], 0), "no-work")).toBeDefined()
      ok(yield* claimNow(w), "no-work")
      yield* quiet
      expect(yield* head).toBe(before)
      expect(yield* show(runId)).toMatchObject({ state: "running", attempts: 1 })
      ok(yield* report(w, id), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "succeeded" })
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- A store that takes no writes --------------------------------------------------------------

describe("a journal or output directory that takes no writes (a full disk)", () => {
  /** While `full`, every append fails as SQLite's full disk makes it fail; reads go on. */
  let full = false
  const FullJournal = Layer.effect(
    Journal,
    Effect.map(makeMemory, (j) =>
      Journal.of({ ...j, append: (c) => (full ? Effect.fail(new JournalError({ reason: "Io", message: "appending to the journal: database or disk is full" })) : j.append(c)) })
    )
  )
  /** While `outputFull`, output files take no writes (as a full disk or a read-only directory). */
  let outputFull = false
  const outputDir = mkdtempSync(join(tmpdir(), "svc-dispatcher-runs-"))
  const filesOn = FileRunFiles.make(outputDir)
  const FullFiles: RunFilesService = {
    ...filesOn,
    append: (attempt, stream, text) =>
      outputFull ? Effect.fail(new OutputNotKept({ message: `its output could not be written to ${filesOn.paths(attempt)[stream]}: ENOSPC: no space left on device, write` })) : filesOn.append(attempt, stream, text)
  }
  const FullOwner = Layer.suspend(() => {
    full = false
    outputFull = false
    return ownerOn(FullJournal, projectionsLayer, Layer.mergeAll(ChildExecutor.layer, Layer.succeed(RunFiles, FullFiles), Layer.succeed(OwnerHost, host)))
  })
  const unavailable = "the owner cannot record this now (appending to the journal: database or disk is full); nothing was changed: call again"

  it.effect("a worker's report is refused as unavailable (503), changing nothing, its output taken back; sent again once the journal takes it, it is recorded once, its output once", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const before = [yield* head, yield* sequence]
      const reporting = { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 }, exitCode: 0 }, output: { attempt: a.id, stdout: "its last line\n", stderr: "", at: { stdout: [0, 14], stderr: [0, 0] } } } as const
      full = true
      const refused = yield* call(w.credential, reporting)
      expect(Either.isLeft(refused) && refused.left).toMatchObject({ code: "unavailable", message: unavailable })
      expect([yield* head, yield* sequence]).toEqual(before)
      expect(yield* show(a.runId)).toMatchObject({ state: "running", output: { stdout: "" } })
      // So is any call that would be journaled: a hello's new session.
      expect(yield* call(w.credential, { kind: "hello", protocol: 1, running: [a.id] })).toMatchObject(Either.left({ code: "unavailable", message: unavailable }))
      expect([yield* head, yield* sequence]).toEqual(before)
      full = false
      ok(yield* call(w.credential, reporting), "ack")
      expect(yield* show(a.runId)).toMatchObject({ state: "succeeded", output: { stdout: "its last line\n" } })
    }).pipe(Effect.provide(FullOwner))
  )

  it.effect("a report refused while neither the journal nor the output files take writes succeeds when sent again once they do (attack audit: it was failed for the output it could not write then)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const a = yield* runningOn(w)
      const reporting = { kind: "report", fence: w.fence, attempt: a.id, outcome: { ok: true, result: { text: "hi", length: 2 }, exitCode: 0 }, output: { attempt: a.id, stdout: "done\n", stderr: "", at: { stdout: [0, 5], stderr: [0, 0] } } } as const
      full = true
      outputFull = true
      expect(yield* call(w.credential, reporting)).toMatchObject(Either.left({ code: "unavailable" }))
      full = false
      outputFull = false
      ok(yield* call(w.credential, reporting), "ack")
      expect(yield* show(a.runId)).toMatchObject({ state: "succeeded", error: null, output: { stdout: "done\n" } })
    }).pipe(Effect.provide(FullOwner))
  )

  it.effect("the outcome of a run on the owner is recorded once the journal takes it, tried again every 5 s: the run is not left running", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      yield* Effect.gen(function* () {
        const submitted = yield* submit(ECHO, { text: "later" })
        full = true
        // The job ends and its outcome cannot be recorded: the run still runs, its slot held.
        yield* until("a try to record it", Effect.sync(() => logs), (l) => l.some((x) => x.startsWith("ERROR")))
        expect(logs.filter((l) => l.includes("could not be recorded"))).toEqual([
          `ERROR the outcome of attempt ${submitted.id}.1 could not be recorded: appending to the journal: database or disk is full; svc tries again every 5 s`
        ])
        expect(yield* show(submitted.id)).toMatchObject({ state: "running" })
        yield* TestClock.adjust("5 seconds")
        expect(yield* show(submitted.id)).toMatchObject({ state: "running" })
        full = false
        yield* TestClock.adjust("5 seconds")
        const done = yield* (yield* Dispatcher).wait(submitted.id, 60_000)
        expect(done).toMatchObject({ state: "succeeded", attempts: 1, result: { text: "later", length: 5 } })
        expect(logs.filter((l) => l.startsWith("INFO the outcome"))).toEqual([`INFO the outcome of attempt ${submitted.id}.1 is recorded (after 3 tries)`])
        expect(yield* reserved("owner")).toBe(0)
      }).pipe(Effect.provide(FullOwner), Effect.provide(capturingLogs(logs)))
    })
  )

  it.effect("output the owner cannot write fails the attempt when it reports, saying where and why; the worker's calls are answered meanwhile", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      yield* Effect.gen(function* () {
        const w = yield* linked("lab-1")
        yield* advertise(w)
        const a = yield* runningOn(w)
        ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout: "kept\n", stderr: "" }] }), "ack")
        outputFull = true
        ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout: "lost\n", stderr: "" }] }), "ack")
        outputFull = false
        // Nothing more of it is kept: the file would have a gap.
        ok(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [a.id], output: [{ attempt: a.id, stdout: "after\n", stderr: "" }] }), "ack")
        ok(yield* report(w, a.id), "ack")
        const lost = `its output could not be written to ${join(outputDir, `${a.id}.stdout`)}: ENOSPC: no space left on device, write`
        expect(yield* show(a.runId)).toMatchObject({ state: "failed", result: null, error: lost, output: { stdout: "kept\n" } })
        expect(logs.filter((l) => l.startsWith("ERROR"))).toEqual([`ERROR attempt ${a.id} on lab-1: ${lost}; the rest of its output is not kept, and it fails when it reports`])
      }).pipe(Effect.provide(FullOwner), Effect.provide(capturingLogs(logs)))
    })
  )
})

// ---- Stop ---------------------------------------------------------------------------------------

describe("stop", () => {
  it.effect("a worker that declined is offered the run again once it is heard advertising after the decline, a refresh of the same content too (runs audit and its attack: blocked for good)", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* call(w.credential, { kind: "decline", fence: w.fence, attempt: id, reason: "bag demo is not installed here" }), "ack")
      // Not heard since: the decline stands.
      yield* quiet
      const blocked = yield* show(runId)
      expect(blocked).toMatchObject({ state: "pending", attempts: 1, placement: { outcome: "blocked" } })
      expect(blocked.placement!.explanation).toContain("it declined an earlier attempt of this activity, and has not advertised since (or declined it 3 times)")
      // A second later it refreshes the same advertisement (its bag removed and installed again in between, nothing journaled): placed there again.
      yield* TestClock.adjust(1_000)
      yield* advertise(w)
      const again = yield* placedOn(runId, 2)
      expect(attempt(again, 2)).toMatchObject({ host: w.workerId, state: "assigned" })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a worker that declines the same run 3 times is not offered it again, and the owner's log says so once, with the way out (the attack: the explanation cannot tell)", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const capture = capturingLogs(logs)
      yield* Effect.gen(function* () {
        const w = yield* linked("lab-1")
        yield* advertise(w)
        const { runId, id } = yield* runningOn(w)
        ok(yield* call(w.credential, { kind: "decline", fence: w.fence, attempt: id, reason: "no" }), "ack")
        for (const n of [2, 3]) {
          yield* TestClock.adjust(1_000)
          yield* advertise(w)
          yield* placedOn(runId, n)
          const work = ok(yield* claimNow(w), "work")
          ok(yield* call(w.credential, { kind: "decline", fence: w.fence, attempt: work.attempt, reason: "no" }), "ack")
          // Said again (its answer lost): recorded once, said once.
          ok(yield* call(w.credential, { kind: "decline", fence: w.fence, attempt: work.attempt, reason: "no" }), "ack")
        }
        yield* TestClock.adjust(1_000)
        yield* advertise(w)
        yield* quiet
        expect(yield* show(runId)).toMatchObject({ state: "pending", attempts: 3, placement: { outcome: "blocked" } })
        expect(logs.filter((l) => l.includes("declined run"))).toEqual([
          `WARN worker lab-1 (${w.workerId}) declined run ${runId} 3 times (the last: no): it is not offered that run again; another host may take it, or svc runs stop ${runId} ends it`
        ])
      }).pipe(Effect.provide(TestOwner), Effect.provide(capture))
    })
  )

  it.effect("a run stopped after its only worker declined it is on no host: it never ran there (it said 'stopped on lab-1')", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      ok(yield* call(w.credential, { kind: "decline", fence: w.fence, attempt: id, reason: "not today" }), "ack")
      expect(yield* show(runId)).toMatchObject({ state: "pending", host: null })
      expect(yield* dispatcher.stop(runId, "operator")).toMatchObject({ state: "stopped", host: null, hostId: null, error: "stopped by the operator" })
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "declined", host: w.workerId })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a run stopped while running on a worker is in stopsFor and in the heartbeat's stop list; its slot is freed when the worker no longer lists it", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      expect(yield* dispatcher.stop(runId, "operator")).toMatchObject({ state: "stopped", error: "stopped by the operator" })
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "stopping", holdsSlot: true })
      expect(yield* dispatcher.stopsFor(w.workerId)).toEqual([id])
      expect(ok(yield* heartbeat(w, [id]), "ack").stop).toEqual([id])
      expect((yield* advertise(w)).stop).toEqual([id])
      expect(yield* reserved(w.workerId)).toBe(1)
      expect(ok(yield* heartbeat(w, []), "ack").stop).toEqual([])
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
      expect(yield* reserved(w.workerId)).toBe(0)
      expect(yield* dispatcher.stopsFor(w.workerId)).toEqual([])
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a run stopped while assigned (never claimed) frees the worker's slot at once: there is nothing for it to stop or claim", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const run = yield* submit(GPU)
      yield* placedOn(run.id, 1)
      expect(yield* reserved(w.workerId)).toBe(1)
      yield* dispatcher.stop(run.id, "operator")
      expect(attempt(yield* show(run.id), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
      const journaled = (yield* Effect.flatMap(Journal, (j) => j.read(0, 100))).map((e) => e.event)
      expect(journaled.at(-1)).toMatchObject({ _tag: "AttemptCeased", runId: run.id, attempt: 1, host: w.workerId, reason: "stopped before it was claimed" })
      expect(yield* reserved(w.workerId)).toBe(0)
      expect(yield* dispatcher.stopsFor(w.workerId)).toEqual([])
      ok(yield* claimNow(w), "no-work")
      expect(Either.isLeft(yield* Effect.either(dispatcher.stop(run.id, "operator")))).toBe(true)
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- Candidates ---------------------------------------------------------------------------------

describe("candidates", () => {
  const candidatesOf = (runId: string) =>
    Effect.gen(function* () {
      const decided = yield* Effect.flatMap(Journal, (j) => j.readStream(`run-${runId}`))
      const placement = decided.map((e) => e.event).find((e) => e._tag === "PlacementDecided")
      return placement?._tag === "PlacementDecided" ? placement.verdicts.map((v) => [v.candidate, v.exclusions[0]?.code ?? "eligible"]) : []
    })

  it.effect("a revoked identity is one, excluded as revoked, for a day after its revocation, and then no longer unless it still holds a slot", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const lab1 = yield* linked("lab-1")
      const idle = yield* linked("lab-2")
      const holding = yield* linked("lab-3")
      yield* advertise(holding)
      // lab-3 runs a job when it is revoked: its slot stays reserved until it is seen stopped.
      yield* runningOn(holding)
      yield* owner.revoke(idle.workerId, "operator")
      yield* owner.revoke(holding.workerId, "operator")
      yield* advertise(lab1)
      const first = yield* submit(GPU)
      yield* until("placed", show(first.id), (d) => d.placement !== null)
      expect(yield* candidatesOf(first.id)).toEqual(
        [
          ["owner", "missing-label"],
          [lab1.workerId, "eligible"],
          [idle.workerId, "revoked"],
          [holding.workerId, "revoked"]
        ].sort((a, b) => (a[0] === "owner" ? -1 : b[0] === "owner" ? 1 : a[0]! < b[0]! ? -1 : 1))
      )
      expect(yield* reserved(holding.workerId)).toBe(1)
      yield* TestClock.adjust("24 hours")
      yield* advertise(lab1)
      const later = yield* submit(GPU)
      yield* until("placed", show(later.id), (d) => d.placement !== null)
      // The idle one is gone from the decision; the one still holding a slot is kept, as workers status shows it.
      expect((yield* candidatesOf(later.id)).map(([id]) => id)).toEqual(["owner", ...[lab1.workerId, holding.workerId].sort()])
      expect(yield* reserved(holding.workerId)).toBe(1)
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- Scope --------------------------------------------------------------------------------------

describe("scope", () => {
  it.effect("a worker whose scope excludes a job is never offered it: placement excludes it as out-of-scope", () =>
    Effect.gen(function* () {
      const w = yield* linked("lab-1", ["gpu=true"], [ECHO])
      yield* advertise(w)
      const run = yield* submit(GPU)
      const blocked = yield* until("a placement", show(run.id), (d) => d.placement !== null)
      expect(blocked.placement).toMatchObject({ outcome: "blocked", host: null })
      const recorded = blocked.placement!.record
      expect(recorded.executionHost).toBeNull()
      const decided = yield* Effect.flatMap(Journal, (j) => j.read(0, 100))
      const placement = decided.map((e) => e.event).find((e) => e._tag === "PlacementDecided")!
      expect(placement._tag === "PlacementDecided" && placement.verdicts.map((v) => [v.candidate, v.exclusions.map((x) => x.code)])).toEqual([
        ["owner", ["missing-label"]],
        [w.workerId, ["out-of-scope"]]
      ])
      ok(yield* claimNow(w), "no-work")
      expect(yield* reserved(w.workerId)).toBe(0)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a claim, heartbeat or report naming an attempt of a job outside the worker's scope is refused", () =>
    Effect.gen(function* () {
      const projections = yield* Projections
      const w = yield* linked("lab-1", ["gpu=true"], [ECHO])
      yield* advertise(w)
      const run = yield* submit(GPU)
      yield* until("a placement", show(run.id), (d) => d.placement !== null)
      // Constructed: an attempt of the gpu job on this worker, as if placed by an owner that
      // did not know its scope (placement never does this: the test above).
      const unscoped: Candidate = {
        id: w.workerId,
        name: "lab-1",
        isOwner: false,
        revoked: false,
        advertisementAlive: true,
        scope: [],
        labels: ["gpu=true"],
        capabilities: ["node"],
        bins: [],
        artifacts: [{ address: GPU, digest: DIGEST }],
        slots: { capacity: 2, used: 0 }
      }
      yield* projections.executeOn((s) => RunDecide.decidePlacement({ runId: run.id, candidates: [unscoped], quotas: { logical: null, endpoint: null }, notes: [], now: 0 }, s.runs))
      const id = `${run.id}.1`
      const before = yield* head
      expect(refusal(yield* claimNow(w))).toBe("out-of-scope")
      expect(refusal(yield* report(w, id))).toBe("out-of-scope")
      expect(refusal(yield* heartbeat(w, [id]))).toBe("out-of-scope")
      // Running (claimed under the same pretence): still refused.
      yield* projections.executeOn((s) => RunDecide.decideClaim({ workerId: w.workerId, scope: [], fence: w.fence, runId: run.id, attempt: 1, now: 0 }, s.runs))
      const running = yield* head
      expect(refusal(yield* heartbeat(w, [id]))).toBe("out-of-scope")
      const refused = yield* report(w, id)
      expect(refusal(refused)).toBe("out-of-scope")
      expect(Either.isLeft(refused) && refused.left.message).toBe(`${GPU} is outside this worker's scope`)
      expect(before + 1).toBe(running)
      expect(yield* head).toBe(running)
      expect(yield* show(run.id)).toMatchObject({ state: "running" })
    }).pipe(Effect.provide(TestOwner))
  )
})

describe("what an invite's scope is checked against", () => {
  it.effect("a job no worker would run: not installed here, or only the owner runs it", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      expect(yield* dispatcher.jobProblem(GPU)).toBeUndefined()
      expect(yield* dispatcher.jobProblem(LOCAL)).toBe("owner only: it uses the owner's agent runtime")
      expect(yield* dispatcher.jobProblem("demo:nope@1.0.0")).toBe("no installed bag holds demo:nope@1.0.0")
    }).pipe(Effect.provide(TestOwner))
  )
})

// ---- Revocation ---------------------------------------------------------------------------------

describe("revocation", () => {
  it.effect("the next round supersedes the revoked worker's attempts; their slots stay reserved until release", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId, id } = yield* runningOn(w)
      yield* owner.revoke("lab-1", "operator")
      // Revoking does not itself wake the scheduler: its next round comes with the next change
      // or deadline (at the latest when the advertisement would lapse). Here, a change.
      yield* dispatcher.kick
      const superseded = yield* until("superseded", show(runId), (d) => attempt(d, 1)?.state === "superseded")
      expect(attempt(superseded, 1)).toMatchObject({ reason: "its worker was revoked", holdsSlot: true })
      const replaced = yield* until("placed again", show(runId), (d) => d.placement?.outcome === "blocked")
      expect(replaced).toMatchObject({ state: "pending", host: null, attempts: 1, placement: { outcome: "blocked" } })
      expect(replaced.placement!.explanation).toBe("blocked; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-1' (eligibility: revoked)")
      expect(yield* reserved(w.workerId)).toBe(1)
      // Where the held slot shows, the way to free it is said.
      expect((yield* owner.status).find((s) => s.id === w.workerId)).toMatchObject({
        used: 1,
        reason: `revoked by operator: its calls are refused; its 1 held slot stays held until its machine joins again, or svc workers release ${w.workerId} frees it once its jobs are known to have stopped`
      })
      expect(yield* dispatcher.stopsFor(w.workerId)).toEqual([id])
      expect(yield* dispatcher.release(w.workerId, "operator")).toBe(1)
      expect((yield* owner.status).find((s) => s.id === w.workerId)).toMatchObject({ used: 0, reason: "revoked by operator: its calls are refused" })
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false, reason: "its worker was revoked" })
      expect(yield* reserved(w.workerId)).toBe(0)
      expect(yield* dispatcher.release(w.workerId, "operator")).toBe(0)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a revoked worker that joins again with its old credential: the new identity's hello frees the old one's slots", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId } = yield* runningOn(w)
      yield* owner.revoke("lab-1", "operator")
      yield* dispatcher.kick
      yield* until("superseded", show(runId), (d) => attempt(d, 1)?.state === "superseded")
      expect(yield* reserved(w.workerId)).toBe(1)

      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab-1b", actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "lab-1b", previousCredential: w.credential }), "joined")
      expect(joined.replaces).toBe(w.workerId)
      // The join alone proves nothing has stopped: the slot is still held until the new identity says hello.
      expect(yield* reserved(w.workerId)).toBe(1)
      ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(yield* reserved(w.workerId)).toBe(0)
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
      const audit = [...(yield* Effect.flatMap(Projections, (p) => p.state)).audit]
      expect(audit.find((r) => r.kind === "join" && r.workerId === joined.workerId)?.detail).toMatch(new RegExp(`replacing worker ${w.workerId}$`))
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("an installation that joins again with its old identity still linked: the new identity's hello revokes the old one", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: null, actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "lab-1b", previousCredential: w.credential }), "joined")
      expect(joined.replaces).toBe(w.workerId)
      // Until the new identity says hello, the old one is as it was.
      expect((yield* owner.status).find((s) => s.id === w.workerId)).toMatchObject({ revoked: false })
      ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect((yield* owner.status).find((s) => s.id === w.workerId)).toMatchObject({ revoked: true })
      const audit = [...(yield* Effect.flatMap(Projections, (p) => p.state)).audit]
      expect(audit.at(-1)).toMatchObject({ kind: "revocation", workerId: w.workerId, actor: `worker ${joined.workerId} (its installation joined again)` })
      expect(refusal(yield* call(w.credential, { kind: "heartbeat", fence: w.fence, running: [] }))).toBe("revoked")
      // A second hello changes nothing more.
      ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect([...(yield* Effect.flatMap(Projections, (p) => p.state)).audit].filter((r) => r.kind === "revocation")).toHaveLength(1)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("a join presenting a credential the owner never issued links nothing and frees nothing", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const w = yield* linked("lab-1")
      yield* advertise(w)
      yield* runningOn(w)
      yield* owner.revoke("lab-1", "operator")
      const { token } = yield* owner.invite({ scope: [], expiresInMs: null, name: "other", actor: "operator" })
      const joined = ok(yield* call(token, { kind: "join", name: "other", previousCredential: `svc_wk_${"x".repeat(40)}` }), "joined")
      expect(joined.replaces).toBeNull()
      ok(yield* call(joined.credential, { kind: "hello", protocol: 1, running: [] }), "welcome")
      expect(yield* reserved(w.workerId)).toBe(1)
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("release refuses a worker still advertising (it may be running what it holds) unless forced", () =>
    Effect.gen(function* () {
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const { runId } = yield* runningOn(w)
      const refused = yield* Effect.flip(dispatcher.release(w.workerId, "operator"))
      expect(refused).toMatchObject({ code: "worker-alive" })
      expect(refused.message).toMatch(/^worker lab-1 is still advertising \(it last called \d+ s ago\), so it may still be running what it holds: stop or revoke it first, or pass --force if you know it runs nothing$/)
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "running", holdsSlot: true })
      expect(yield* dispatcher.release(w.workerId, "operator", true)).toBe(1)
      expect(attempt(yield* show(runId), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
    }).pipe(Effect.provide(TestOwner))
  )

  it.effect("release before any round counts every slot it frees, an unclaimed attempt's too", () =>
    Effect.gen(function* () {
      const owner = yield* Owner
      const dispatcher = yield* Dispatcher
      const w = yield* linked("lab-1")
      yield* advertise(w)
      const first = yield* runningOn(w)
      const second = yield* submit(GPU, { text: "second" })
      yield* placedOn(second.id, 1)
      yield* owner.revoke("lab-1", "operator")
      expect(yield* reserved(w.workerId)).toBe(2)
      expect(yield* dispatcher.release(w.workerId, "operator")).toBe(2)
      expect(yield* reserved(w.workerId)).toBe(0)
      expect(attempt(yield* show(first.runId), 1)).toMatchObject({ state: "ceased", reason: "the operator confirmed its worker stopped" })
      expect(attempt(yield* show(second.id), 1)).toMatchObject({ state: "ceased", holdsSlot: false })
    }).pipe(Effect.provide(TestOwner))
  )
})
