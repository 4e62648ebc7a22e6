/**
 * Live projections against replay: commands decided, appended and applied live must leave the
 * same state as folding the journal from empty. Rejected and conflicting commands change
 * nothing. A checkpoint that disagrees with the fold is reported.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as HashMap from "effect/HashMap"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import fc from "fast-check"
import * as CheckpointSchedule from "../../../src/app/journal/CheckpointSchedule.js"
import { Checkpoints } from "../../../src/app/journal/Checkpoints.js"
import { Journal, layerMemory, StreamConflict } from "../../../src/app/journal/Journal.js"
import { layer as projectionsLayer, layerFrom as projectionsLayerFrom, Projections } from "../../../src/app/journal/Projections.js"
import { differingParts, foldJournal, PAGE, PROJECTION_FORM, replay, type LiveOwnerState } from "../../../src/app/journal/Replay.js"
import type { OwnerState } from "../../../src/domain/journal/OwnerState.js"
import { canonicalState, initialStateRetaining } from "../../../src/domain/journal/OwnerState.js"
import * as Decide from "../../../src/domain/workers/Decide.js"
import * as NodeHashing from "../../../src/infra/journal/NodeHashing.js"
import { snapshotText, storedSnapshot } from "../../../src/infra/journal/SnapshotText.js"
import { layer as sqliteLayer } from "../../../src/infra/journal/SqliteJournal.js"
import { hash } from "../../support/events.js"

const tempFile = () => join(mkdtempSync(join(tmpdir(), "svc-proj-")), "svc.sqlite")
const ownerLayer = (file: string) => projectionsLayer.pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))

type Op =
  | { readonly kind: "invite"; readonly scoped: boolean }
  | { readonly kind: "redeem"; readonly invite: number; readonly wrongToken: boolean; readonly key: number }
  | { readonly kind: "revokeInvite"; readonly invite: number }
  | { readonly kind: "requestRotation" | "completeRotation" | "revoke"; readonly worker: number }
  | { readonly kind: "session"; readonly worker: number; readonly live: boolean }
  | { readonly kind: "advertise"; readonly worker: number; readonly capacity: number; readonly gpu: boolean; readonly stale: boolean }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("invite" as const), scoped: fc.boolean() }),
  // key: 0 none (an svc before join keys), 1 the invite's own (a second join of it is answered again until the worker's hello), 2 a key of its own.
  fc.record({ kind: fc.constant("redeem" as const), invite: fc.nat(8), wrongToken: fc.boolean(), key: fc.nat(2) }),
  fc.record({ kind: fc.constant("revokeInvite" as const), invite: fc.nat(8) }),
  fc.record({ kind: fc.constantFrom("requestRotation" as const, "completeRotation" as const, "revoke" as const), worker: fc.nat(8) }),
  fc.record({ kind: fc.constant("session" as const), worker: fc.nat(8), live: fc.boolean() }),
  fc.record({ kind: fc.constant("advertise" as const), worker: fc.nat(8), capacity: fc.integer({ min: 0, max: 101 }), gpu: fc.boolean(), stale: fc.boolean() })
)

/** Runs one op as the owner would: decide against the live registry, append, apply. */
const run = (o: Op, i: number) =>
  Effect.gen(function* () {
    const projections = yield* Projections
    const now = 1_700_000_000_000 + i * 60_000
    const decide = (registry: Parameters<typeof Decide.decideInvite>[1]) => {
      switch (o.kind) {
        case "invite":
          return Decide.decideInvite({ inviteId: `i${i}`, tokenHash: hash(`t${i}`), name: null, scope: o.scoped ? ["hasher:checksum@1.0.0"] : [], expiresAt: null, actor: "operator", now }, registry)
        case "redeem": {
          const invites = [...registry.invites].map(([id]) => id).sort()
          const id = invites[o.invite % Math.max(1, invites.length)] ?? "none"
          return Decide.decideRedeem(
            {
              inviteId: id,
              tokenHash: o.wrongToken ? hash("wrong") : hash(`t${id.slice(1)}`),
              workerId: `w${i}`,
              name: `box-${i}`,
              credentialHash: hash(`c${i}`),
              previousCredentialHash: i % 3 === 2 ? hash(`c${i - 1}`) : null,
              ...(o.key === 0 ? {} : { joinKeyHash: hash(o.key === 1 ? `k${id}` : `k${i}`) }),
              now
            },
            registry
          )
        }
        case "revokeInvite": {
          const invites = [...registry.invites].map(([id]) => id).sort()
          return Decide.decideRevokeInvite({ inviteId: invites[o.invite % Math.max(1, invites.length)] ?? "none", actor: "operator", now }, registry)
        }
        default: {
          const workers = [...registry.workers].map(([id]) => id).sort()
          const workerId = workers[o.worker % Math.max(1, workers.length)] ?? "none"
          switch (o.kind) {
            case "requestRotation":
              return Decide.decideRequestRotation({ workerId, actor: "operator", now }, registry)
            case "completeRotation":
              return Decide.decideCompleteRotation({ workerId, credentialHash: hash(`c${i}`), now }, registry)
            case "revoke":
              return Decide.decideRevoke({ workerId, actor: "operator", now }, registry)
            case "session":
              return Decide.decideStartSession({ workerId, previousSessionLive: o.live, now }, registry)
            case "advertise":
              return Decide.decideAdvertise(
                {
                  workerId,
                  // Made in the latest session, or in the one before it (a process taken over: refused).
                  fence: (HashMap.get(registry.workers, workerId).pipe((w) => (w._tag === "Some" ? w.value.fence : 0))) - (o.stale ? 1 : 0),
                  capacity: o.capacity,
                  labels: ["os=linux", "arch=x64", ...(o.gpu ? ["gpu=true"] : [])],
                  capabilities: ["node"],
                  artifacts: [],
                  now
                },
                registry
              )
          }
        }
      }
    }
    return yield* Effect.either(projections.execute(decide))
  })

