/**
 * bench/journal-append: events appended per second through the SQLite journal (the real
 * `SqliteJournal.layer`, WAL, synchronous=FULL, group commit), beside a raw better-sqlite3
 * loop writing the same rows with the same pragmas, in the same run.
 *
 *   npx vite-node bench/journal-append.ts [--seconds 3] [--rounds 3]
 *
 * Workloads, each on a fresh file in the temp directory made by the real migrations:
 * - journal, K appenders (K = 1, 16, 256): K fibers, each appending one-event commands in a
 *   loop to its own stream with the right expected version; every append waits for its commit.
 * - raw, K = 1: one autocommit INSERT per event (one commit, one fsync, per event).
 * - raw, K > 1: K rows per transaction (one commit per K events), what group commit can at
 *   best reach with K waiting appenders.
 * Same table, same columns, same payload JSON (`payloadOf` of the same event).
 * Each run: 0.5 s warm-up, then `--seconds` counted. Rounds alternate which goes first; rates
 * are medians over rounds.
 * Targets: journal(1) >= 0.5 x raw single commits; journal(K) >= 0.8 x raw K-row transactions.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { Journal } from "../src/app/journal/Journal.js"
import { CURRENT_VERSION, WorkerAdvertised } from "../src/domain/journal/Events.js"
import { layer, layerStore, payloadOf } from "../src/infra/journal/SqliteJournal.js"
import { Database, arg, fmt, gc, median, printMachine } from "./support.js"

const SECONDS = arg("seconds", 3)
const ROUNDS = arg("rounds", 3)
const WARMUP_MS = 500
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

/** Raw better-sqlite3: K rows per commit (K = 1: one autocommit INSERT per event). */
const runRaw = async (k: number): Promise<number> => {
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
  const until = (ms: number) => {
    const start = performance.now()
    let events = 0
    while (performance.now() - start < ms) {
      step()
      round++
      events += k
    }
    return { events, ms: performance.now() - start }
  }
  until(WARMUP_MS)
  const { events, ms } = until(SECONDS * 1000)
  db.close()
  return (events / ms) * 1000
}

/** The journal: K fibers appending one-event commands to their own streams until stopped. */
const runJournal = (k: number): Promise<{ rate: number; conflicts: number }> =>
  freshFile().then((file) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const journal = yield* Journal
        const state = { stop: false, events: 0, conflicts: 0 }
        const appender = (i: number) =>
          Effect.gen(function* () {
            const stream = `worker-w${i}`
            const events = [eventOf(i)]
            let version = 0
            while (!state.stop) {
              const written = yield* journal.append({ stream, expectedVersion: version, events })
              version += written.length
              state.events += written.length
            }
          }).pipe(Effect.catchTag("StreamConflict", () => Effect.sync(() => void state.conflicts++)))
        const fibers = yield* Effect.forEach(Array.from({ length: k }, (_, i) => i), (i) => Effect.fork(appender(i)))
        yield* Effect.sleep(WARMUP_MS)
        const startEvents = state.events
        const start = performance.now()
        yield* Effect.sleep(SECONDS * 1000)
        const events = state.events - startEvents
        const ms = performance.now() - start
        state.stop = true
        yield* Fiber.joinAll(fibers)
        return { rate: (events / ms) * 1000, conflicts: state.conflicts }
      }).pipe(Effect.provide(layer(file)), Effect.scoped)
    )
  )

const main = async () => {
  printMachine("bench/journal-append")
  console.log(`  method      ${ROUNDS} rounds; each run ${WARMUP_MS} ms warm-up + ${SECONDS} s counted, on a fresh file in ${tmpdir()}`)
  console.log(`  payload     ${Buffer.byteLength(payloadOf(eventOf(0)))} bytes of JSON per event (WorkerAdvertised)\n`)
  const raw = new Map<number, Array<number>>(KS.map((k) => [k, []]))
  const journal = new Map<number, Array<number>>(KS.map((k) => [k, []]))
  console.log("  round  K     raw (events/s)   journal (events/s)   journal/raw")
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of KS) {
      let rawRate = 0
      let journalRate = 0
      const doRaw = async () => {
        gc()
        rawRate = await runRaw(k)
      }
      const doJournal = async () => {
        gc()
        const result = await runJournal(k)
        if (result.conflicts > 0) throw new Error(`unexpected stream conflicts: ${result.conflicts}`)
        journalRate = result.rate
      }
      if (r % 2 === 0) {
        await doRaw()
        await doJournal()
      } else {
        await doJournal()
        await doRaw()
      }
      raw.get(k)!.push(rawRate)
      journal.get(k)!.push(journalRate)
      console.log(
        `  ${String(r + 1).padEnd(6)} ${String(k).padEnd(5)} ${fmt(rawRate).padStart(14)}   ${fmt(journalRate).padStart(18)}   ${(journalRate / rawRate).toFixed(2).padStart(11)}`
      )
    }
  }
  console.log("\n  medians")
  console.log("  K     raw (events/s)   journal (events/s)   journal/raw   target   verdict")
  let pass = true
  for (const k of KS) {
    const rawRate = median(raw.get(k)!)
    const journalRate = median(journal.get(k)!)
    const ratio = journalRate / rawRate
    const target = k === 1 ? TARGET_SINGLE : TARGET_GROUP
    const ok = ratio >= target
    pass &&= ok
    console.log(
      `  ${String(k).padEnd(5)} ${fmt(rawRate).padStart(14)}   ${fmt(journalRate).padStart(18)}   ${ratio.toFixed(2).padStart(11)}   ${`>= ${target}`.padStart(6)}   ${ok ? "PASS" : "FAIL"}`
    )
  }
  console.log(`\n  result: ${pass ? "PASS" : "FAIL"}`)
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
  process.exitCode = pass ? 0 : 1
}

void main()
