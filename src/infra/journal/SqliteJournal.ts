/**
 * The journal on SQLite: WAL, `synchronous=FULL`, one writer. @effect/sql runs the migrations
 * and the checkpoints; appends and reads go through the writer's own better-sqlite3
 * connection. Appends made in one event-loop turn share one transaction (group commit): one
 * fsync serves them all, and each caller resumes only after the commit that holds its events.
 * Expected versions are checked in arrival order within the batch; a conflicting command
 * writes nothing and does not stop the others; a caller interrupted while it still waits
 * leaves the batch and writes nothing.
 *
 * The store is opened in SqliteStore.ts, its rows are read back in EventRows.ts, and the
 * checkpoints are written in SqliteCheckpoints.ts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as RuntimeFlags from "effect/RuntimeFlags"
import { CURRENT_VERSION, Event, type Envelope } from "../../domain/journal/Events.js"
import { storedPayload } from "../../domain/journal/Upcasting.js"
import { Checkpoints } from "../../app/journal/Checkpoints.js"
import { Journal, JournalError, StreamConflict, type AppendCommand } from "../../app/journal/Journal.js"
import { prepareOutsideRuns, preparePage, prepareStream, readPage, readStreamOf } from "./EventRows.js"
import { ioError } from "./IoError.js"
import { makeCheckpoints } from "./SqliteCheckpoints.js"
import { layerStore, openWriter } from "./SqliteStore.js"

const NONE: ReadonlyArray<Envelope> = []

/** Appends gathered into one transaction at most. */
const MAX_BATCH = 4_096

/**
 * An append waiting for its commit. It is a class instance, not an object literal, and keeps
 * the command's parts, not the caller's command object: V8 pretenures an object literal's
 * allocation site when it sees that site's objects survive scavenges, which appends waiting
 * for their commit do; pretenured appends then died in the old generation while holding young
 * payload strings, so every scavenge copied those and the heap grew until a full collection
 * (bench/journal-append: about a third of the journal's own time). The payloads come from
 * `map` for the same reason.
 */
class Pending {
  /** Set by the flush that accepts the command: its envelopes, in order. */
  envelopes: ReadonlyArray<Envelope> = NONE
  constructor(
    readonly stream: string,
    readonly expectedVersion: number,
    readonly events: ReadonlyArray<Event>,
    readonly payloads: ReadonlyArray<string>,
    readonly resume: (result: Effect.Effect<ReadonlyArray<Envelope>, StreamConflict | JournalError>) => void,
    /** The caller's fiber when it waits interruptibly (see `append`); undefined when it cannot be interrupted. */
    readonly fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  ) {}
}

/**
 * An interruptible caller that was interrupted while it waited has left: the fiber runtime
 * resumed it with the interruption, and its command is not written.
 */
const hasLeft = (pending: Pending): boolean =>
  pending.fiber !== undefined && !Cause.isEmpty(pending.fiber.getFiberRef(FiberRef.interruptedCause))

/** Each event type's own fields, without the tag, in declaration order. */
const payloadFields: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  Event.members.map((member) => [member.identifier, Object.keys(member.fields).filter((name) => name !== "_tag")] as const)
)

/**
 * The stored payload: the event without its tag (the `type` column holds it). Every event
 * schema's encoded form is its type form (plain JSON values, no transformations), and an event
 * is validated when constructed, so the instance's fields are the encoding.
 */
export const payloadOf = (event: Event): string => {
  const names = payloadFields.get(event._tag)
  if (names === undefined) {
    const { _tag, ...rest } = event as Event & Record<string, unknown>
    return JSON.stringify(storedPayload(event._tag, rest))
  }
  // The declared fields in their declared order (the order the constructor sets them in, so the
  // text is the same as the rest of the instance's own fields) on a plain object, which
  // JSON.stringify serializes faster than a rest copy of the instance.
  const source = event as unknown as Record<string, unknown>
  const plain: Record<string, unknown> = {}
  for (const name of names) plain[name] = source[name]
  return JSON.stringify(storedPayload(event._tag, plain))
}

