/**
 * bench/journal-replay: events per second and peak memory when rebuilding every projection
 * from a journal of 1,000,000 events, beside raw better-sqlite3 iteration + JSON.parse over the
 * same table, in the same run.
 *
 *   npx vite-node bench/journal-replay.ts [--events 1000000] [--workers 20000] [--rounds 3] [--seed 1]
 *   npx vite-node bench/journal-replay.ts --corpus runs [--events 1000000] [--fleet 100]
 *
 * Corpus: a journal file made by the real migrations and filled directly with better-sqlite3
 * (rows from `payloadOf`, as the adapter writes them); generated once from a seeded PRNG and
 * kept in bench/.tmp/ (git-ignored), so later runs skip it. Generation is not measured.
 * `--corpus runs`: instead of the worker protocol's events, runs as an owner journals them, made
 * by the real pure deciders: for each job RunSubmitted + PlacementDecided over `--fleet` workers
 * and the owner (packed, as stored), AttemptStarted (the claim), AttemptReported (2% failed):
 * what startup folds on an owner that has run many jobs, and where retention (docs/runs.md,
 * "Runs kept in memory") bounds the memory the fold ends with. The phase split is not run there.
 * Baseline ("raw"): `prepare(SELECT ... ORDER BY sequence).iterate()` + `JSON.parse(payload)`
 * per row.
 * Measured ("fold"): `foldJournal` (src/app/journal/Replay.ts) over the SQLite adapter
 * (`SqliteJournal.layer`): `Journal.read` pages of `PAGE` rows, upcast, Schema decode, and the
 * pure `evolve` of registry, audit log and capacity ledger.
 * Each measurement runs in a fresh child process (this script with --child), so its peak
 * memory is its own: peak RSS is the process's maxRSS; heap is sampled every 10,000 events.
 * Rounds alternate which goes first; rates are medians over rounds.
 * Target: fold >= 0.5 x raw. Afterwards one pass is split into phases to show where time goes.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { Journal } from "../src/app/journal/Journal.js"
import { Checkpoints } from "../src/app/journal/Checkpoints.js"
import { foldJournal, PAGE, snapshotOf } from "../src/app/journal/Replay.js"
import { startState } from "../src/app/journal/StartSnapshot.js"
import {
  CredentialRotated,
  CredentialRotationRequested,
  CURRENT_VERSION,
  Event,
  SessionStarted,
  WorkerAdvertised,
  WorkerInvited,
  WorkerJoined,
  WorkerRevoked,
  inviteStream,
  workerStream,
  type Envelope,
  type EventType,
  type PlacementDecided,
  type RunJob
} from "../src/domain/journal/Events.js"
import { evolve, initialState } from "../src/domain/journal/OwnerState.js"
import type { Candidate } from "../src/domain/placement/Placement.js"
import { decideClaim, decideReport, decideSubmitAndPlace, type RunDecision, type RunRejection } from "../src/domain/runs/Decide.js"
import { evolveRuns, initialRuns } from "../src/domain/runs/Runs.js"
import { upcast } from "../src/domain/journal/Upcasting.js"
import * as NodeHashing from "../src/infra/journal/NodeHashing.js"
import type { StoredRow } from "../src/infra/journal/EventRows.js"
import { layer, payloadOf } from "../src/infra/journal/SqliteJournal.js"
import { layerStore } from "../src/infra/journal/SqliteStore.js"
import { prng } from "./prng.js"
import { Database, arg, fmt, median, printMachine } from "./support.js"

const EVENTS = arg("events", 1_000_000)
const WORKERS = arg("workers", 20_000)
const CORPUS = process.argv.includes("--corpus") ? process.argv[process.argv.indexOf("--corpus") + 1] : "workers"
if (CORPUS !== "workers" && CORPUS !== "runs") throw new Error(`--corpus is workers or runs, not ${CORPUS}`)
const FLEET = arg("fleet", 100)
const ROUNDS = arg("rounds", 3)
const SEED = arg("seed", 1)
const TARGET = 0.5
const SAMPLE_EVERY = 10_000

const here = dirname(fileURLToPath(import.meta.url))
/** Raised when the generator changes what it writes, so that a corpus kept from before is made again (2: joins carry a join key's hash). */
const GENERATION = 2
const corpusFile = join(
  here,
  ".tmp",
  CORPUS === "runs" ? `journal-replay-runs-${EVENTS}-${FLEET}-${SEED}-g${GENERATION}.sqlite` : `journal-replay-${EVENTS}-${WORKERS}-${SEED}-g${GENERATION}.sqlite`
)

