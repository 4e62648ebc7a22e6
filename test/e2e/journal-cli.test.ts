/**
 * `svc journal replay|tail|export` and `svc audit` over a real store file written by the real
 * journal adapter, run as the real binary (they work whether the owner runs or not).
 */
import Database from "better-sqlite3"
import { spawn, spawnSync } from "node:child_process"
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { beforeEach, describe, expect, it, onTestFinished } from "vitest"
import { layer as projectionsLayer, Projections } from "../../src/app/journal/Projections.js"
import { PROJECTION_FORM } from "../../src/app/journal/Replay.js"
import * as Decide from "../../src/domain/workers/Decide.js"
import * as RunDecide from "../../src/domain/runs/Decide.js"
import type { RunJob } from "../../src/domain/journal/Events.js"
import * as NodeHashing from "../../src/infra/journal/NodeHashing.js"
import { layer as sqliteLayer } from "../../src/infra/journal/SqliteJournal.js"
import { storePath } from "../../src/infra/journal/StoreFile.js"
import { hash } from "../support/events.js"
import { SVC_BIN, svc, tempDir } from "../support/svc.js"
import { waitFor } from "../support/serve.js"

let home: string
const run = (...args: Array<string>) => svc(args, { cwd: home, home })

const T0 = Date.parse("2026-11-22T10:00:00.000Z")

/** An owner's history: an invite, a join, a session, a rotation, a takeover and a revocation. */
const writeHistory = (file: string, checkpoint: boolean) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const p = yield* Projections
      yield* p.execute((r) => Decide.decideInvite({ inviteId: "i1", tokenHash: hash("t"), name: "lab-1", scope: ["hasher:checksum@1.0.0"], expiresAt: null, actor: "operator", now: T0 }, r))
      yield* p.execute((r) => Decide.decideRedeem({ inviteId: "i1", tokenHash: hash("t"), workerId: "w1", name: "ignored", credentialHash: hash("c1"), previousCredentialHash: null, now: T0 + 1000 }, r))
      yield* p.execute((r) => Decide.decideStartSession({ workerId: "w1", previousSessionLive: false, now: T0 + 2000 }, r))
      yield* p.execute((r) => Decide.decideAdvertise({ workerId: "w1", fence: 1, capacity: 4, labels: ["os=linux"], capabilities: ["node"], artifacts: [], now: T0 + 2000 }, r))
      yield* p.execute((r) => Decide.decideRequestRotation({ workerId: "w1", actor: "operator", now: T0 + 3000 }, r))
      yield* p.execute((r) => Decide.decideCompleteRotation({ workerId: "w1", credentialHash: hash("c2"), now: T0 + 4000 }, r))
      yield* p.execute((r) => Decide.decideStartSession({ workerId: "w1", previousSessionLive: true, now: T0 + 5000 }, r))
      yield* p.execute((r) => Decide.decideRevoke({ workerId: "w1", actor: "operator", now: T0 + 6000 }, r))
      if (checkpoint) yield* p.checkpoint
    }).pipe(Effect.provide(projectionsLayer.pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))), Effect.scoped)
  )

/** A run r1 no host can take: submitted with its (blocked) placement, then stopped: stream versions 1-3. */
const writeRun = (file: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const p = yield* Projections
      const job: RunJob = { address: "b:j@1.0.0", bag: "b", job: "j", digest: `sha256:${"d".repeat(64)}`, executor: "node", remoteEligible: true, ownerOnly: [], requiredLabels: [], requiredBins: [], bounds: [], timeoutMs: null }
      yield* p.executeOn((s) => RunDecide.decideSubmitAndPlace({ runId: "r1", job, input: {}, preferredLabels: [], actor: "operator", now: T0 + 7000, candidates: [], quotas: { logical: null, endpoint: null }, notes: [] }, s.runs))
      yield* p.executeOn((s) => RunDecide.decideStop({ runId: "r1", actor: "operator", now: T0 + 8000 }, s.runs))
    }).pipe(Effect.provide(projectionsLayer.pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))), Effect.scoped)
  )

beforeEach(() => {
  home = tempDir("svc-journal-home-")
  mkdirSync(home, { recursive: true })
})

