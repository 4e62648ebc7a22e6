/**
 * Crash safety of the SQLite journal: a separate process appending many multi-event commands
 * from several fibers is killed with SIGKILL mid-stream; afterwards the file passes
 * `PRAGMA integrity_check`, holds every append that was acknowledged, and holds no part of a
 * command without the rest of it. Three kills in a row on the same file, each run appending to
 * fresh streams, so recovery after a kill is followed by more appends and another kill.
 *
 * The child is test/support/append-child.mjs, which runs the compiled adapter from dist/
 * (`npm run build`; `npm test` builds first).
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { beforeAll, describe, expect, it } from "vitest"

/** The few parts of better-sqlite3 used here (the project has no types for it). */
interface Db {
  prepare(sql: string): { all(...params: ReadonlyArray<unknown>): Array<unknown> }
  close(): void
}
const Database = createRequire(import.meta.url)("better-sqlite3") as new (filename: string) => Db

const child = fileURLToPath(new URL("../../support/append-child.mjs", import.meta.url))
const distFiles = ["infra/journal/SqliteJournal.js", "domain/journal/Events.js", "app/journal/Journal.js"].map((p) =>
  fileURLToPath(new URL(`../../../dist/${p}`, import.meta.url))
)

const KILLS = 3
const FIBERS = 8
/** Acknowledgements to wait for before the kill (a little more each run, so kills land at different points). */
const ACKS_BEFORE_KILL = [200, 350, 500]

interface Ack {
  readonly stream: string
  readonly commandId: number
  readonly sequences: ReadonlyArray<number>
  readonly streamVersions: ReadonlyArray<number>
}

interface Row {
  readonly sequence: number
  readonly stream: string
  readonly stream_version: number
  readonly type: string
  readonly payload: string
}

/** Runs the child until `acksBeforeKill` appends were acknowledged, SIGKILLs it, and answers every acknowledgement it printed. */
const runAndKill = (file: string, run: number, acksBeforeKill: number) =>
  new Promise<{ acks: ReadonlyArray<Ack>; signal: NodeJS.Signals | null; code: number | null; stderr: string }>((resolve, reject) => {
    const proc = spawn(process.execPath, [child, file, String(run), String(FIBERS)], { stdio: ["ignore", "pipe", "pipe"] })
    const acks: Array<Ack> = []
    let buffered = ""
    let stderr = ""
    let killed = false
    const timer = setTimeout(() => {
      proc.kill("SIGKILL")
      reject(new Error(`the child acknowledged only ${acks.length} appends in 15 s; stderr: ${stderr}`))
    }, 15_000)
    proc.stdout.setEncoding("utf8")
    proc.stdout.on("data", (chunk: string) => {
      buffered += chunk
      const lines = buffered.split("\n")
      buffered = lines.pop() ?? ""
      for (const line of lines) {
        const [tag, stream, commandId, sequences, versions] = line.split(" ")
        if (tag !== "ack" || stream === undefined || commandId === undefined || sequences === undefined || versions === undefined) continue
        acks.push({ stream, commandId: Number(commandId), sequences: sequences.split(",").map(Number), streamVersions: versions.split(",").map(Number) })
      }
      if (!killed && acks.length >= acksBeforeKill) {
        killed = true
        proc.kill("SIGKILL")
      }
    })
    proc.stderr.setEncoding("utf8")
    proc.stderr.on("data", (chunk: string) => (stderr += chunk))
    proc.on("error", reject)
    // "close": the process is gone and its pipes are drained, so every line it wrote was seen.
    proc.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ acks, signal, code, stderr })
    })
  })

/** What a checker needs from the file: integrity, every row in order, and the head. */
const inspect = (file: string) => {
  const db = new Database(file)
  try {
    const integrity = (db.prepare("PRAGMA integrity_check").all() as Array<{ integrity_check: string }>).map((r) => r.integrity_check)
    const rows = db.prepare("SELECT sequence, stream, stream_version, type, payload FROM events ORDER BY sequence").all() as Array<Row>
    return { integrity, rows }
  } finally {
    db.close()
  }
}

/** The size the child gives command k of a fiber (see append-child.mjs). */
const commandSize = (fiber: number, k: number) => 2 + ((fiber + k) % 2)

describe("SQLite journal under SIGKILL", () => {
  beforeAll(() => {
    const missing = distFiles.filter((f) => !existsSync(f))
    if (missing.length > 0) {
      throw new Error(`the crash test runs the compiled adapter in a child process, but ${missing.join(", ")} is missing: run \`npm run build\` first (npm test does)`)
    }
  })

  it(
    `loses no acknowledged append and leaves no half-written command (${KILLS} kills)`,
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), "svc-crash-")), "svc.sqlite")
      const acked: Array<Ack> = []
      for (let run = 1; run <= KILLS; run++) {
        const result = await runAndKill(file, run, ACKS_BEFORE_KILL[run - 1] ?? 200)
        expect(result.signal, `run ${run}: the child should die from the SIGKILL, not exit by itself (code ${result.code}); stderr: ${result.stderr}`).toBe("SIGKILL")
        expect(result.acks.length).toBeGreaterThanOrEqual(ACKS_BEFORE_KILL[run - 1] ?? 200)
        acked.push(...result.acks)

        const { integrity, rows } = inspect(file)
        expect(integrity).toEqual(["ok"])

        // Sequences are contiguous 1..head.
        expect(rows.map((r) => r.sequence)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1))

        // Every acknowledged append is there, in its stream, at the sequences and versions it was answered with.
        const bySequence = new Map(rows.map((r) => [r.sequence, r]))
        for (const ack of acked) {
          ack.sequences.forEach((sequence, i) => {
            const row = bySequence.get(sequence)
            expect(row, `acknowledged sequence ${sequence} (${ack.stream}, command ${ack.commandId}) is missing`).toBeDefined()
            expect(row).toMatchObject({ stream: ack.stream, stream_version: ack.streamVersions[i] })
            expect((JSON.parse(row!.payload) as { at: number }).at).toBe(ack.commandId)
          })
        }

        // No half-written command: each stream is whole commands, in order, each with all of its events.
        const streams = new Map<string, Array<Row>>()
        for (const row of rows) streams.set(row.stream, [...(streams.get(row.stream) ?? []), row])
        for (const [stream, events] of streams) {
          const match = /^worker-r(\d+)f(\d+)$/.exec(stream)
          expect(match, `unexpected stream ${stream}`).not.toBeNull()
          const [streamRun, fiber] = [Number(match![1]), Number(match![2])]
          expect(events.map((e) => e.stream_version)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1))
          let at = 0
          for (let k = 0; at < events.length; k++) {
            const size = commandSize(fiber, k)
            const command = events.slice(at, at + size)
            const commandId = streamRun * 1e9 + fiber * 1e6 + k
            expect(command.length, `${stream}: command ${commandId} has ${command.length} of its ${size} events`).toBe(size)
            expect(command.map((e) => (JSON.parse(e.payload) as { at: number }).at)).toEqual(Array(size).fill(commandId))
            expect(command.map((e) => e.type)).toEqual(["SessionStarted", "WorkerAdvertised", "CredentialRotationRequested"].slice(0, size))
            // A command's events are consecutive in the global order too (one transaction).
            expect(command.map((e) => e.sequence - command[0]!.sequence)).toEqual(Array.from({ length: size }, (_, i) => i))
            at += size
          }
        }
        // Every fiber of this run wrote something acknowledged.
        expect(new Set(result.acks.map((a) => a.stream)).size).toBe(FIBERS)
      }
    },
    30_000
  )
})
