/**
 * bench/journal-append: events appended per second through the SQLite journal (the real
 * `SqliteJournal.layer`, WAL, synchronous=FULL, group commit), beside a raw better-sqlite3
 * loop writing the same rows with the same pragmas, in the same run.
 *
 *   npx vite-node bench/journal-append.ts [--slice 0.5] [--pairs 10] [--verbose]
 *
 * Workloads, each on its own fresh file in the temp directory made by the real migrations:
 * - journal, K appenders (K = 1, 16, 256): K fibers, each appending one-event commands in a
 *   loop to its own stream with the right expected version; every append waits for its commit.
 * - raw, K = 1: one autocommit INSERT per event (one commit, one fsync, per event).
 * - raw, K > 1: K rows per transaction (one commit per K events), what group commit can at
 *   best reach with K waiting appenders.
 * Same table, same columns, same payload JSON (`payloadOf` of the same event).
 * Method: the disk of a shared VM changes speed by 2x within a minute, so raw and journal are
 * measured in short slices taken in turn (per K: a warm-up slice of each, then `--pairs` pairs
 * of `--slice` seconds, the order flipped every pair); the ratio is the median of the pairs'
 * ratios, each pair measured within about a second.
 * Targets: journal(1) >= 0.5 x raw single commits; journal(K) >= 0.8 x raw K-row transactions.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { Journal } from "../src/app/journal/Journal.js"
import { CURRENT_VERSION, WorkerAdvertised } from "../src/domain/journal/Events.js"
import { layer, payloadOf } from "../src/infra/journal/SqliteJournal.js"
import { layerStore } from "../src/infra/journal/SqliteStore.js"
import { Database, arg, fmt, gc, median, printMachine } from "./support.js"

const SLICE_MS = arg("slice", 0.5) * 1000
const PAIRS = arg("pairs", 10)
const VERBOSE = process.argv.includes("--verbose")
const KS = [1, 16, 256] as const
const TARGET_SINGLE = 0.5
const TARGET_GROUP = 0.8

const hex = (n: number) => n.toString(16).padStart(64, "0")

/** The event appender `i` writes (payload about 300 bytes, as a real advertisement). */
const eventOf = (i: number) =>
  new WorkerAdvertised({
    workerId: `w${i}`,
    capacity: 4,
    labels: ["arch=x64", "gpu=false", "os=linux", `zone=z${i % 4}`],
    capabilities: ["node", "process"],
    artifacts: [{ address: "reports:nightly@3", digest: `sha256:${hex(i)}` }],
    at: 1_750_000_000_000
  })

const tempDirs: Array<string> = []
/** A new journal file with the real schema (the real migrations, run through the adapter's store layer). */
const freshFile = async (): Promise<string> => {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-append-"))
  tempDirs.push(dir)
  const file = join(dir, "journal.sqlite")
  await Effect.runPromise(Effect.scoped(Effect.provide(Effect.void, layerStore(file))))
  return file
}

/** Raw better-sqlite3 on its own file: K rows per commit (K = 1: one autocommit INSERT per event), in slices. */
const openRaw = async (k: number) => {
  const file = await freshFile()
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = FULL")
  const insert = db.prepare(
    "INSERT INTO events (sequence, stream, stream_version, type, schema_version, payload, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
  )
  const payloads = Array.from({ length: k }, (_, i) => payloadOf(eventOf(i)))
  const streams = Array.from({ length: k }, (_, i) => `worker-w${i}`)
  const version = CURRENT_VERSION.WorkerAdvertised
  let sequence = 0
  let round = 0
  const writeOne = (i: number) => insert.run(++sequence, streams[i], round + 1, "WorkerAdvertised", version, payloads[i], Date.now())
  const commitK = db.transaction(() => {
    for (let i = 0; i < k; i++) writeOne(i)
  })
  const step = k === 1 ? () => writeOne(0) : commitK
  /** Commits back to back for `ms`; the events written and the time taken. */
  const slice = (ms: number): Slice => {
    const start = performance.now()
    let events = 0
    while (performance.now() - start < ms) {
      step()
      round++
      events += k
    }
    return { events, ms: performance.now() - start }
  }
  return { slice, close: () => db.close() }
}

type Slice = { readonly events: number; readonly ms: number }

/**
 * The journal on its own file: K fibers appending one-event commands to their own streams, in
 * slices: each slice starts the K appenders (each continuing its stream at its version) and
 * stops them after `ms`; the events counted are those acknowledged within the slice.
 */