const SELECT_ALL = "SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at FROM events ORDER BY sequence"

// ---------------------------------------------------------------------------------------------
// Corpus


const hex = (n: number, salt: number) => (n.toString(16) + salt.toString(16).padStart(8, "0")).padStart(64, "0").slice(-64)

interface Worker {
  readonly id: string
  version: number
  fence: number
  credential: number
  rotationPending: boolean
}

/**
 * A new corpus file made by the real migrations, filled directly with better-sqlite3 (no fsync)
 * in transactions of `batchRows` rows; counts the events written by type.
 */
const corpusWriter = async (file: string, batchRows: number) => {
  await Effect.runPromise(Effect.scoped(Effect.provide(Effect.void, layerStore(file))))
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = OFF")
  const insert = db.prepare(
    "INSERT INTO events (sequence, stream, stream_version, type, schema_version, payload, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
  )
  type Row = readonly [number, string, number, string, number, string, number]
  let batch: Array<Row> = []
  const flush = db.transaction((rows: ReadonlyArray<Row>) => {
    for (const r of rows) insert.run(...r)
  })
  const types: Record<string, number> = {}
  return {
    types,
    write: (row: Row) => {
      types[row[3]] = (types[row[3]] ?? 0) + 1
      batch.push(row)
      if (batch.length >= batchRows) {
        flush(batch)
        batch = []
      }
    },
    close: () => {
      flush(batch)
      db.pragma("wal_checkpoint(TRUNCATE)")
      db.close()
    }
  }
}