describe("live projections equal replayed projections", () => {
  it("for random command sequences (SQLite journal, reopened for replay)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 60 }), async (ops) => {
        const file = tempFile()
        const live = await Effect.runPromise(
          Effect.gen(function* () {
            for (let i = 0; i < ops.length; i++) yield* run(ops[i]!, i)
            return yield* (yield* Projections).state
          }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
        )
        const replayed = await Effect.runPromise(foldJournal().pipe(Effect.provide(sqliteLayer(file)), Effect.scoped))
        expect(differingParts(replayed.state, live)).toEqual([])
        expect(JSON.stringify(canonicalState(replayed.state))).toBe(JSON.stringify(canonicalState(live)))
      }),
      { numRuns: 25 }
    )
  })

  it("across many pages: the fold of the whole journal, and each hook sees the state at its own sequence", async () => {
    const file = tempFile()
    const total = 2 * PAGE + PAGE / 2 + 3
    const live = await Effect.runPromise(
      Effect.gen(function* () {
        const projections = yield* Projections
        const at: Array<string> = []
        for (let i = 1; i <= total; i++) {
          yield* projections.execute((r) => Decide.decideInvite({ inviteId: `i${i}`, tokenHash: hash(`t${i}`), name: null, scope: [], expiresAt: null, actor: "op", now: i }, r))
          if (i === PAGE || i === PAGE + 1 || i === total) at.push(JSON.stringify(canonicalState(yield* projections.state)))
        }
        return at
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
    const seen: Array<string> = []
    const hook = (state: OwnerState) => Effect.sync(() => void seen.push(JSON.stringify(canonicalState(state))))
    const replayed = await Effect.runPromise(
      foldJournal(new Map([[PAGE, hook], [PAGE + 1, hook], [total, hook]])).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    expect(replayed.events).toBe(total)
    expect(HashMap.size(replayed.state.registry.invites)).toBe(total)
    expect(seen).toEqual(live)
    expect(JSON.stringify(canonicalState(replayed.state))).toBe(live[2])
  })

  it.effect("a rejected command and a conflicting append change neither the journal nor the projections", () =>
    Effect.gen(function* () {
      const projections = yield* Projections
      const journal = yield* Journal
      yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
      const before = JSON.stringify(canonicalState(yield* projections.state))
      const rejected = yield* Effect.either(
        projections.execute((r) => Decide.decideInvite({ inviteId: "b", tokenHash: hash("t"), name: null, scope: ["not-an-address"], expiresAt: null, actor: "op", now: 2 }, r))
      )
      expect(Either.isLeft(rejected) && rejected.left._tag).toBe("CommandRejected")
      const conflict = yield* Effect.either(journal.append({ stream: "invite-a", expectedVersion: 0, events: [] }))
      expect(Either.isRight(conflict)).toBe(true) // an empty command writes nothing at all
      const stale = yield* Effect.either(
        journal.append({ stream: "invite-a", expectedVersion: 0, events: [(yield* journal.read(0, 1))[0]!.event] })
      )
      expect(Either.isLeft(stale) && stale.left._tag).toBe("StreamConflict")
      expect(yield* journal.head).toBe(1)
      expect(JSON.stringify(canonicalState(yield* projections.state))).toBe(before)
    }).pipe(
      Effect.provide(
        projectionsLayer.pipe(
          Layer.provideMerge(layerMemory),
          Layer.provideMerge(Layer.succeed(Checkpoints, { write: () => Effect.void, latest: Effect.succeed(undefined), snapshot: Effect.succeed(undefined) })),
          Layer.provideMerge(NodeHashing.layer)
        )
      )
    )
  )

  /** The memory journal, whose next `conflicts` appends fail as if another command of the stream had committed first. */
  const conflicting = (conflicts: number) =>
    Layer.effect(
      Journal,
      Effect.map(Journal, (journal) => {
        let left = conflicts
        return Journal.of({
          ...journal,
          append: (command) =>
            left-- > 0 ? Effect.fail(new StreamConflict({ stream: command.stream, expected: command.expectedVersion, actual: command.expectedVersion + 1 })) : journal.append(command)
        })
      })
    ).pipe(Layer.provideMerge(layerMemory))
  const withJournal = (journal: Layer.Layer<Journal>) =>
    projectionsLayer.pipe(
      Layer.provideMerge(journal),
      Layer.provideMerge(Layer.succeed(Checkpoints, { write: () => Effect.void, latest: Effect.succeed(undefined), snapshot: Effect.succeed(undefined) })),
      Layer.provideMerge(NodeHashing.layer)
    )
  const inviteDecided = (decided: { count: number }) => (r: Parameters<typeof Decide.decideInvite>[1]) => {
    decided.count++
    return Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r)
  }

  it.effect("a command that meets a stream conflict is decided again, up to five times", () =>
    Effect.gen(function* () {
      const decided = { count: 0 }
      const envelopes = yield* (yield* Projections).execute(inviteDecided(decided))
      expect(decided.count).toBe(6)
      expect(envelopes.map((e) => e.type)).toEqual(["WorkerInvited"])
      expect(HashMap.size((yield* (yield* Projections).state).registry.invites)).toBe(1)
    }).pipe(Effect.provide(withJournal(conflicting(5))))
  )

  it.effect("a sixth conflict in a row fails the command, with nothing written or applied", () =>
    Effect.gen(function* () {
      const decided = { count: 0 }
      const failed = yield* Effect.either((yield* Projections).execute(inviteDecided(decided)))
      expect(Either.isLeft(failed) && failed.left._tag).toBe("StreamConflict")
      expect(decided.count).toBe(6)
      expect(yield* (yield* Journal).head).toBe(0)
      expect((yield* (yield* Projections).state).sequence).toBe(0)
    }).pipe(Effect.provide(withJournal(conflicting(6))))
  )

  it("compares a checkpoint only with projections that keep as many settled runs as the owner did", async () => {
    const file = tempFile()
    // An owner keeping 2 settled runs per generation writes a checkpoint (and its snapshot).
    await Effect.runPromise(
      Effect.gen(function* () {
        const projections = yield* Projections
        yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
        yield* projections.checkpoint
      }).pipe(Effect.provide(projectionsLayerFrom(initialStateRetaining(2)).pipe(Layer.provideMerge(sqliteLayer(file)), Layer.provideMerge(NodeHashing.layer))), Effect.scoped)
    )
    const replayed = (retain: number) =>
      Effect.runPromise(replay(undefined, initialStateRetaining(retain)).pipe(Effect.provide(Layer.merge(sqliteLayer(file), NodeHashing.layer)), Effect.scoped))
    const same = await replayed(2)
    expect(same.checkpoint).toMatchObject({ sequence: 1, matches: true })
    expect(same.retained).toBe(2)
    expect(same.divergences).toEqual([])
    // Folded keeping another number (the setting changed since): said so, not a divergence.
    const other = await replayed(5_000)
    expect(other.checkpoint).toMatchObject({ sequence: 1, matches: null, form: "retention", retained: 2 })
    expect(other.retained).toBe(5_000)
    expect(other.divergences).toEqual([])
  })

  it.effect("an advertisement that changes nothing does not grow the journal", () =>
    Effect.gen(function* () {
      const projections = yield* Projections
      const journal = yield* Journal
      yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
      yield* projections.execute((r) => Decide.decideRedeem({ inviteId: "a", tokenHash: hash("t"), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, now: 2 }, r))
      const ad = (now: number, labels: ReadonlyArray<string>) =>
        projections.execute((r) => Decide.decideAdvertise({ workerId: "w", fence: 0, capacity: 4, labels, capabilities: ["node"], artifacts: [], now }, r))
      yield* ad(3, ["os=linux", "arch=x64"])
      const head = yield* journal.head
      yield* ad(8, ["arch=x64", "os=linux"])
      yield* ad(13, ["os=linux", "arch=x64"])
      expect(yield* journal.head).toBe(head)
      yield* ad(18, ["os=linux", "arch=x64", "gpu=true"])
      expect(yield* journal.head).toBe(head + 1)
    }).pipe(Effect.provide(ownerLayer(tempFile())))
  )
})

/** `svc journal replay` on the store `file`, with a running owner's state when given. */
const replayStore = (file: string, live?: LiveOwnerState) =>
  Effect.runPromise(replay(live === undefined ? undefined : { state: Effect.succeed(live) }).pipe(Effect.provide(Layer.merge(sqliteLayer(file), NodeHashing.layer)), Effect.scoped))

describe("checkpoints", () => {
  it("a checkpoint written by the owner matches the replay; a tampered one is reported as a divergence", async () => {
    const file = tempFile()
    await Effect.runPromise(
      Effect.gen(function* () {
        const projections = yield* Projections
        yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: "lab", scope: [], expiresAt: null, actor: "op", now: 1 }, r))
        yield* projections.execute((r) => Decide.decideRedeem({ inviteId: "a", tokenHash: hash("t"), workerId: "w", name: "box", credentialHash: hash("c"), previousCredentialHash: null, now: 2 }, r))
        yield* projections.checkpoint
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
    const good = await replayStore(file)
    expect(good.checkpoint).toMatchObject({ sequence: 2, matches: true })
    expect(good.divergences).toEqual([])

    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE checkpoints SET digest = ${`${PROJECTION_FORM}:${"0".repeat(64)}`}`
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    const bad = await replayStore(file)
    expect(bad.checkpoint).toMatchObject({ sequence: 2, matches: false })
    expect(bad.divergences).toEqual([
      { against: "checkpoint", sequence: 2, message: expect.stringMatching(new RegExp(`rebuilt to sequence 2 have digest ${PROJECTION_FORM}:[0-9a-f]{64}, the checkpoint says ${PROJECTION_FORM}:${"0".repeat(64)}$`)) }
    ])
    // One that differs only in its last digit is told apart (both were cut to 9 digits, and read alike).
    const right = bad.divergences[0]!.message.match(/have digest (\S+),/)![1]!
    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE checkpoints SET digest = ${`${right.slice(0, -1)}${right.endsWith("0") ? "1" : "0"}`}`
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    const last = (await replayStore(file)).divergences[0]!.message
    expect(last).toContain(`have digest ${right}, the checkpoint says ${right.slice(0, -1)}`)
    expect(last.endsWith(right)).toBe(false)
  })

  it("a checkpoint past the journal's end means events are missing", async () => {
    const file = tempFile()
    await Effect.runPromise(
      Effect.gen(function* () {
        const checkpoints = yield* Checkpoints
        yield* checkpoints.write({ sequence: 7, digest: `${PROJECTION_FORM}:${"a".repeat(64)}`, writtenAt: 0 })
      }).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped)
    )
    const report = await replayStore(file)
    expect(report.divergences.map((d) => d.message)).toEqual(["the checkpoint is at sequence 7, past the journal's last event 0: events it saw are missing"])
  })

  it("a checkpoint of an earlier form of the projections is not compared, and is no divergence", async () => {
    const file = tempFile()
    await Effect.runPromise(
      Effect.gen(function* () {
        const projections = yield* Projections
        yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: "lab", scope: [], expiresAt: null, actor: "op", now: 1 }, r))
        // What an owner before PROJECTION_FORM wrote: a bare SHA-256 of other projections.
        yield* (yield* Checkpoints).write({ sequence: 1, digest: "b".repeat(64), writtenAt: 0 })
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
    const report = await replayStore(file)
    expect(report.checkpoint).toMatchObject({ sequence: 1, matches: null, form: "earlier" })
    expect(report.divergences).toEqual([])
  })

  it("compares with a running owner's state when it is at the same sequence", async () => {
    const file = tempFile()
    const live = await Effect.runPromise(
      Effect.gen(function* () {
        const projections = yield* Projections
        yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
        return yield* projections.state
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
    const asLive = (s: typeof live) => ({ sequence: s.sequence, state: JSON.parse(JSON.stringify(canonicalState(s))) as unknown })
    const same = await replayStore(file, asLive(live))
    expect(same.owner).toEqual({ compared: true, matches: true })
    const drifted = { ...live, registry: { ...live.registry, invites: HashMap.empty() } }
    const different = await replayStore(file, asLive(drifted))
    expect(different.owner).toEqual({ compared: true, matches: false })
    expect(different.divergences).toEqual([{ against: "owner", sequence: 1, message: "the running owner's invites differ from the replayed ones" }])
  })
})

describe("start-up from a snapshot", () => {
  const invite = (id: string, now: number) =>
    Effect.flatMap(Projections, (p) => p.execute((r) => Decide.decideInvite({ inviteId: id, tokenHash: hash(id), name: id, scope: [], expiresAt: null, actor: "op", now }, r)))
  /** An owner that did 3 commands, wrote a checkpoint (and its snapshot), then did 2 more. */
  const history = async (file: string) =>
    Effect.runPromise(
      Effect.gen(function* () {
        yield* invite("a", 1)
        yield* invite("b", 2)
        yield* invite("c", 3)
        yield* (yield* Projections).checkpoint
        yield* invite("d", 4)
        yield* invite("e", 5)
        return JSON.stringify(canonicalState(yield* (yield* Projections).state))
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
  /** The owner opened again: how it started, and its state as canonical text. */
  const reopen = (file: string) =>
    Effect.runPromise(
      Effect.gen(function* () {
        const p = yield* Projections
        return { started: p.started, text: JSON.stringify(canonicalState(yield* p.state)) }
      }).pipe(Effect.provide(ownerLayer(file)), Effect.scoped)
    )
  const whole = async (file: string) => JSON.stringify(canonicalState((await Effect.runPromise(foldJournal().pipe(Effect.provide(sqliteLayer(file)), Effect.scoped))).state))
  const tamper = (file: string, change: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
    Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, change).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped))

  it("starts from the last snapshot and folds only the events after it, to the state the whole journal gives", async () => {
    const file = tempFile()
    const live = await history(file)
    const again = await reopen(file)
    expect(again.started).toEqual({ snapshot: 3, events: 2, note: null })
    expect(again.text).toBe(live)
    expect(again.text).toBe(await whole(file))
  })

  /** The stored snapshot's text, changed by `edit` and stored compressed again, as the owner stores it. */
  const editText = (edit: (text: string) => string) => (sql: SqlClient.SqlClient) =>
    Effect.flatMap(sql<{ state: Uint8Array }>`SELECT state FROM snapshots`, (rows) =>
      Effect.flatMap(
        Effect.promise(() => storedSnapshot(edit(snapshotText(rows[0]!.state)))),
        (stored) => sql`UPDATE snapshots SET state = ${stored}`
      )
    )

  it("stores the snapshot compressed, a small part of its text", async () => {
    const file = tempFile()
    await history(file)
    const [row] = await Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ kind: string; bytes: number; state: Uint8Array }>`SELECT typeof(state) AS kind, length(state) AS bytes, state FROM snapshots`).pipe(Effect.provide(sqliteLayer(file)), Effect.scoped))
    expect(row!.kind).toBe("blob")
    const text = snapshotText(row!.state)
    expect(JSON.parse(text)).toMatchObject({ sequence: 3 })
    expect(row!.bytes).toBeLessThan(text.length)
  })

  it("starts from a snapshot stored as plain text, as an svc before the ninth session stored it", async () => {
    const file = tempFile()
    const live = await history(file)
    await tamper(file, (sql) => Effect.flatMap(sql<{ state: Uint8Array }>`SELECT state FROM snapshots`, (rows) => sql`UPDATE snapshots SET state = ${snapshotText(rows[0]!.state)}`))
    const again = await reopen(file)
    expect(again.started).toEqual({ snapshot: 3, events: 2, note: null })
    expect(again.text).toBe(live)
  })

  it.each([
    ["a snapshot whose text does not match its digest", editText((text) => `${text} `), /does not match its digest/],
    ["a snapshot whose bytes cannot be decompressed", (sql: SqlClient.SqlClient) => sql`UPDATE snapshots SET state = ${new Uint8Array([1, 2, 3, 4])}`, /the snapshot could not be read: reading the snapshot: /],
    ["a snapshot of an earlier form of the projections", (sql: SqlClient.SqlClient) => sql`UPDATE snapshots SET digest = 'p2:' || substr(digest, 4)`, /earlier form/],
    ["a snapshot past the journal's end", (sql: SqlClient.SqlClient) => sql`UPDATE snapshots SET sequence = 99`, /past the journal's end \(5\)/]
  ] as const)("folds the whole journal instead of %s, and says why", async (_what, change, why) => {
    const file = tempFile()
    const live = await history(file)
    await tamper(file, change)
    const again = await reopen(file)
    expect(again.started).toMatchObject({ snapshot: null, events: 5, note: expect.stringMatching(why) })
    expect(again.text).toBe(live)
  })

  it("folds the whole journal when there is no snapshot, and a checkpoint writes the one the next start uses", async () => {
    const file = tempFile()
    await Effect.runPromise(Effect.zipRight(invite("a", 1), invite("b", 2)).pipe(Effect.provide(ownerLayer(file)), Effect.scoped))
    expect((await reopen(file)).started).toEqual({ snapshot: null, events: 2, note: null })
    await Effect.runPromise(Effect.flatMap(Projections, (p) => p.checkpoint).pipe(Effect.provide(ownerLayer(file)), Effect.scoped))
    expect((await reopen(file)).started).toEqual({ snapshot: 2, events: 0, note: null })
  })
})

describe("the checkpoint schedule", () => {
  it.scoped("writes a checkpoint every 5 minutes when the journal moved, and once more at a clean stop", () =>
    Effect.gen(function* () {
      const file = tempFile()
      const written: Array<number> = []
      const store = sqliteLayer(file)
      // The store's Checkpoints, wrapped to record each write.
      const recording = Layer.effect(
        Checkpoints,
        Effect.map(Checkpoints, (c) => Checkpoints.of({ ...c, write: (cp, state) => Effect.zipRight(Effect.sync(() => written.push(cp.sequence)), c.write(cp, state)) }))
      )
      const owner = projectionsLayer.pipe(
        Layer.provideMerge(Layer.merge(recording, Layer.service(Journal))),
        Layer.provideMerge(Layer.merge(store, NodeHashing.layer))
      )
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(CheckpointSchedule.layer().pipe(Layer.provideMerge(owner)), scope)
      const projections = Context.get(context, Projections)
      yield* projections.execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
      yield* TestClock.adjust("4 minutes")
      expect(written).toEqual([])
      yield* TestClock.adjust("1 minute")
      expect(written).toEqual([1])
      yield* TestClock.adjust("5 minutes") // nothing new: no second checkpoint
      expect(written).toEqual([1])
      yield* projections.execute((r) => Decide.decideInvite({ inviteId: "b", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 2 }, r))
      yield* Scope.close(scope, Exit.void)
      expect(written).toEqual([1, 2])
    })
  )

  it.scoped("writes none for an empty journal (a machine that is only a worker), and says nothing of one at its stop", () =>
    Effect.gen(function* () {
      const written: Array<number> = []
      const recording = Layer.effect(
        Checkpoints,
        Effect.map(Checkpoints, (c) => Checkpoints.of({ ...c, write: (cp, state) => Effect.zipRight(Effect.sync(() => written.push(cp.sequence)), c.write(cp, state)) }))
      )
      const owner = projectionsLayer.pipe(Layer.provideMerge(Layer.merge(recording, Layer.service(Journal))), Layer.provideMerge(Layer.merge(sqliteLayer(tempFile()), NodeHashing.layer)))
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(CheckpointSchedule.layer().pipe(Layer.provideMerge(owner)), scope)
      yield* TestClock.adjust("10 minutes")
      logged.length = 0
      yield* Scope.close(scope, Exit.void)
      expect(written).toEqual([])
      expect(logged.filter((l) => l.includes("checkpoint"))).toEqual([])
    }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  )

  const logged: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => void logged.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`))
  it.scoped("a checkpoint that cannot be written at stop (a full disk failed even SQLite's rollback: a defect) is said as an error, and the stop completes", () =>
    Effect.gen(function* () {
      const failing = Layer.effect(
        Checkpoints,
        Effect.map(Checkpoints, (c) => Checkpoints.of({ ...c, write: () => Effect.die(Object.assign(new Error("Failed to execute statement"), { cause: new Error("database or disk is full") })) }))
      )
      const owner = projectionsLayer.pipe(
        Layer.provideMerge(Layer.merge(failing, Layer.service(Journal))),
        Layer.provideMerge(Layer.merge(sqliteLayer(tempFile()), NodeHashing.layer))
      )
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(CheckpointSchedule.layer().pipe(Layer.provideMerge(owner)), scope)
      yield* Context.get(context, Projections).execute((r) => Decide.decideInvite({ inviteId: "a", tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now: 1 }, r))
      const closed = yield* Effect.exit(Scope.close(scope, Exit.void))
      expect(Exit.isSuccess(closed)).toBe(true)
      expect(logged).toContain(
        "ERROR the last checkpoint could not be written: Failed to execute statement: database or disk is full; the journal is whole, and the next start folds it from its start"
      )
    }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  )

  it.scoped("that error says the checkpoint the next start begins from when an earlier run wrote one (it said the journal's start)", () =>
    Effect.gen(function* () {
      const file = tempFile()
      const invite = (id: string, now: number) => (r: Parameters<typeof Decide.decideInvite>[1]) => Decide.decideInvite({ inviteId: id, tokenHash: hash("t"), name: null, scope: [], expiresAt: null, actor: "op", now }, r)
      // An earlier run: one event, and its checkpoint (with the snapshot the next start begins from).
      yield* Effect.scoped(
        Effect.gen(function* () {
          const p = yield* Projections
          yield* p.execute(invite("a", 1))
          yield* Effect.provide(p.checkpoint, NodeHashing.layer)
        })
      ).pipe(Effect.provide(projectionsLayer.pipe(Layer.provideMerge(Layer.merge(sqliteLayer(file), NodeHashing.layer)))))
      const failing = Layer.effect(
        Checkpoints,
        Effect.map(Checkpoints, (c) => Checkpoints.of({ ...c, write: () => Effect.die(Object.assign(new Error("Failed to execute statement"), { cause: new Error("database or disk is full") })) }))
      )
      const owner = projectionsLayer.pipe(Layer.provideMerge(Layer.merge(failing, Layer.service(Journal))), Layer.provideMerge(Layer.merge(sqliteLayer(file), NodeHashing.layer)))
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(CheckpointSchedule.layer().pipe(Layer.provideMerge(owner)), scope)
      expect(Context.get(context, Projections).started.snapshot).toBe(1)
      yield* Context.get(context, Projections).execute(invite("b", 2))
      logged.length = 0
      yield* Scope.close(scope, Exit.void)
      expect(logged.filter((l) => l.startsWith("ERROR"))).toEqual([
        "ERROR the last checkpoint could not be written: Failed to execute statement: database or disk is full; the journal is whole, and the next start folds it from the checkpoint at sequence 1"
      ])
    }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  )
})