const journalSlicer = (k: number) =>
  Effect.gen(function* () {
    const journal = yield* Journal
    const versions = Array.from({ length: k }, () => 0)
    const events = Array.from({ length: k }, (_, i) => [eventOf(i)])
    let conflicts = 0
    const slice = (ms: number) =>
      Effect.gen(function* () {
        const state = { stop: false, events: 0 }
        const appender = (i: number) =>
          Effect.gen(function* () {
            const stream = `worker-w${i}`
            while (!state.stop) {
              const written = yield* journal.append({ stream, expectedVersion: versions[i]!, events: events[i]! })
              versions[i]! += written.length
              if (!state.stop) state.events += written.length
            }
          }).pipe(Effect.catchTag("StreamConflict", () => Effect.sync(() => void conflicts++)))
        const start = performance.now()
        const fibers = yield* Effect.forEach(versions, (_, i) => Effect.fork(appender(i)))
        yield* Effect.sleep(ms)
        state.stop = true
        const counted: Slice = { events: state.events, ms: performance.now() - start }
        yield* Fiber.joinAll(fibers)
        return counted
      })
    return { slice, conflicts: () => conflicts }
  })

const rateOf = (s: Slice) => (s.events / s.ms) * 1000
const sum = (xs: ReadonlyArray<Slice>): Slice => ({ events: xs.reduce((n, x) => n + x.events, 0), ms: xs.reduce((n, x) => n + x.ms, 0) })

/** One K: a warm-up slice of each, then PAIRS pairs of slices, raw and journal, the order flipped every pair. */
const measure = (k: number) =>
  Effect.gen(function* () {
    const raw = yield* Effect.promise(() => openRaw(k))
    const journal = yield* journalSlicer(k)
    const rawSlice = Effect.sync(() => {
      gc()
      return raw.slice(SLICE_MS)
    })
    const journalSlice = Effect.suspend(() => {
      gc()
      return journal.slice(SLICE_MS)
    })
    yield* rawSlice
    yield* journalSlice
    const pairs: Array<{ raw: Slice; journal: Slice }> = []
    for (let p = 0; p < PAIRS; p++) {
      const [r, j] =
        p % 2 === 0
          ? yield* Effect.zip(rawSlice, journalSlice)
          : yield* Effect.map(Effect.zip(journalSlice, rawSlice), ([j, r]) => [r, j] as const)
      pairs.push({ raw: r, journal: j })
    }
    raw.close()
    if (journal.conflicts() > 0) throw new Error(`unexpected stream conflicts: ${journal.conflicts()}`)
    return pairs
  }).pipe(
    Effect.provide(Layer.unwrapEffect(Effect.promise(() => freshFile().then(layer)))),
    Effect.scoped
  )

const main = async () => {
  printMachine("bench/journal-append")
  console.log(`  method      per K: a warm-up slice of each, then ${PAIRS} pairs of ${SLICE_MS} ms slices (raw, journal), order flipped every pair, each on its own file in ${tmpdir()}`)
  console.log(`  payload     ${Buffer.byteLength(payloadOf(eventOf(0)))} bytes of JSON per event (WorkerAdvertised)\n`)
  console.log("  K     raw (events/s)   journal (events/s)   journal/raw (pairs: median, min-max)   target   verdict")
  let pass = true
  for (const k of KS) {
    const pairs = await Effect.runPromise(measure(k))
    const ratios = pairs.map((p) => rateOf(p.journal) / rateOf(p.raw))
    const ratio = median(ratios)
    const target = k === 1 ? TARGET_SINGLE : TARGET_GROUP
    const ok = ratio >= target
    pass &&= ok
    const spread = `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`
    console.log(
      `  ${String(k).padEnd(5)} ${fmt(rateOf(sum(pairs.map((p) => p.raw)))).padStart(14)}   ${fmt(rateOf(sum(pairs.map((p) => p.journal)))).padStart(18)}   ${`${ratio.toFixed(2)} (${spread})`.padStart(36)}   ${`>= ${target}`.padStart(6)}   ${ok ? "PASS" : "FAIL"}`
    )
    if (VERBOSE) console.log(`        per pair: ${ratios.map((r) => r.toFixed(2)).join(" ")}; raw per pair: ${pairs.map((p) => fmt(rateOf(p.raw))).join(" ")}`)
  }
  console.log(`\n  result: ${pass ? "PASS" : "FAIL"}`)
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
  process.exitCode = pass ? 0 : 1
}

void main()