/** Writes EVENTS events: invites and joins of WORKERS workers, then their sessions, advertisements, rotations and revocations, interleaved. */
const generate = async (file: string): Promise<{ readonly types: Record<string, number>; readonly v1: number }> => {
  const corpus = await corpusWriter(file, 50_000)
  const rnd = prng(SEED)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rnd() * xs.length)]!
  let v1 = 0
  let sequence = 0
  let now = 1_750_000_000_000
  const write = (stream: string, streamVersion: number, event: Event, stored?: { readonly version: number; readonly payload: string }) => {
    now += 1 + Math.floor(rnd() * 2_000)
    corpus.write([++sequence, stream, streamVersion, event._tag, stored?.version ?? CURRENT_VERSION[event._tag], stored?.payload ?? payloadOf(event), now])
  }
  const LABELS = ["os=linux", "os=darwin", "arch=x64", "arch=arm64", "gpu=true", "gpu=false", "zone=eu", "zone=us", "tier=batch", "tier=interactive"]
  const CAPABILITIES = ["node", "process", "action", "docker", "python"]
  const BAGS = ["reports", "backup", "crawler", "mail", "index", "thumbs"]
  const JOBS = ["nightly", "hourly", "sync", "render", "digest"]
  const active: Array<Worker> = []
  let invited = 0
  const pendingJoins: Array<{ readonly inviteId: string; readonly due: number }> = []

  while (sequence < EVENTS) {
    const due = pendingJoins[0]
    if (due !== undefined && due.due <= sequence) {
      // Redeem an invite: WorkerJoined on the invite's stream.
      pendingJoins.shift()
      const n = active.length
      const worker: Worker = { id: `w${n}-${due.inviteId}`, version: 0, fence: 0, credential: 0, rotationPending: false }
      const scope = rnd() < 0.3 ? [`${pick(BAGS)}:${pick(JOBS)}@${1 + Math.floor(rnd() * 5)}`] : []
      write(inviteStream(due.inviteId), 2, new WorkerJoined({ workerId: worker.id, inviteId: due.inviteId, name: `box-${n}`, credentialHash: hex(n, 1), scope, replaces: null, joinKeyHash: hex(n, 3), at: now }))
      active.push(worker)
      continue
    }
    // New invites arrive steadily until every worker is invited.
    if (invited < WORKERS && (active.length === 0 || rnd() < (WORKERS - invited) / Math.max(1, (EVENTS - sequence) / 2))) {
      const inviteId = `i${invited++}`
      const scope = rnd() < 0.3 ? [`${pick(BAGS)}:${pick(JOBS)}@${1 + Math.floor(rnd() * 5)}`] : []
      const expiresAt = scope.length > 0 || rnd() < 0.5 ? now + 86_400_000 : null
      write(inviteStream(inviteId), 1, new WorkerInvited({ inviteId, tokenHash: hex(invited, 2), name: rnd() < 0.5 ? `box-${invited}` : null, scope, expiresAt, actor: "operator", at: now }))
      // Most invites are redeemed a little later; a few never are.
      if (rnd() < 0.97) pendingJoins.push({ inviteId, due: sequence + 1 + Math.floor(rnd() * 50) })
      continue
    }
    if (active.length === 0) continue
    const index = Math.floor(rnd() * active.length)
    const w = active[index]!
    const stream = workerStream(w.id)
    const r = rnd()
    if (w.rotationPending) {
      w.rotationPending = false
      w.credential++
      write(stream, ++w.version, new CredentialRotated({ workerId: w.id, credentialHash: hex(index, w.credential + 10), previousHash: hex(index, w.credential + 9), previousValidUntil: now + 300_000, at: now }))
    } else if (r < 0.42) {
      w.fence++
      write(stream, ++w.version, new SessionStarted({ workerId: w.id, fence: w.fence, takeover: rnd() < 0.03, at: now }))
    } else if (r < 0.94) {
      const labels = LABELS.filter(() => rnd() < 0.3).sort()
      const artifacts = Array.from({ length: Math.floor(rnd() * 5) }, (_, a) => ({ address: `${pick(BAGS)}:${pick(JOBS)}@${1 + a}`, digest: `sha256:${hex(a, index)}` }))
      const event = new WorkerAdvertised({ workerId: w.id, capacity: 1 + Math.floor(rnd() * 16), labels, capabilities: CAPABILITIES.filter(() => rnd() < 0.5), artifacts, at: now })
      if (rnd() < 0.1) {
        // An older advertisement, stored at schema version 1 (labels as a map): read through the upcaster.
        const { labels: asList, ...rest } = JSON.parse(payloadOf(event)) as { labels: ReadonlyArray<string> } & Record<string, unknown>
        const payload = JSON.stringify({ ...rest, labels: Object.fromEntries(asList.map((l) => l.split("="))) })
        // Labels that share a key collapse in the map; store what version 2 reads back.
        v1++
        write(stream, ++w.version, event, { version: 1, payload })
      } else write(stream, ++w.version, event)
    } else if (r < 0.995) {
      w.rotationPending = true
      write(stream, ++w.version, new CredentialRotationRequested({ workerId: w.id, actor: "operator", at: now }))
    } else {
      write(stream, ++w.version, new WorkerRevoked({ workerId: w.id, actor: "operator", at: now }))
      active.splice(index, 1)
    }
  }
  corpus.close()
  return { types: corpus.types, v1 }
}

