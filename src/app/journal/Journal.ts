/**
 * Port: the owner's append-only event journal (docs/journal.md). Appends are atomic per
 * command and carry the stream version the command was decided against: a mismatch is a
 * `StreamConflict` and writes nothing. Beside the port, an in-memory layer for tests; the
 * SQLite adapter is in infra/journal.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Clock from "effect/Clock"
import { CURRENT_VERSION, RUN_STREAM_PREFIX, type Envelope, type Event } from "../../domain/journal/Events.js"

export interface AppendCommand {
  readonly stream: string
  /** The stream's version the command was decided against; 0 for a stream that must be new. */
  readonly expectedVersion: number
  readonly events: ReadonlyArray<Event>
}

export class StreamConflict extends Data.TaggedError("StreamConflict")<{
  readonly stream: string
  readonly expected: number
  readonly actual: number
}> {
  override get message() {
    return `stream ${this.stream} is at version ${this.actual}, not ${this.expected}: another command changed it first`
  }
}

/** A stored row as it is in the table, for an event that cannot be read (what `svc journal export` still writes of it). */
export interface StoredRowText {
  readonly sequence: number
  readonly stream: string
  readonly streamVersion: number
  readonly type: string
  readonly schemaVersion: number
  readonly recordedAt: number
  readonly payload: string
}

export class JournalError extends Data.TaggedError("JournalError")<{
  readonly reason: "Io" | "Corrupt" | "Closed"
  readonly message: string
  /** Corrupt: the row that cannot be read, as stored. */
  readonly row?: StoredRowText
}> {}

export interface JournalService {
  /**
   * Completes only after the commit that holds the events; answers their envelopes. A command
   * with no events writes nothing and succeeds.
   */
  readonly append: (command: AppendCommand) => Effect.Effect<ReadonlyArray<Envelope>, StreamConflict | JournalError>
  /** Up to `limit` envelopes with sequence greater than `after`, in order. */
  readonly read: (after: number, limit: number) => Effect.Effect<ReadonlyArray<Envelope>, JournalError>
  /** Every envelope of one stream, in stream order (a forgotten run read back: docs/runs.md). */
  readonly readStream: (stream: string) => Effect.Effect<ReadonlyArray<Envelope>, JournalError>
  /**
   * As `read`, of every stream but the runs' (`run-...`): the workers' and invites' events, what
   * the audit rows are made of, without reading (or decoding) the runs' many more.
   */
  readonly readOutsideRuns: (after: number, limit: number) => Effect.Effect<ReadonlyArray<Envelope>, JournalError>
  /** The last sequence written; 0 when empty. */
  readonly head: Effect.Effect<number, JournalError>
  /** How many events it holds: fewer than `head` when rows were deleted from it (sequences run without gaps). */
  readonly count: Effect.Effect<number, JournalError>
}

export class Journal extends Context.Tag("svc/Journal")<Journal, JournalService>() {}

interface MemoryState {
  readonly events: ReadonlyArray<Envelope>
  readonly versions: ReadonlyMap<string, number>
}

/** In memory, for tests of what stands on the port; same contract as the SQLite adapter. */
export const makeMemory = Effect.gen(function* () {
  const state = yield* Ref.make<MemoryState>({
    events: [],
    versions: new Map()
  })
  return Journal.of({
    append: (command) =>
      command.events.length === 0
        ? Effect.succeed([])
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.modify(state, (s): readonly [Effect.Effect<ReadonlyArray<Envelope>, StreamConflict>, MemoryState] => {
          const actual = s.versions.get(command.stream) ?? 0
          if (actual !== command.expectedVersion) {
            return [Effect.fail(new StreamConflict({ stream: command.stream, expected: command.expectedVersion, actual })), s]
          }
          const envelopes = command.events.map(
            (event, i): Envelope => ({
              sequence: s.events.length + i + 1,
              stream: command.stream,
              streamVersion: actual + i + 1,
              type: event._tag,
              schemaVersion: CURRENT_VERSION[event._tag],
              recordedAt: now,
              event
            })
          )
          const versions = new Map(s.versions).set(command.stream, actual + command.events.length)
          return [Effect.succeed(envelopes), { events: [...s.events, ...envelopes], versions }]
        }).pipe(Effect.flatten)
      ),
    read: (after, limit) => Effect.map(Ref.get(state), (s) => s.events.slice(Math.max(0, after), Math.max(0, after) + limit)),
    readStream: (stream) => Effect.map(Ref.get(state), (s) => s.events.filter((e) => e.stream === stream)),
    readOutsideRuns: (after, limit) => Effect.map(Ref.get(state), (s) => s.events.filter((e) => e.sequence > after && !e.stream.startsWith(RUN_STREAM_PREFIX)).slice(0, limit)),
    head: Effect.map(Ref.get(state), (s) => s.events.length),
    count: Effect.map(Ref.get(state), (s) => s.events.length)
  })
})

export const layerMemory = Layer.effect(Journal, makeMemory)
