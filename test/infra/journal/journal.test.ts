/**
 * One contract suite for the Journal port, run against the in-memory layer and the SQLite
 * adapter on a real file; then what only the SQLite adapter promises (pragmas, group commit,
 * reopening, upcasting a stored version-1 event).
 */
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import { Journal, layerMemory } from "../../../src/app/journal/Journal.js"
import { PlacementDecided, WorkerJoined } from "../../../src/domain/journal/Events.js"
import { place, PLACEMENT_RULES } from "../../../src/domain/placement/Placement.js"
import { layer as readerLayer } from "../../../src/infra/journal/JournalReader.js"
import { layer as sqliteLayer } from "../../../src/infra/journal/SqliteJournal.js"
import { layerStore } from "../../../src/infra/journal/SqliteStore.js"
import { advertised, invited, joined, revoked, session } from "../../support/events.js"

const tempFile = () => join(mkdtempSync(join(tmpdir(), "svc-journal-")), "svc.sqlite")

/** Stream invite-a at sequences 1 and 3, worker-w1 at 2. */
const twoStreamsInterleaved = Effect.gen(function* () {
  const journal = yield* Journal
  yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
  yield* journal.append({ stream: "worker-w1", expectedVersion: 0, events: [session("w1", 1)] })
  yield* journal.append({ stream: "invite-a", expectedVersion: 1, events: [joined("w1", "a")] })
})

const contract = (name: string, makeLayer: () => Layer.Layer<Journal, unknown>) =>
  describe(`Journal contract: ${name}`, () => {
    it.effect("appends and reads back in order, with sequences and stream versions", () =>
      Effect.gen(function* () {
        const journal = yield* Journal
        const first = yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
        const second = yield* journal.append({ stream: "invite-a", expectedVersion: 1, events: [joined("w1", "a")] })
        const third = yield* journal.append({ stream: "worker-w1", expectedVersion: 0, events: [session("w1", 1), advertised("w1")] })
        expect(first.map((e) => [e.sequence, e.streamVersion])).toEqual([[1, 1]])
        expect(second.map((e) => [e.sequence, e.streamVersion])).toEqual([[2, 2]])
        expect(third.map((e) => [e.sequence, e.streamVersion])).toEqual([[3, 1], [4, 2]])
        const all = yield* journal.read(0, 100)
        expect(all.map((e) => e.type)).toEqual(["WorkerInvited", "WorkerJoined", "SessionStarted", "WorkerAdvertised"])
        expect(all[1]!.event).toEqual(joined("w1", "a"))
        expect((yield* journal.read(2, 1)).map((e) => e.sequence)).toEqual([3])
        expect(yield* journal.head).toBe(4)
      }).pipe(Effect.provide(makeLayer()))
    )

    it.effect("reads one stream in stream order, and nothing for a stream it does not hold", () =>
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* twoStreamsInterleaved
        const stream = yield* journal.readStream("invite-a")
        expect(stream.map((e) => [e.sequence, e.streamVersion, e.type])).toEqual([
          [1, 1, "WorkerInvited"],
          [3, 2, "WorkerJoined"]
        ])
        expect(stream[1]!.event).toEqual(joined("w1", "a"))
        expect(yield* journal.readStream("invite-b")).toEqual([])
      }).pipe(Effect.provide(makeLayer()))
    )

    it.effect("reads every stream but the runs', in order, a page at a time", () =>
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
        yield* journal.append({ stream: "run-r1", expectedVersion: 0, events: [invited("r1")] })
        yield* journal.append({ stream: "worker-w1", expectedVersion: 0, events: [session("w1", 1)] })
        yield* journal.append({ stream: "run-r2", expectedVersion: 0, events: [invited("r2")] })
        yield* journal.append({ stream: "invite-a", expectedVersion: 1, events: [joined("w1", "a")] })
        expect((yield* journal.readOutsideRuns(0, 100)).map((e) => [e.sequence, e.stream])).toEqual([
          [1, "invite-a"],
          [3, "worker-w1"],
          [5, "invite-a"]
        ])
        expect((yield* journal.readOutsideRuns(1, 1)).map((e) => e.sequence)).toEqual([3])
        expect((yield* journal.readOutsideRuns(3, 100)).map((e) => e.sequence)).toEqual([5])
        expect(yield* journal.readOutsideRuns(5, 100)).toEqual([])
      }).pipe(Effect.provide(makeLayer()))
    )

    it.effect("refuses a stale expected version with a conflict that writes nothing", () =>
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
        const conflict = yield* Effect.either(journal.append({ stream: "invite-a", expectedVersion: 0, events: [joined("w1", "a"), joined("w2", "a")] }))
        expect(Either.isLeft(conflict) && conflict.left._tag).toBe("StreamConflict")
        if (Either.isLeft(conflict) && conflict.left._tag === "StreamConflict") {
          expect(conflict.left).toMatchObject({ stream: "invite-a", expected: 0, actual: 1 })
          expect(conflict.left.message).toMatch(/is at version 1, not 0/)
        }
        expect((yield* journal.read(0, 100)).length).toBe(1)
        expect(yield* journal.head).toBe(1)
      }).pipe(Effect.provide(makeLayer()))
    )

    it.effect("lets exactly one of two concurrent redemptions of one invite win", () =>
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
        const results = yield* Effect.all(
          ["w1", "w2", "w3"].map((w) => Effect.either(journal.append({ stream: "invite-a", expectedVersion: 1, events: [joined(w, "a")] }))),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Either.isRight).length).toBe(1)
        expect(results.filter(Either.isLeft).length).toBe(2)
        expect((yield* journal.read(0, 10)).length).toBe(2)
      }).pipe(Effect.provide(makeLayer()))
    )
  })