/** Writes about EVENTS events of runs (4 per job), each job decided by the real deciders over a fleet of FLEET workers. */
const generateRuns = async (file: string): Promise<{ readonly types: Record<string, number>; readonly v1: number }> => {
  const corpus = await corpusWriter(file, 20_000)
  const rnd = prng(SEED)
  const job: RunJob = {
    address: "bench:noop@1.0.0",
    bag: "bench",
    job: "noop",
    digest: `sha256:${"b".repeat(64)}`,
    executor: "node",
    remoteEligible: true,
    ownerOnly: [],
    requiredLabels: ["pool=bench"],
    requiredBins: [],
    bounds: [],
    timeoutMs: null
  }
  // The owner lacks pool=bench: every job goes to a worker, as in bench/dispatch.
  const owner: Candidate = { id: "owner", name: "owner", isOwner: true, revoked: false, advertisementAlive: true, scope: [], labels: ["arch=x64", "os=linux"], capabilities: ["node", "process"], bins: [], artifacts: [], slots: { capacity: 4, used: 0 } }
  const fleet: Array<Candidate> = Array.from({ length: FLEET }, (_, i) => ({
    id: `w${i.toString(36).padStart(10, "0")}`,
    name: `box-${i}`,
    isOwner: false,
    revoked: false,
    advertisementAlive: true,
    scope: [],
    labels: ["arch=x64", "os=linux", "pool=bench", `zone=z${i % 4}`],
    capabilities: ["node"],
    bins: [],
    artifacts: [{ address: job.address, digest: job.digest }],
    slots: { capacity: 4, used: 0 }
  }))
  const NOTES = ["logical quota: none applies (the limits count detached agents; a job run is not one)", "inference endpoint: none (a job run uses no model), so no endpoint capacity and no model were selected"]
  let runs = initialRuns
  let sequence = 0
  let now = 1_750_000_000_000
  /** Appends a decision as the journal would: against its stream's version, numbered in sequence. */
  const append = (d: RunDecision | RunRejection) => {
    if (d._tag === "Rejected") throw new Error(`the corpus's decision was refused: ${d.code}: ${d.message}`)
    d.events.forEach((event, i) => {
      const envelope: Envelope = { sequence: ++sequence, stream: d.stream, streamVersion: d.expectedVersion + i + 1, type: event._tag, schemaVersion: CURRENT_VERSION[event._tag], recordedAt: now, event }
      runs = evolveRuns(runs, envelope)
      corpus.write([envelope.sequence, envelope.stream, envelope.streamVersion, envelope.type, envelope.schemaVersion, payloadOf(event), now])
    })
    return d.events
  }
  for (let n = 0; sequence < EVENTS; n++) {
    now += 1 + Math.floor(rnd() * 20)
    const runId = `r${n.toString(36).padStart(10, "0")}`
    // Each host's slots as a busy fleet shows them: some in use.
    const candidates = [owner, ...fleet.map((c) => ({ ...c, slots: { capacity: 4, used: Math.floor(rnd() * 4) } }))]
    const placed = append(
      decideSubmitAndPlace({ runId, job, input: { t: now, n }, preferredLabels: [], actor: "bench", now, candidates, quotas: { logical: null, endpoint: null }, notes: NOTES }, runs)
    ).find((e): e is PlacementDecided => e._tag === "PlacementDecided")
    const host = placed?.host
    if (host === undefined || host === null) throw new Error(`run ${runId} was not placed`)
    append(decideClaim({ workerId: host, scope: [], fence: 1, runId, attempt: 1, now }, runs))
    const ok = rnd() >= 0.02
    append(decideReport({ host, scope: [], runId, attempt: 1, ok, result: ok ? {} : null, error: ok ? null : "exit 1", exitCode: ok ? 0 : 1, now }, runs))
  }
  corpus.close()
  return { types: corpus.types, v1: 0 }
}

// ---------------------------------------------------------------------------------------------
// The two workloads, each run in a child process

interface Measurement {
  readonly events: number
  readonly ms: number
  readonly peakRssMb: number
  readonly peakHeapMb: number
  readonly baseHeapMb: number
  readonly workers: number
  readonly audit: number
  readonly runsKept: number
  readonly runsForgotten: number
}

const mb = (bytes: number) => bytes / 1024 / 1024

const heapSampler = () => {
  const base = process.memoryUsage().heapUsed
  let peak = base
  return {
    sample: () => {
      const heap = process.memoryUsage().heapUsed
      if (heap > peak) peak = heap
    },
    result: () => ({ peakHeapMb: mb(peak), baseHeapMb: mb(base), peakRssMb: process.resourceUsage().maxRSS / 1024 })
  }
}

const runRaw = (): Measurement => {
  const db = new Database(corpusFile, { readonly: true })
  const memory = heapSampler()
  const started = performance.now()
  let events = 0
  let sink = 0
  for (const row of db.prepare(SELECT_ALL).iterate() as IterableIterator<StoredRow>) {
    const payload = JSON.parse(row.payload) as { at?: number }
    sink += (payload.at ?? 0) > 0 ? 1 : 0
    if (++events % SAMPLE_EVERY === 0) memory.sample()
  }
  const ms = performance.now() - started
  memory.sample()
  db.close()
  if (sink !== events) throw new Error("every payload has an at")
  return { events, ms, ...memory.result(), workers: 0, audit: 0, runsKept: 0, runsForgotten: 0 }
}