describe("svc journal and svc audit", () => {
  it("work on a machine with no journal yet", async () => {
    const replayed = await run("journal", "replay", "--json")
    expect(replayed.code).toBe(0)
    expect(JSON.parse(replayed.stdout)).toMatchObject({ events: 0, head: 0, checkpoint: null, divergences: [] })
    expect(JSON.parse((await run("audit", "--json")).stdout)).toEqual({ rows: [] })
  })

  it("read a store never written to (0 bytes: a first svc serve that failed, its port in use) as an empty journal, saying so (it was refused as damaged, exit 1)", async () => {
    const file = storePath(home)
    writeFileSync(file, "")
    const note = `note: ${file} is an empty file (0 bytes; svc serve makes the journal when it first starts in this home): read as an empty journal\n`
    const replayed = await run("journal", "replay", "--json")
    expect({ code: replayed.code, stderr: replayed.stderr }).toEqual({ code: 0, stderr: note })
    expect(JSON.parse(replayed.stdout)).toMatchObject({ events: 0, head: 0, checkpoint: null, divergences: [] })
    expect(await run("audit", "--json")).toMatchObject({ code: 0, stdout: `${JSON.stringify({ rows: [] }, null, 2)}\n`, stderr: note })
    expect(await run("journal", "tail")).toMatchObject({ code: 0, stdout: "", stderr: note })
    expect(await run("journal", "export")).toMatchObject({ code: 0, stdout: "", stderr: note })
    expect(await run("journal", "history", "r1")).toMatchObject({ code: 1, stderr: `${note}svc: the journal holds no run r1\n` })
    expect(statSync(file).size).toBe(0)
    // Followed, it is a store not made yet: waited for, then every event shown from the first.
    const child = spawn(process.execPath, [SVC_BIN, "journal", "tail", "--follow", "--json"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home }, stdio: ["ignore", "pipe", "pipe"] })
    // Not left running by a test that fails before its reader goes away.
    onTestFinished(() => void child.kill())
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
    const first = new Promise<string>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(d.toString("utf8"))))
    await new Promise((resolve) => setTimeout(resolve, 700))
    await writeHistory(file, false)
    expect(JSON.parse((await first).split("\n")[0]!)).toMatchObject({ sequence: 1, type: "WorkerInvited" })
    child.kill("SIGTERM")
    await exited
  }, 30_000)

  it("say so when SVC_HOME names no home (a typo read as an empty journal before)", async () => {
    const nowhere = join(home, "no-such-home")
    for (const args of [["audit"], ["journal", "tail"], ["journal", "export"], ["journal", "replay"], ["journal", "history", "r1"]]) {
      const r = await svc(args, { cwd: home, home: nowhere })
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ args, code: 1, stdout: "", stderr: `svc: there is no svc home at ${nowhere} (SVC_HOME): no journal to read\n` })
    }
  })

  it("replay rebuilds the projections, reports speed, and agrees with the owner's checkpoint", async () => {
    await writeHistory(storePath(home), true)
    const text = await run("journal", "replay")
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/replayed 8 events \(to sequence 8\) in \d+\.\d\d s, \d+ events\/s/)
    expect(text.stdout).toContain("checkpoint at sequence 8: matches")
    expect(text.stdout).toContain("running owner: not compared (no owner runtime is running for this SVC_HOME)")
    const doc = JSON.parse((await run("journal", "replay", "--json")).stdout)
    expect(doc).toMatchObject({ events: 8, head: 8, checkpoint: { sequence: 8, matches: true }, divergences: [] })
  })

  it("replay reads only the setting it needs: what else svc.yaml or the environment sets is svc serve's to judge (a newer svc's or a worker's home is replayed)", async () => {
    await writeHistory(storePath(home), true)
    const yaml = (env: string) => writeFileSync(join(home, "svc.yaml"), `services:\n  workflows:\n    runtime:\n      env:\n${env}`)
    const replay = (env: Record<string, string> = {}) => svc(["journal", "replay", "--json"], { cwd: home, home, env })
    yaml("        SVC_WORKFLOW_FUTURE_KNOB: 1\n        SVC_WORKFLOW_RETAINED_RUNS: 7\n")
    const known = await replay({ SVC_WORKFLOW_CAPACTY: "3" })
    expect(known.code, known.stderr).toBe(0)
    expect(JSON.parse(known.stdout)).toMatchObject({ retained: 7, divergences: [] })
    // Set in the environment, svc.yaml is not read at all (as svc serve, the environment wins).
    writeFileSync(join(home, "svc.yaml"), "services: [unclosed\n")
    const fromEnv = await replay({ SVC_WORKFLOW_RETAINED_RUNS: "9" })
    expect(fromEnv.code, fromEnv.stderr).toBe(0)
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ retained: 9 })
    // Otherwise a file that is not YAML leaves the setting unknown: refused, naming it.
    const broken = await replay()
    expect(broken.code).toBe(1)
    expect(broken.stderr).toMatch(new RegExp(`^svc: ${join(home, "svc.yaml")} is not valid YAML: `))
    // svc serve still refuses what it does not know.
    yaml("        SVC_WORKFLOW_FUTURE_KNOB: 1\n")
    const serve = await svc(["serve", "--listen", "127.0.0.1:0"], { cwd: home, home })
    expect(serve.code).toBe(1)
    expect(serve.stderr).toContain("sets SVC_WORKFLOW_FUTURE_KNOB, which svc does not know")
  })

  it("replay exits 1 and names the divergence when the checkpoint disagrees", async () => {
    await writeHistory(storePath(home), true)
    await Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE checkpoints SET digest = ${`${PROJECTION_FORM}:${"f".repeat(64)}`}`).pipe(Effect.provide(sqliteLayer(storePath(home))), Effect.scoped)
    )
    const out = await run("journal", "replay")
    expect(out.code).toBe(1)
    expect(out.stdout).toContain("checkpoint at sequence 8: DIVERGES")
    expect(out.stdout).toMatch(
      new RegExp(`divergence \\(checkpoint, sequence 8\\): the projections rebuilt to sequence 8 have digest ${PROJECTION_FORM}:[0-9a-f]{64}, the checkpoint says ${PROJECTION_FORM}:${"f".repeat(64)}\n`)
    )
  })

  it("replay says a checkpoint written by an earlier svc (another form of the projections) is not compared, and exits 0", async () => {
    await writeHistory(storePath(home), true)
    await Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE checkpoints SET digest = ${"f".repeat(64)}`).pipe(Effect.provide(sqliteLayer(storePath(home))), Effect.scoped)
    )
    const out = await run("journal", "replay")
    expect(out.code).toBe(0)
    expect(out.stdout).toContain("checkpoint at sequence 8: not compared (written by an earlier svc, whose projections had another form; a running owner writes a current one within 5 minutes)")
    expect(JSON.parse((await run("journal", "replay", "--json")).stdout)).toMatchObject({ checkpoint: { sequence: 8, matches: null, form: "earlier" }, divergences: [] })
  })

  it("audit lists invites, joins, rotations, takeovers and revocations with time, worker and actor", async () => {
    await writeHistory(storePath(home), false)
    const rows = JSON.parse((await run("audit", "--json")).stdout).rows
    expect(rows.map((r: { kind: string; workerId: string | null; actor: string; at: string }) => [r.kind, r.workerId, r.actor, r.at])).toEqual([
      ["invite", null, "operator", "2026-11-22T10:00:00.000Z"],
      ["join", "w1", "worker w1", "2026-11-22T10:00:01.000Z"],
      ["rotation", "w1", "operator", "2026-11-22T10:00:03.000Z"],
      ["rotation", "w1", "worker w1", "2026-11-22T10:00:04.000Z"],
      ["takeover", "w1", "worker w1", "2026-11-22T10:00:05.000Z"],
      ["revocation", "w1", "operator", "2026-11-22T10:00:06.000Z"]
    ])
    const text = (await run("audit")).stdout
    expect(text.split("\n")[0]).toMatch(/^TIME\s+KIND\s+WORKER\s+ACTOR\s+DETAIL$/)
    expect(text).toContain("lab-1 joined with invite i1")
  })

  it("tail shows the last events and export writes every event as a JSON line; no secret appears", async () => {
    await writeHistory(storePath(home), false)
    const tail = JSON.parse((await run("journal", "tail", "--lines", "2", "--json")).stdout)
    expect(tail.events.map((e: { sequence: number; type: string }) => [e.sequence, e.type])).toEqual([
      [7, "SessionStarted"],
      [8, "WorkerRevoked"]
    ])
    const text = (await run("journal", "tail", "-n", "3")).stdout.trim().split("\n")
    expect(text).toHaveLength(3)
    // Written as head and tail take it: -n3 (refused as an unknown option -n3).
    expect((await run("journal", "tail", "-n3")).stdout.trim().split("\n")).toEqual(text)
    expect(text[2]).toMatch(/^\s+8  \d{4}-\d\d-\d\dT[\d:.]+Z  worker-w1#6  WorkerRevoked  \{"workerId":"w1"/)
    const exported = (await run("journal", "export")).stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(exported.map((e: { sequence: number }) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(exported[1]).toMatchObject({ stream: "invite-i1", streamVersion: 2, type: "WorkerJoined", event: { _tag: "WorkerJoined", credentialHash: hash("c1") } })
    // The document, written page by page, is the very text of the whole document pretty-printed.
    const whole = await run("journal", "tail", "-n", "100", "--json")
    expect(whole.stdout).toBe(`${JSON.stringify({ events: exported }, null, 2)}\n`)
    expect((await run("journal", "tail", "-n", "0", "--json")).stdout).toBe(`${JSON.stringify({ events: [] }, null, 2)}\n`)
    expect((await run("journal", "tail", "-n", "1", "--json")).stdout).toBe(`${JSON.stringify({ events: exported.slice(-1) }, null, 2)}\n`)
    // The journal holds hashes only: neither the token nor a credential is in it.
    const all = JSON.stringify(exported)
    expect(all).not.toMatch(/"t"|"c1"|"c2"/)
  })

  it("a damaged row is named by its sequence; export and tail give every other event whole, and that row as stored", async () => {
    await writeHistory(storePath(home), false)
    const db = new Database(storePath(home))
    db.prepare("UPDATE events SET payload = '{not json' WHERE sequence = 5").run()
    db.close()
    const said = "the event at sequence 5 (CredentialRotationRequested, stream worker-w1) cannot be read: "
    const r = await run("journal", "replay")
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: expect.stringContaining(`svc: ${said}`) })
    // audit gives every other event's row, naming the damaged one (it gave none).
    const audited = await run("audit", "--json")
    expect({ code: audited.code, stderr: audited.stderr }).toEqual({
      code: 1,
      stderr: "svc: 1 event could not be read (sequence 5): the audit rows of every other event are shown; svc journal export writes those events as stored, with why\n"
    })
    expect((JSON.parse(audited.stdout) as { rows: Array<{ sequence: number }> }).rows.map((row) => row.sequence)).toEqual([1, 2, 6, 7, 8])
    // tail shows every other event, and that row with why (it showed none, only the error).
    const shown = "shown as stored, with why; every other event is shown whole (svc journal export writes them all)"
    const tail = await run("journal", "tail", "-n", "20")
    expect({ code: tail.code, stderr: tail.stderr }).toEqual({ code: 1, stderr: `svc: 1 event could not be read (sequence 5): ${shown}\n` })
    const tailLines = tail.stdout.trim().split("\n")
    expect(tailLines.map((l) => Number(l.trim().split(" ")[0]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(tailLines[4]).toMatch(/^\s+5  \d{4}-\d\d-\d\dT[\d:.]+Z  worker-w1#3  CredentialRotationRequested  cannot be read: \S/)
    const tailJson = await run("journal", "tail", "-n", "5", "--json")
    expect(tailJson.code).toBe(1)
    const document = JSON.parse(tailJson.stdout) as { events: Array<Record<string, unknown>> }
    expect(document.events.map((e) => e["sequence"])).toEqual([4, 5, 6, 7, 8])
    expect(document.events[1]).toMatchObject({ sequence: 5, payload: "{not json", unreadable: expect.stringContaining(said) })
    // The last two events do not hold it: said only of what is shown.
    expect((await run("journal", "tail", "-n", "2")).code).toBe(0)
    const exported = await run("journal", "export")
    expect(exported.code).toBe(1)
    expect(exported.stderr).toBe(
      'svc: 1 event could not be read (sequence 5): exported as stored, with "unreadable" saying why; every other event is exported whole\n'
    )
    const lines = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.map((l) => l["sequence"])).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(lines[4]).toEqual({
      sequence: 5,
      stream: "worker-w1",
      streamVersion: 3,
      type: "CredentialRotationRequested",
      schemaVersion: 1,
      recordedAt: expect.stringMatching(/^\d{4}-/),
      payload: "{not json",
      unreadable: expect.stringContaining(said)
    })
    expect(lines[5]).toMatchObject({ sequence: 6, type: "CredentialRotated", event: { _tag: "CredentialRotated" } })
  })

  it("a row whose time or version is not a number is damaged too: named, shown as stored, never a crash", async () => {
    await writeHistory(storePath(home), false)
    const db = new Database(storePath(home))
    db.prepare("UPDATE events SET recorded_at = 'yesterday' WHERE sequence = 3").run()
    db.prepare("UPDATE events SET stream_version = 'x' WHERE sequence = 6").run()
    db.close()
    // It was "internal error: RangeError: Invalid time value" (exit 70), half a --json document.
    const tail = await run("journal", "tail", "-n", "20")
    expect({ code: tail.code, stderr: tail.stderr }).toEqual({
      code: 1,
      stderr: "svc: 2 events could not be read (sequence 3, 6): shown as stored, with why; every other event is shown whole (svc journal export writes them all)\n"
    })
    const lines = tail.stdout.trim().split("\n")
    expect(lines).toHaveLength(8)
    expect(lines[2]).toMatch(/^\s+3  yesterday  \S+#\d+  \w+  cannot be read: its recorded time \(milliseconds since 1970\) is "yesterday", not a whole number from 0$/)
    expect(lines[5]).toMatch(/^\s+6  \S+  worker-w1#x  CredentialRotated  cannot be read: its stream version is "x", not a whole number from 1$/)
    const document = await run("journal", "tail", "-n", "20", "--json")
    expect(document.code).toBe(1)
    expect((JSON.parse(document.stdout) as { events: Array<{ sequence: number }> }).events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    const exported = await run("journal", "export")
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({
      code: 1,
      stderr: 'svc: 2 events could not be read (sequence 3, 6): exported as stored, with "unreadable" saying why; every other event is exported whole\n'
    })
    expect((await run("journal", "replay")).stderr).toMatch(/^svc: the event at sequence 3 \(\w+, stream \S+\) cannot be read: its recorded time/)
  })

  it("a payload edited into another shape is said in one sentence, by its own event's fields", async () => {
    await writeHistory(storePath(home), false)
    const db = new Database(storePath(home))
    db.prepare(`UPDATE events SET payload = '{"garbage":1}' WHERE sequence = 2`).run()
    db.close()
    const r = await run("journal", "replay")
    expect(r.code).toBe(1)
    // It was the whole union's tree: some twenty lines naming every other event.
    expect(r.stderr).toMatch(/^svc: the event at sequence 2 \(WorkerJoined, stream invite-i1\) cannot be read: [a-zA-Z]+: is missing(; [a-zA-Z]+: is missing)*\n$/)
  })

  it("a store SQLite cannot read, or that is not a whole svc store, is said so by every command, with exit 1 and no stack trace", async () => {
    const file = storePath(home)
    const commands = [["journal", "replay"], ["journal", "tail"], ["journal", "export"], ["journal", "history", "r1"], ["audit"]]
    const expectRefused = async (what: string, message: string) => {
      for (const args of commands) {
        const r = await run(...args)
        expect({ what, args, code: r.code, stderr: r.stderr }).toEqual({ what, args, code: 1, stderr: `svc: ${message}\n` })
      }
    }
    // Truncated: the second half of its pages gone.
    await writeHistory(file, true)
    const { size } = statSync(file)
    truncateSync(file, Math.floor(size / 2 / 4096) * 4096)
    for (const args of commands) {
      const r = await run(...args)
      expect({ args, code: r.code }).toEqual({ args, code: 1 })
      // Named, with what to do, whichever read found it (the first page, or a later one as it was read).
      expect(r.stderr).toMatch(new RegExp(`^svc: cannot read ${file}(: reading the journal after sequence \\d+)?: database disk image is malformed \\(the file is damaged: restore it from a backup, docs/operations\\.md, "Backups"; sqlite3's PRAGMA integrity_check says where\\)\n$`))
    }
    // Not a database at all.
    writeFileSync(file, "these are not the pages you are looking for\n".repeat(200))
    await expectRefused("text", `cannot read ${file}: file is not a database (the file is damaged: restore it from a backup, docs/operations.md, "Backups"; sqlite3's PRAGMA integrity_check says where)`)
    // A database with no tables (its first page only).
    rmSync(file)
    const bare = new Database(file)
    bare.pragma("user_version = 1")
    bare.close()
    await expectRefused("no tables", `${file} holds no svc journal: it has no tables (svc serve makes them when it first starts in this home)`)
    // A running owner's svc.sqlite copied alone: its tables were all in the -wal it was not copied with.
    rmSync(file)
    const live = new Database(join(home, "live.sqlite"))
    live.pragma("journal_mode = WAL")
    live.pragma("wal_autocheckpoint = 0")
    live.exec("CREATE TABLE events (sequence INTEGER PRIMARY KEY)")
    copyFileSync(join(home, "live.sqlite"), file)
    live.close()
    await expectRefused(
      "copied without -wal",
      `${file} holds no svc journal: it has no tables, and it is a WAL journal with no ${file}-wal beside it (or an empty one): a copy of a running owner's svc.sqlite made without its -wal file, which held them? Copy svc.sqlite-wal with it (or use sqlite3's .backup: docs/operations.md, "Backups")`
    )
    // Its -wal alone, or beside an empty file: refused, not read as an empty journal, and the -wal
    // left as it is (SQLite discards such a -wal as it opens the store: the commits were lost).
    rmSync(file, { force: true })
    rmSync(`${file}-shm`, { force: true })
    const wal = Buffer.alloc(4128, 1)
    writeFileSync(`${file}-wal`, wal)
    const kept = `which holds only the journal's last commits, and which SQLite would discard on opening it: copy svc.sqlite with it (docs/operations.md, "Backups"); nothing was opened or changed`
    await expectRefused("-wal alone", `there is no ${file}, but there is ${file}-wal (4,128 bytes), ${kept}`)
    writeFileSync(file, "")
    await expectRefused("-wal beside an empty file", `${file} is an empty file (0 bytes), but there is ${file}-wal (4,128 bytes), ${kept}`)
    const following = await run("journal", "tail", "--follow")
    expect({ code: following.code, stderr: following.stderr }).toEqual({ code: 1, stderr: `svc: ${file} is an empty file (0 bytes), but there is ${file}-wal (4,128 bytes), ${kept}\n` })
    expect(readFileSync(`${file}-wal`)).toEqual(wal)
    // svc serve does not start a new journal over it.
    const serve = await run("serve", "--listen", "127.0.0.1:0")
    expect({ code: serve.code, stderr: serve.stderr }).toEqual({
      code: 1,
      stderr: `svc: ${file} is an empty file (0 bytes), but there is ${file}-wal (4,128 bytes), ${kept}; svc serve does not start a new journal over it (remove the -wal to start one)\n`
    })
    expect(readFileSync(`${file}-wal`)).toEqual(wal)
    rmSync(file)
    rmSync(`${file}-wal`)
    // A table dropped: it read as an empty, clean journal.
    await writeHistory(file, true)
    const db = new Database(file)
    db.exec("DROP TABLE events")
    db.close()
    await expectRefused("dropped", `${file} is damaged: its table events is missing (migration 1 made it)`)
    // Migrated by a newer svc.
    rmSync(file)
    await writeHistory(file, true)
    const newer = new Database(file)
    newer.exec("INSERT INTO effect_sql_migrations (migration_id, name) VALUES (7, 'future_thing'); CREATE TABLE future_thing (x)")
    newer.close()
    await expectRefused("newer", `${file} was written by a newer svc: its store has migration 7 (future_thing), this svc knows up to 2; use that svc or a later one`)
  }, 60_000)

  it("rows deleted from the middle are said by replay, export and history, with exit 1 (they passed as clean)", async () => {
    const file = storePath(home)
    await writeHistory(file, false)
    await writeRun(file)
    const db = new Database(file)
    const runRows = db.prepare("SELECT sequence, stream_version AS v FROM events WHERE stream = 'run-r1' ORDER BY sequence").all() as Array<{ sequence: number; v: number }>
    expect(runRows.map((r) => r.v)).toEqual([1, 2, 3])
    db.prepare("DELETE FROM events WHERE sequence IN (4, 5)").run()
    db.prepare("DELETE FROM events WHERE sequence = ?").run(runRows[1]!.sequence)
    db.close()
    const replayed = await run("journal", "replay")
    expect(replayed.code).toBe(1)
    expect(replayed.stdout).toContain("divergence (journal, sequence 4): events 4-5 are missing: sequences run without gaps, so rows were deleted from the journal")
    expect(replayed.stdout).toContain(`divergence (journal, sequence ${runRows[1]!.sequence}): event ${runRows[1]!.sequence} is missing`)
    const doc = JSON.parse((await run("journal", "replay", "--json")).stdout)
    expect(doc.divergences.filter((d: { against: string }) => d.against === "journal")).toHaveLength(2)
    const exported = await run("journal", "export")
    expect(exported.code).toBe(1)
    expect(exported.stderr).toBe(`svc: the journal is not whole: events 4-5 are missing, event ${runRows[1]!.sequence} is missing (rows were deleted from it); every event it holds is exported\n`)
    expect(exported.stdout.trim().split("\n")).toHaveLength(11 - 3)
    const history = await run("journal", "history", "r1")
    expect(history.code).toBe(1)
    expect(history.stdout).toContain("run r1: 2 events in the journal")
    expect(history.stderr).toBe(
      "svc: the run's stream is not whole: its event 2 is missing (stream versions), deleted from the journal; the journal is not whole: 3 of its 11 events are missing (rows were deleted from it; svc journal replay names them), so this run's story may lack some\n"
    )
    const historyDoc = JSON.parse((await run("journal", "history", "r1", "--json")).stdout)
    expect(historyDoc.missingStreamVersions).toEqual([{ from: 2, to: 2 }])
    expect(historyDoc.missingEvents).toBe(3)
    // Each event with its own fields beside the sentence (scripts had only the prose).
    expect(historyDoc.events.map((e: { type: string; event?: { _tag: string; runId?: string } }) => [e.type, e.event?._tag, e.event?.runId])).toEqual([
      ["RunSubmitted", "RunSubmitted", "r1"],
      ["RunStopRequested", "RunStopRequested", "r1"]
    ])
  })

  it("history of a run whose last events were deleted says the journal is not whole, exit 1 (its versions left no gap, and it read as whole)", async () => {
    const file = storePath(home)
    await writeRun(file)
    await writeHistory(file, false)
    const db = new Database(file)
    // The run's stop (its last event), with more of the journal after it.
    const last = db.prepare("SELECT MAX(sequence) FROM events WHERE stream = 'run-r1'").pluck().get() as number
    db.prepare("DELETE FROM events WHERE sequence = ?").run(last)
    db.close()
    const history = await run("journal", "history", "r1")
    expect(history.code).toBe(1)
    expect(history.stdout).toContain("run r1: 2 events in the journal")
    expect(history.stderr).toBe("svc: the journal is not whole: 1 of its 11 events is missing (rows were deleted from it; svc journal replay names them), so this run's story may lack some\n")
  })

  it("history of a run whose events were the journal's last, deleted, says so from the latest checkpoint (no gap is left in the sequences)", async () => {
    const file = storePath(home)
    await writeHistory(file, false)
    await writeRun(file)
    // A checkpoint after the run's stop, then its placement and stop deleted: the journal ends at its submission.
    await Effect.runPromise(Effect.flatMap(Projections, (p) => p.checkpoint).pipe(Effect.provide(projectionsLayer.pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))), Effect.scoped))
    const db = new Database(file)
    const [head, submitted] = [db.prepare("SELECT MAX(sequence) FROM events").pluck().get() as number, db.prepare("SELECT MIN(sequence) FROM events WHERE stream = 'run-r1'").pluck().get() as number]
    db.prepare("DELETE FROM events WHERE sequence > ?").run(submitted)
    db.close()
    const history = await run("journal", "history", "r1")
    expect(history.code).toBe(1)
    expect(history.stdout).toContain("run r1: 1 event in the journal; 0 placement decisions")
    expect(history.stderr).toBe(
      `svc: the journal is not whole: its latest checkpoint is at sequence ${head}, past its last event ${submitted} (its last events were deleted, or it is a copy made without its -wal file), so this run's story may lack some\n`
    )
    expect(JSON.parse((await run("journal", "history", "r1", "--json")).stdout)).toMatchObject({ run: "r1", checkpointPastEnd: head })
    // The whole run deleted: "no run", and that the journal is not whole.
    const whole = new Database(file)
    whole.prepare("DELETE FROM events WHERE stream = 'run-r1'").run()
    whole.close()
    const none = await run("journal", "history", "r1")
    expect({ code: none.code, stderr: none.stderr }).toEqual({
      code: 1,
      stderr: `svc: the journal holds no run r1; it is not whole, though: its latest checkpoint is at sequence ${head}, past its last event ${submitted - 1} (its last events were deleted, or it is a copy made without its -wal file), and the run may have been among them\n`
    })
  })

  // As another user (nobody), who must be able to run svc from where it is built.
  const nobodyRunsSvc = process.getuid?.() === 0 && spawnSync(process.execPath, [SVC_BIN, "--version"], { uid: 65534, gid: 65534 }).status === 0
  it.skipIf(!nobodyRunsSvc)("a cleanly stopped home its reader cannot write is said so, with what to do, by every command (SQLite's 'attempt to write a readonly database' was shown) (needs root, to run as nobody)", async () => {
    const file = storePath(home)
    await writeHistory(file, true)
    expect(existsSync(`${file}-shm`)).toBe(false)
    chmodSync(dirname(home), 0o711)
    chownSync(home, 65534, 65534)
    chownSync(file, 65534, 65534)
    chmodSync(file, 0o400)
    chmodSync(home, 0o500)
    for (const args of [["journal", "replay"], ["journal", "export"], ["audit"]]) {
      const r = await svc(args, { cwd: "/", home, uid: 65534 })
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({
        args,
        code: 1,
        stderr: `svc: cannot read ${file}: ${home} cannot be written, and SQLite reads this store (a WAL journal) through ${file}-shm, which it would have to create there; copy the home somewhere writable and read the copy (SVC_HOME=COPY)\n`
      })
    }
  })

  it("a home every user may write to is read, saying that anyone could have replaced its journal (svc serve refuses it; replay said nothing)", async () => {
    await writeHistory(storePath(home), true)
    chmodSync(home, 0o777)
    for (const args of [["journal", "replay"], ["journal", "history", "r1"], ["audit"]]) {
      const r = await run(...args)
      expect(r.stderr, args.join(" ")).toContain(`note: ${home} (SVC_HOME) is writable by every user (mode 0777), who could have replaced its journal; it is read as it is\n`)
    }
    expect((await run("journal", "replay")).code).toBe(0)
    chmodSync(home, 0o700)
    expect((await run("journal", "replay")).stderr).toBe("")
  })

  it("a checkpoint digest of no form svc writes is a divergence; one of a later form is not compared", async () => {
    const file = storePath(home)
    await writeHistory(file, true)
    const setDigest = (digest: string) => {
      const db = new Database(file)
      db.prepare("UPDATE checkpoints SET digest = ?").run(digest)
      db.close()
    }
    setDigest("garbage")
    const garbage = await run("journal", "replay")
    expect(garbage.code).toBe(1)
    expect(garbage.stdout).toContain('divergence (checkpoint, sequence 8): the checkpoint\'s digest "garbage" is of no form svc writes (pN: and 64 hexadecimal digits): it was edited or damaged')
    expect(JSON.parse((await run("journal", "replay", "--json")).stdout).checkpoint).toMatchObject({ matches: false, form: "unknown" })
    setDigest(`p999:${"a".repeat(64)}`)
    const later = await run("journal", "replay")
    expect(later.code).toBe(0)
    expect(later.stdout).toContain("checkpoint at sequence 8: not compared (written by a newer svc, whose projections have a later form)")
  })

  it("tail --follow ends quietly when its reader goes away (| head), and follows a store made after it started", async () => {
    const file = storePath(home)
    // Started before the owner ever ran in this home: it waits for the store (it never showed an event).
    const child = spawn(process.execPath, [SVC_BIN, "journal", "tail", "--follow", "--json"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: home }, stdio: ["ignore", "pipe", "pipe"] })
    // Not left running by a test that fails before its reader goes away.
    onTestFinished(() => void child.kill())
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    let stdout = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
    await new Promise((resolve) => setTimeout(resolve, 700))
    await writeHistory(file, false)
    const written = (await run("journal", "export")).stdout.trim().split("\n").length
    const sequences = () => stdout.split("\n").filter((l) => l !== "").map((l) => (JSON.parse(l) as { sequence: number }).sequence)
    await waitFor("every event shown", async () => sequences(), (seen) => seen.includes(written), { timeoutMs: 10_000, everyMs: 100 })
    // Each once, from the first: the first 20 were shown twice (as the last 20 of an empty journal, then as new).
    expect(sequences()).toEqual(Array.from({ length: written }, (_, i) => i + 1))
    expect(JSON.parse(stdout.split("\n")[0]!)).toMatchObject({ sequence: 1, type: "WorkerInvited" })
    // The reader goes away; the next events written find the pipe closed.
    child.stdout.destroy()
    await writeRun(file)
    expect(await exited).toBe(0)
    expect(stderr).toBe("")
  }, 30_000)

  it("tail --follow started before its home exists waits for it, without making it, and follows the store made there", async () => {
    const later = join(home, "later")
    const file = storePath(later)
    const child = spawn(process.execPath, [SVC_BIN, "journal", "tail", "--follow", "--json"], { env: { PATH: process.env["PATH"] ?? "", HOME: home, SVC_HOME: later }, stdio: ["ignore", "pipe", "pipe"] })
    // Not left running by a test that fails before its reader goes away.
    onTestFinished(() => void child.kill())
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
    const first = new Promise<string>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(d.toString("utf8"))))
    // It exited 1 at once: "there is no svc home at ... no journal to read".
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(child.exitCode).toBe(null)
    expect(existsSync(later)).toBe(false)
    expect(stderr).toBe(`note: there is no svc home at ${later} (SVC_HOME) yet: waiting for svc serve to start there (Ctrl-C to stop)\n`)
    mkdirSync(later, { mode: 0o700 })
    await writeHistory(file, false)
    expect(JSON.parse((await first).split("\n")[0]!)).toMatchObject({ sequence: 1, type: "WorkerInvited" })
    child.stdout.destroy()
    await writeRun(file)
    expect(await exited).toBe(0)
    expect(stderr).toBe(`note: there is no svc home at ${later} (SVC_HOME) yet: waiting for svc serve to start there (Ctrl-C to stop)\n`)
  }, 30_000)

  it("tail --json of more events than one page is one document, the same text as built whole", async () => {
    const file = storePath(home)
    await Effect.runPromise(
      Effect.gen(function* () {
        const p = yield* Projections
        for (let i = 0; i < 1_100; i++) {
          yield* p.execute((r) => Decide.decideInvite({ inviteId: `i${i}`, tokenHash: hash(`t${i}`), name: null, scope: [], expiresAt: null, actor: "operator", now: T0 + i }, r))
        }
      }).pipe(Effect.provide(projectionsLayer.pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))), Effect.scoped)
    )
    const exported = (await run("journal", "export")).stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(exported).toHaveLength(1_100)
    const tail = await run("journal", "tail", "-n", "1050", "--json")
    expect(tail.stdout).toBe(`${JSON.stringify({ events: exported.slice(-1_050) }, null, 2)}\n`)
  }, 60_000)
})