contract("memory", () => layerMemory)
contract("SQLite", () => sqliteLayer(tempFile()))
// The writer keeps the versions of a few streams in memory (SqliteJournal.STREAM_CACHE); with
// room for two, most streams of these tests are read back from the table: the same answers.
contract("SQLite, remembering 2 streams", () => sqliteLayer(tempFile(), { streamCache: 2 }))

describe("SQLite journal", () => {
  it("the read-only reader reads one stream as the writer does; a missing file reads as empty", async () => {
    const file = tempFile()
    await Effect.runPromise(twoStreamsInterleaved.pipe(Effect.provide(sqliteLayer(file)), Effect.scoped))
    const readStream = (f: string, stream: string) => Effect.runPromise(Effect.flatMap(Journal, (j) => j.readStream(stream)).pipe(Effect.provide(readerLayer(f)), Effect.scoped))
    expect((await readStream(file, "invite-a")).map((e) => [e.sequence, e.type])).toEqual([
      [1, "WorkerInvited"],
      [3, "WorkerJoined"]
    ])
    expect(await readStream(join(tmpdir(), "svc-no-such-journal.sqlite"), "invite-a")).toEqual([])
  })

  it.effect("answers a stream it no longer remembers from the table: conflicts and versions as before", () =>
    Effect.gen(function* () {
      const journal = yield* Journal
      for (let i = 0; i < 20; i++) yield* journal.append({ stream: `worker-w${i}`, expectedVersion: 0, events: [session(`w${i}`, 1)] })
      for (let i = 0; i < 20; i += 3) yield* journal.append({ stream: `worker-w${i}`, expectedVersion: 1, events: [session(`w${i}`, 2)] })
      // worker-w0 was written long ago (two streams remembered): a stale version still conflicts with what the table holds.
      const stale = yield* Effect.either(journal.append({ stream: "worker-w0", expectedVersion: 1, events: [session("w0", 3)] }))
      expect(Either.isLeft(stale) && stale.left).toMatchObject({ _tag: "StreamConflict", stream: "worker-w0", expected: 1, actual: 2 })
      const fresh = yield* Effect.either(journal.append({ stream: "worker-w1", expectedVersion: 0, events: [session("w1", 2)] }))
      expect(Either.isLeft(fresh) && fresh.left).toMatchObject({ _tag: "StreamConflict", stream: "worker-w1", expected: 0, actual: 1 })
      const next = yield* journal.append({ stream: "worker-w0", expectedVersion: 2, events: [session("w0", 3)] })
      expect(next[0]).toMatchObject({ sequence: 28, streamVersion: 3 })
      expect((yield* journal.readStream("worker-w0")).map((e) => e.streamVersion)).toEqual([1, 2, 3])
    }).pipe(Effect.provide(sqliteLayer(tempFile(), { streamCache: 2 })))
  )

  it.effect("runs with journal_mode=wal and synchronous=FULL", () =>
    Effect.gen(function* () {
      yield* Journal
      const sql = yield* SqlClient.SqlClient
      const [mode] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      expect(mode!.journal_mode).toBe("wal")
      expect(sync!.synchronous).toBe(2) // FULL
    }).pipe(Effect.provide(sqliteLayer(tempFile())))
  )

  it.effect("gathers concurrent appends into shared commits and answers each after its commit", () =>
    Effect.gen(function* () {
      const journal = yield* Journal
      const results = yield* Effect.all(
        Array.from({ length: 300 }, (_, i) => journal.append({ stream: `worker-w${i}`, expectedVersion: 0, events: [session(`w${i}`, 1)] })),
        { concurrency: "unbounded" }
      )
      const sequences = results.map((r) => r[0]!.sequence).sort((a, b) => a - b)
      expect(sequences).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
      expect(yield* journal.head).toBe(300)
      // Fewer transactions than appends: the writer batched them (each recordedAt is its batch's time).
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM events`
      expect(row!.n).toBe(300)
    }).pipe(Effect.provide(sqliteLayer(tempFile())))
  )

  it("keeps what was appended across a reopen, and continues the sequence and stream versions", async () => {
    const file = tempFile()
    await Effect.runPromise(
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    const after = await Effect.runPromise(
      Effect.gen(function* () {
        const journal = yield* Journal
        const stale = yield* Effect.either(journal.append({ stream: "invite-a", expectedVersion: 0, events: [joined("w", "a")] }))
        const next = yield* journal.append({ stream: "invite-a", expectedVersion: 1, events: [joined("w", "a")] })
        return { stale: Either.isLeft(stale), next: next[0]!, head: yield* journal.head }
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    expect(after).toMatchObject({ stale: true, next: { sequence: 2, streamVersion: 2 }, head: 2 })
  })

  it("tells, when it opens, when its last event was recorded (svc serve's clock goes on from there), and nothing when it is empty", async () => {
    const file = tempFile()
    const told: Array<number> = []
    const opened = <A, E>(body: Effect.Effect<A, E, Journal>) =>
      Effect.runPromise(body.pipe(Effect.provide(sqliteLayer(file, { lastRecordedAt: (at) => Effect.sync(() => void told.push(at)) })), Effect.scoped, Effect.provide(TestContext.TestContext)))
    await opened(Effect.void)
    expect(told).toEqual([])
    await opened(
      Effect.gen(function* () {
        const journal = yield* Journal
        yield* TestClock.setTime(1_000_000)
        yield* journal.append({ stream: "invite-a", expectedVersion: 0, events: [invited("a")] })
        yield* TestClock.setTime(1_000_500)
        yield* journal.append({ stream: "invite-b", expectedVersion: 0, events: [invited("b")] })
      })
    )
    expect(told).toEqual([])
    await opened(Effect.void)
    expect(told).toEqual([1_000_500])
  })

  it("reads stored version-1 events as today's: WorkerAdvertised's labels as a map, WorkerJoined without replaces", async () => {
    const file = tempFile()
    const fixture = readFileSync(new URL("../../fixtures/journal-v1.sql", import.meta.url), "utf8")
    const events = await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const statement of fixture.split(/;\s*\n/).map((s) => s.trim()).filter((s) => s.length > 0 && !s.startsWith("--"))) {
          yield* sql.unsafe(statement)
        }
        const journal = yield* Journal
        return yield* journal.read(0, 10)
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    const ad = events.find((e) => e.type === "WorkerAdvertised")!
    expect(ad.schemaVersion).toBe(2)
    expect(ad.event).toMatchObject({ _tag: "WorkerAdvertised", workerId: "w1", labels: ["arch=x64", "gpu=true", "os=linux"], capacity: 4 })
    const joined = events.find((e) => e.type === "WorkerJoined")!
    expect(joined.schemaVersion).toBe(3)
    expect(joined.event).toMatchObject({ _tag: "WorkerJoined", workerId: "w1", name: "lab-1", replaces: null, joinKeyHash: null })
  })

  it.effect("reads a stored version-2 WorkerJoined (no join key) as version 3 with joinKeyHash null; version 4 is refused", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const journal = yield* Journal
      const fields = `"workerId":"w2","inviteId":"i2","name":"lab-2","credentialHash":"${"ab".repeat(32)}","scope":["b:j@1.0.0"],"replaces":"w1","at":1700000002000`
      yield* sql.unsafe(`INSERT INTO events VALUES (1, 'invite-i2', 2, 'WorkerJoined', 2, '{${fields}}', 1700000002000)`)
      const [read] = yield* journal.read(0, 10)
      expect(read!.schemaVersion).toBe(3)
      expect(read!.event).toEqual(
        new WorkerJoined({ workerId: "w2", inviteId: "i2", name: "lab-2", credentialHash: "ab".repeat(32), scope: ["b:j@1.0.0"], replaces: "w1", joinKeyHash: null, at: 1700000002000 })
      )
      yield* sql.unsafe(`INSERT INTO events VALUES (2, 'invite-i3', 2, 'WorkerJoined', 4, '{${fields},"joinKeyHash":null}', 1700000002000)`)
      const later = yield* Effect.either(journal.read(1, 10))
      expect(Either.isLeft(later) && later.left.message).toContain("WorkerJoined version 4 is newer than this svc understands (at most 3)")
    }).pipe(Effect.provide(sqliteLayer(tempFile())))
  )

  it.effect("stores a PlacementDecided packed (version 5) and reads it back as the event it was; versions 2 to 4, the same layout, read alike (before 4 without the rules' revision); a later one is refused", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const journal = yield* Journal
      const candidates = Array.from({ length: 20 }, (_, i) => ({
        id: `w${i}`,
        name: `lab-${i}`,
        isOwner: false,
        revoked: i === 3,
        // Why it is not alive: the flags' silence bits, which made the layout's version 3 (and
        // `hello`, version 5).
        advertisementAlive: i !== 4 && i !== 5,
        ...(i === 4 ? { silence: "never" as const } : i === 5 ? { silence: "hello" as const } : {}),
        scope: [],
        labels: ["os=linux", "pool=a"],
        capabilities: ["node"],
        bins: [],
        artifacts: [{ address: "a:b@1.0.0", digest: "sha256:d" }],
        slots: { capacity: 2, used: i % 3 }
      }))
      const activity = { id: "r1", address: "a:b@1.0.0", digest: "sha256:d", executor: "node", remoteEligible: true, requiredLabels: ["pool=a"], requiredBins: [], preferredLabels: [], bounds: [], declinedBy: [], rules: PLACEMENT_RULES }
      const quotas = { logical: null, endpoint: null }
      const o = place(activity, candidates, quotas)
      const event = new PlacementDecided({
        runId: "r1",
        attempt: 1,
        activity,
        candidates,
        quotas,
        notes: [],
        outcome: o.outcome,
        host: o.outcome === "placed" ? o.host : null,
        verdicts: o.verdicts,
        record: { executionHost: null, inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "x", limits: { timeoutMs: null, bounds: [] } },
        at: 5
      })
      yield* journal.append({ stream: "run-r1", expectedVersion: 0, events: [event] })
      const [row] = yield* sql<{ schema_version: number; payload: string }>`SELECT schema_version, payload FROM events`
      expect(row!.schema_version).toBe(5)
      expect(JSON.parse(row!.payload)).toHaveProperty("exclusions")
      expect(JSON.parse(row!.payload)).toHaveProperty("activity.rules", PLACEMENT_RULES)
      const [read] = yield* journal.read(0, 10)
      expect(read!.event).toEqual(event)
      expect((read!.event as PlacementDecided).candidates[5]).toHaveProperty("silence", "hello")
      // As version 4 wrote it (the same layout, no `hello` among its silences).
      yield* sql`UPDATE events SET schema_version = 4`
      expect((yield* journal.read(0, 10))[0]!.event).toEqual(event)
      // As the builds before version 4 wrote it (no rules' revision), and before version 3 (some
      // with the silence bits already): read as decisions by revision 1 of the rules.
      const { rules: _, ...unrevised } = activity
      yield* sql`UPDATE events SET payload = json_remove(payload, '$.activity.rules')`
      for (const version of [3, 2]) {
        yield* sql`UPDATE events SET schema_version = ${version}`
        const [before] = yield* journal.read(0, 10)
        expect(before!.event).toEqual(new PlacementDecided({ ...event, activity: unrevised }))
        expect((before!.event as PlacementDecided).activity).not.toHaveProperty("rules")
      }
      // A row of version 3 edited to carry a revision is still a decision made before revisions (revision 1).
      yield* sql`UPDATE events SET schema_version = 3, payload = json_set(payload, '$.activity.rules', 2)`
      const [edited] = yield* journal.read(0, 10)
      expect((edited!.event as PlacementDecided).activity).not.toHaveProperty("rules")
      // A reader refuses a version newer than it knows, rather than drop what it cannot read.
      yield* sql`UPDATE events SET schema_version = 6`
      const later = yield* Effect.either(journal.read(0, 10))
      expect(Either.isLeft(later) && later.left.message).toContain("PlacementDecided version 6 is newer than this svc understands (at most 5)")
    }).pipe(Effect.provide(sqliteLayer(tempFile())))
  )

  it.effect("reports an event it cannot read as Corrupt, naming where", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const journal = yield* Journal
      yield* journal.append({ stream: "worker-w1", expectedVersion: 0, events: [revoked("w1")] })
      yield* sql`INSERT INTO events VALUES (2, 'worker-w1', 2, 'WorkerRevoked', 1, '{"workerId": 5}', 0)`
      const read = yield* Effect.either(journal.read(1, 10))
      expect(Either.isLeft(read) && read.left).toMatchObject({ _tag: "JournalError", reason: "Corrupt" })
      void layerStore
    }).pipe(Effect.provide(sqliteLayer(tempFile())))
  )
})