let sampleHeap = (): void => {}

const runFold = (): Promise<Measurement> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const memory = heapSampler()
      sampleHeap = memory.sample
      const started = performance.now()
      const { state, events } = yield* foldJournal()
      const ms = performance.now() - started
      memory.sample()
      return {
        events,
        ms,
        ...memory.result(),
        workers: HashMap.size(state.registry.workers),
        audit: state.audit.length,
        runsKept: HashMap.size(state.runs.runs),
        runsForgotten: state.runs.forgotten
      }
    }).pipe(
      // The heap is sampled after the page read that passes each SAMPLE_EVERY-th event, by a
      // Journal that passes reads through to the adapter. (Hooks at every 10,000th sequence did
      // this before, but a hook makes the fold build its persistent state there, which a replay
      // does once.)
      Effect.provide(
        Layer.effect(
          Journal,
          Effect.map(Journal, (journal) => {
            let read = 0
            return Journal.of({
              ...journal,
              read: (after, limit) =>
                Effect.tap(journal.read(after, limit), (page) =>
                  Effect.sync(() => {
                    const before = read
                    read += page.length
                    if (Math.floor(read / SAMPLE_EVERY) > Math.floor(before / SAMPLE_EVERY)) sampleHeap()
                  })
                )
            })
          })
        ).pipe(Layer.provide(layer(corpusFile)))
      ),
      Effect.scoped
    )
  )

/** One pass split into phases: SQL read of a page, JSON.parse + upcast, Schema decode, evolve. */
const runPhases = (): Promise<Record<string, number>> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const decode = Schema.decodeUnknownSync(Event)
      const ms = { sqlPage: 0, parseUpcast: 0, decode: 0, evolve: 0 }
      let state = initialState
      let after = 0
      for (;;) {
        let t = performance.now()
        const rows = yield* sql<StoredRow>`SELECT sequence, stream, stream_version, type, schema_version, payload, recorded_at
             FROM events WHERE sequence > ${after} ORDER BY sequence LIMIT ${PAGE}`
        ms.sqlPage += performance.now() - t
        if (rows.length === 0) break
        t = performance.now()
        const payloads = rows.map((row) => ({ ...upcast(row.type as EventType, row.schema_version, JSON.parse(row.payload) as Record<string, unknown>), _tag: row.type }))
        ms.parseUpcast += performance.now() - t
        t = performance.now()
        const decoded = payloads.map((p) => decode(p))
        ms.decode += performance.now() - t
        t = performance.now()
        for (let i = 0; i < rows.length; i++) {
          const row = rows[i]!
          const envelope: Envelope = {
            sequence: row.sequence,
            stream: row.stream,
            streamVersion: row.stream_version,
            type: row.type as EventType,
            schemaVersion: CURRENT_VERSION[row.type as EventType],
            recordedAt: row.recorded_at,
            event: decoded[i]!
          }
          state = evolve(state, envelope)
        }
        ms.evolve += performance.now() - t
        after = rows[rows.length - 1]!.sequence
      }
      const db = new Database(corpusFile, { readonly: true })
      let t = performance.now()
      let n = 0
      for (const row of db.prepare(SELECT_ALL).iterate() as IterableIterator<StoredRow>) n += row.payload.length > 0 ? 1 : 0
      const iterate = performance.now() - t
      t = performance.now()
      for (const row of db.prepare(SELECT_ALL).iterate() as IterableIterator<StoredRow>) n += JSON.parse(row.payload) === null ? 0 : 1
      const iterateParse = performance.now() - t
      db.close()
      return { ...ms, rawIterate: iterate, rawIterateParse: iterateParse, events: state.sequence + n * 0 }
    }).pipe(Effect.provide(layerStore(corpusFile)), Effect.scoped)
  )

/**
 * Start-up from a snapshot (docs/journal.md): the whole corpus folded (not timed), its snapshot
 * made as a checkpoint makes it, then `startState`, what the owner runs at start, timed: read,
 * digest checked, state made, read back and compared.
 */