/** Streams whose version the writer keeps in memory: the streams of the runs and workers in use, with room. */
export const STREAM_CACHE = 16_384

export interface JournalOptions {
  readonly streamCache?: number
  /**
   * Told, once the journal is open, when its last event was recorded: svc serve's clock goes on
   * from there when the machine's is behind it (SteadyClock.ts, `goOnFrom`), so that the
   * journal's times do not go back across a restart either.
   */
  readonly lastRecordedAt?: (at: number) => Effect.Effect<void>
}

export const make = (filename: string, { lastRecordedAt, streamCache = STREAM_CACHE }: JournalOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // When each row was recorded: the runtime's clock, as the events' own times (svc serve's never goes back).
    const clock = yield* Effect.clock
    // Checkpoints are written through this connection: it is durable too.
    yield* sql`PRAGMA synchronous = FULL`.pipe(Effect.mapError(ioError("setting synchronous=FULL")))
    const db = yield* openWriter(filename)
    const insert = db.prepare<[number, string, number, string, number, string, number]>(
      "INSERT INTO events (sequence, stream, stream_version, type, schema_version, payload, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    // The rows straight from the accepted commands' envelopes and payloads.
    const writeRows = db.transaction((accepted: ReadonlyArray<Pending>) => {
      for (const p of accepted) {
        const envelopes = p.envelopes
        for (let i = 0; i < envelopes.length; i++) {
          const e = envelopes[i]!
          insert.run(e.sequence, e.stream, e.streamVersion, e.type, e.schemaVersion, p.payloads[i]!, e.recordedAt)
        }
      }
    })
    const streamHead = db.prepare<[string], number>("SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream = ?").pluck()
    const page = preparePage(db)
    const outsideRuns = prepareOutsideRuns(db)
    const streamQuery = prepareStream(db)

    let head = db.prepare<[], number>("SELECT COALESCE(MAX(sequence), 0) FROM events").pluck().get() ?? 0
    if (lastRecordedAt !== undefined && head > 0) {
      const at = db.prepare<[number], number>("SELECT recorded_at FROM events WHERE sequence = ?").pluck().get(head)
      if (at !== undefined) yield* lastRecordedAt(at)
    }
    // The committed version of the streams seen lately, the one seen first dropped past
    // `streamCache` (every run is a stream of its own: kept for every stream, this map grew
    // with every run ever submitted). A stream not here is read from the table, which holds every
    // committed version, so the bound changes the cost of an append, never its answer.
    const versions = new Map<string, number>()
    const remember = (stream: string, v: number) => {
      const size = versions.size
      versions.set(stream, v)
      if (versions.size > size && versions.size > streamCache) versions.delete(versions.keys().next().value!)
    }
    const versionOf = (stream: string): number => {
      const v = versions.get(stream)
      if (v !== undefined) return v
      const stored = streamHead.get(stream) ?? 0
      remember(stream, stored)
      return stored
    }

    /** Decides each command of the batch against the stream versions, then commits them together. */
    const writeBatch = (batch: ReadonlyArray<Pending>, now: number) => {
      const local = new Map<string, number>()
      const accepted: Array<Pending> = []
      const conflicts: Array<{ readonly pending: Pending; readonly error: StreamConflict }> = []
      let sequence = head
      for (const pending of batch) {
        if (hasLeft(pending)) continue
        const { stream, expectedVersion, events } = pending
        const actual = local.get(stream) ?? versionOf(stream)
        if (actual !== expectedVersion) {
          conflicts.push({ pending, error: new StreamConflict({ stream, expected: expectedVersion, actual }) })
          continue
        }
        const envelopes: Array<Envelope> = []
        for (let i = 0; i < events.length; i++) {
          const event = events[i]!
          envelopes.push({
            sequence: ++sequence,
            stream,
            streamVersion: actual + i + 1,
            type: event._tag,
            schemaVersion: CURRENT_VERSION[event._tag],
            recordedAt: now,
            event
          })
        }
        pending.envelopes = envelopes
        local.set(stream, actual + events.length)
        accepted.push(pending)
      }
      let failure: JournalError | undefined
      if (accepted.length > 0) {
        try {
          writeRows(accepted)
          head = sequence
          for (const [stream, v] of local) remember(stream, v)
        } catch (cause) {
          failure = ioError("appending to the journal")(cause)
        }
      }
      return { accepted, conflicts, failure }
    }

    /**
     * Group commit without a writer fiber: an append parks its caller and joins `waiting`; the
     * first one of a turn schedules a flush with setImmediate, after the current microtasks and
     * I/O, so every append made in the meantime shares that transaction. Callers are resumed
     * once their commit is done (or refused), each with a ready `Exit`.
     */
    let waiting: Array<Pending> = []
    let scheduled = false
    let closed = false

    const flush = () => {
      scheduled = false
      const batch = waiting.length <= MAX_BATCH ? waiting : waiting.slice(0, MAX_BATCH)
      waiting = waiting.length <= MAX_BATCH ? [] : waiting.slice(MAX_BATCH)
      if (waiting.length > 0) schedule()
      const { accepted, conflicts, failure } = writeBatch(batch, clock.unsafeCurrentTimeMillis())
      for (const c of conflicts) c.pending.resume(Effect.fail(c.error))
      if (failure === undefined) for (const p of accepted) p.resume(Exit.succeed(p.envelopes))
      else for (const p of accepted) p.resume(Exit.fail(failure))
    }
    const schedule = () => {
      if (scheduled) return
      scheduled = true
      setImmediate(flush)
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        const left = waiting
        waiting = []
        for (const p of left) p.resume(Effect.fail(new JournalError({ reason: "Closed", message: "the journal was closed" })))
      })
    )

    /**
     * One fiber suspension per append and nothing else: no canceler is registered (an
     * `Effect.async` canceler wraps every call in `onInterrupt`, an uninterruptible region and
     * its restore, which cost more than the rest of the append). Instead the pending append
     * remembers the caller's fiber when the caller waits interruptibly; an interrupted caller is
     * resumed with its interruption by the fiber runtime at once, and the flush skips it, so a
     * caller that is interrupted while still waiting writes nothing, as before. Once flushed,
     * its events are committed whatever happens to the caller.
     */
    const append = (command: AppendCommand): Effect.Effect<ReadonlyArray<Envelope>, StreamConflict | JournalError> => {
      if (command.events.length === 0) return Effect.succeed([])
      return Effect.withFiberRuntime<ReadonlyArray<Envelope>, StreamConflict | JournalError>((fiber, status) => {
        if (closed) return Effect.fail(new JournalError({ reason: "Closed", message: "the journal was closed" }))
        const payloads = command.events.map(payloadOf)
        const waiter = RuntimeFlags.interruptible(status.runtimeFlags) ? (fiber as Fiber.RuntimeFiber<unknown, unknown>) : undefined
        return Effect.async<ReadonlyArray<Envelope>, StreamConflict | JournalError>((resume) => {
          waiting.push(new Pending(command.stream, command.expectedVersion, command.events, payloads, resume, waiter))
          schedule()
        })
      })
    }

    const read = (after: number, limit: number) => readPage(page, after, limit)
    const countQuery = db.prepare<[], number>("SELECT COUNT(*) FROM events").pluck()

    return Journal.of({
      append,
      read,
      readStream: (stream) => readStreamOf(streamQuery, stream),
      readOutsideRuns: (after, limit) => readPage(outsideRuns, after, limit),
      head: Effect.sync(() => head),
      count: Effect.try({ try: () => countQuery.get() ?? 0, catch: ioError("counting the journal's events") })
    })
  })

/** Journal and checkpoints on `filename` (created and migrated when new). */
export const layer = (filename: string, options: JournalOptions = {}) =>
  Layer.mergeAll(Layer.scoped(Journal, make(filename, options)), Layer.effect(Checkpoints, makeCheckpoints)).pipe(Layer.provideMerge(layerStore(filename)))