const runSnapshot = (): Promise<Record<string, number>> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const { state } = yield* foldJournal()
      let t = performance.now()
      const { text, digest } = yield* snapshotOf(state)
      const made = performance.now() - t
      const journal = yield* Journal
      const checkpoints = Checkpoints.of({ write: () => Effect.void, latest: Effect.succeed(undefined), snapshot: Effect.succeed({ sequence: state.sequence, digest, state: text }) })
      t = performance.now()
      const start = yield* startState(initialState).pipe(Effect.provideService(Checkpoints, checkpoints), Effect.provideService(Journal, journal))
      const started = performance.now() - t
      if (start.snapshot !== state.sequence) throw new Error(`the snapshot was not used: ${start.note}`)
      return { made, started, bytes: text.length, kept: HashMap.size(start.state.runs.runs) }
    }).pipe(Effect.provide(Layer.merge(layer(corpusFile), NodeHashing.layer)), Effect.scoped)
  )

const child = async (mode: string) => {
  const result = mode === "raw" ? runRaw() : mode === "fold" ? await runFold() : mode === "snapshot" ? await runSnapshot() : await runPhases()
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
}

/** Runs this script again as `--child <mode>` under the same vite-node, and answers its RESULT line. */
const inChild = <A>(mode: string): A => {
  const script = fileURLToPath(import.meta.url)
  const forwarded = process.argv.slice(2).filter((a, i, all) => a !== "--child" && all[i - 1] !== "--child")
  const out = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, script, ...forwarded, "--child", mode], {
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
    stdio: ["ignore", "pipe", "inherit"]
  })
  const line = out.stdout.split("\n").find((l) => l.startsWith("RESULT "))
  if (out.status !== 0 || line === undefined) throw new Error(`child ${mode} failed (status ${out.status}): ${out.stdout.slice(-2000)}`)
  return JSON.parse(line.slice("RESULT ".length)) as A
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  printMachine("bench/journal-replay")
  if (!existsSync(corpusFile)) {
    mkdirSync(dirname(corpusFile), { recursive: true })
    const partial = `${corpusFile}.partial`
    rmSync(partial, { force: true })
    const started = performance.now()
    const { types, v1 } = await (CORPUS === "runs" ? generateRuns(partial) : generate(partial))
    renameSync(partial, corpusFile)
    console.log(`  generated   ${fmt(EVENTS)} events in ${((performance.now() - started) / 1000).toFixed(1)} s (not measured)`)
    console.log(`              ${Object.entries(types).map(([t, n]) => `${t} ${fmt(n)}`).join(", ")}; ${fmt(v1)} advertisements stored at version 1`)
  }
  const db = new Database(corpusFile, { readonly: true })
  const stats = db.prepare("SELECT COUNT(*) AS n, SUM(LENGTH(payload)) AS bytes, COUNT(DISTINCT stream) AS streams FROM events").get() as {
    n: number
    bytes: number
    streams: number
  }
  const byType = db.prepare("SELECT type, schema_version AS v, COUNT(*) AS n FROM events GROUP BY type, schema_version ORDER BY n DESC").all() as Array<{
    type: string
    v: number
    n: number
  }>
  db.close()
  console.log(`  corpus      ${corpusFile}`)
  console.log(`              ${fmt(stats.n)} events, ${fmt(stats.streams)} streams, ${(stats.bytes / 1024 / 1024).toFixed(0)} MiB of payload JSON (avg ${Math.round(stats.bytes / stats.n)} B)`)
  console.log(`              ${byType.map((t) => `${t.type}${t.v === 1 && t.type === "WorkerAdvertised" ? " v1" : ""} ${fmt(t.n)}`).join(", ")}`)
  console.log(`  method      ${ROUNDS} rounds; each measurement in its own child process; fold pages ${fmt(PAGE)} events\n`)

  const raws: Array<Measurement> = []
  const folds: Array<Measurement> = []
  console.log("  round   raw (events/s)   fold (events/s)   fold/raw   raw peak RSS / heap   fold peak RSS / heap")
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      raws.push(inChild<Measurement>("raw"))
      folds.push(inChild<Measurement>("fold"))
    } else {
      folds.push(inChild<Measurement>("fold"))
      raws.push(inChild<Measurement>("raw"))
    }
    const raw = raws[r]!
    const fold = folds[r]!
    if (fold.events !== stats.n || raw.events !== stats.n) throw new Error(`read ${fold.events} (fold) and ${raw.events} (raw) events, not ${stats.n}`)
    const rate = (m: Measurement) => (m.events / m.ms) * 1000
    console.log(
      `  ${String(r + 1).padEnd(7)} ${fmt(rate(raw)).padStart(14)}   ${fmt(rate(fold)).padStart(15)}   ${(rate(fold) / rate(raw)).toFixed(2).padStart(8)}   ` +
        `${`${fmt(raw.peakRssMb)} / ${fmt(raw.peakHeapMb)} MB`.padStart(19)}   ${`${fmt(fold.peakRssMb)} / ${fmt(fold.peakHeapMb)} MB`.padStart(20)}`
    )
  }
  const rawRate = median(raws.map((m) => (m.events / m.ms) * 1000))
  const foldRate = median(folds.map((m) => (m.events / m.ms) * 1000))
  const ratio = foldRate / rawRate
  console.log(
    `  median  ${fmt(rawRate).padStart(14)}   ${fmt(foldRate).padStart(15)}   ${ratio.toFixed(2).padStart(8)}   ` +
      `${`${fmt(median(raws.map((m) => m.peakRssMb)))} / ${fmt(median(raws.map((m) => m.peakHeapMb)))} MB`.padStart(19)}   ` +
      `${`${fmt(median(folds.map((m) => m.peakRssMb)))} / ${fmt(median(folds.map((m) => m.peakHeapMb)))} MB`.padStart(20)}`
  )
  console.log(
    `  (heap before the fold: ${fmt(median(folds.map((m) => m.baseHeapMb)))} MB; folded state: ${fmt(folds[0]!.workers)} workers, ${fmt(folds[0]!.audit)} audit rows, ` +
      `${fmt(folds[0]!.runsKept)} runs kept, ${fmt(folds[0]!.runsForgotten)} forgotten)`
  )
  const verdict = () => {
    console.log(`\n  result: fold ${fmt(foldRate)} events/s = ${ratio.toFixed(2)} x raw iterate + JSON.parse (${fmt(rawRate)}/s); target >= ${TARGET} x: ${ratio >= TARGET ? "PASS" : "FAIL"}`)
    process.exitCode = ratio >= TARGET ? 0 : 1
  }
  if (CORPUS === "runs") {
    const snap = inChild<Record<string, number>>("snapshot")
    console.log(
      `\n  start-up from a snapshot of the folded state (${fmt(snap["kept"]!)} runs kept, ${(snap["bytes"]! / 1024 / 1024).toFixed(1)} MiB of JSON): ` +
        `${fmt(snap["started"]!)} ms (read, digest checked, state made and read back), against ${(median(folds.map((m) => m.ms)) / 1000).toFixed(1)} s for the whole fold; making it at a checkpoint ${fmt(snap["made"]!)} ms`
    )
    return verdict()
  }

  const phases = inChild<Record<string, number>>("phases")
  const per = (ms: number) => `${ms.toFixed(0).padStart(7)} ms  ${((ms * 1000) / stats.n).toFixed(2).padStart(6)} us/event`
  console.log("\n  phases (one pass, in a child process)")
  console.log(`    raw iterate() alone                    ${per(phases["rawIterate"]!)}`)
  console.log(`    raw iterate() + JSON.parse (baseline)  ${per(phases["rawIterateParse"]!)}`)
  console.log(`    fold: SQL read of pages (@effect/sql)  ${per(phases["sqlPage"]!)}`)
  console.log(`    fold: JSON.parse + upcast              ${per(phases["parseUpcast"]!)}`)
  console.log(`    fold: Schema decode                    ${per(phases["decode"]!)}`)
  console.log(`    fold: evolve                           ${per(phases["evolve"]!)}`)

  verdict()
}

const childAt = process.argv.indexOf("--child")
if (childAt >= 0) void child(process.argv[childAt + 1] ?? "raw")
else void main()
