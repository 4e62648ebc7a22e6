/**
 * Port: the stdout and stderr of each attempt, kept as files (not journaled: output is not an
 * auditor's fact, and it can be large). On the owner they are the run's output; a worker keeps
 * its own copy while it runs an attempt and ships what is new with each heartbeat and report,
 * then removes it. The owner removes the output of the runs it forgets (docs/runs.md, "Output").
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import { MAX_RETAINED_RUNS } from "./Retention.js"

export type OutputStream = "stdout" | "stderr"

/** Output that could not be written (a full disk, a read-only directory), said as a job's outcome says it. */
export class OutputNotKept extends Data.TaggedError("OutputNotKept")<{ readonly message: string }> {}

/**
 * How many runs whose output was removed are remembered (`noteRemoved`): as many as an owner can
 * ever keep in memory (two generations of the largest `SVC_WORKFLOW_RETAINED_RUNS`), so that no
 * raise of the setting brings back a run the note has let go of; about 1.4 MB of ids.
 */
export const REMEMBERED_REMOVALS = 2 * MAX_RETAINED_RUNS

/** How many bytes each stream of an attempt holds. */
export interface OutputSizes {
  readonly stdout: number
  readonly stderr: number
}

/** How `append` treats the stream's output limit (domain/runs/OutputLimit.ts). */
export interface AppendOptions {
  /** The caller decided what to keep (`ownerPart`): the stream is cut after `text`, whose line follows it. */
  readonly cut?: boolean
  /** The caller does not know where `text` lies: as much as the file has room for under the limit (`keepOf`), then the line. */
  readonly within?: boolean
}

export interface RunFilesService {
  /** The most bytes of each stream of an attempt this machine keeps (SVC_WORKFLOW_OUTPUT_LIMIT). */
  readonly outputLimit: number
  /** The files an executor appends to. */
  readonly paths: (attempt: string) => { readonly stdout: string; readonly stderr: string }
  /**
   * Appends `text` (by default all of it: see `AppendOptions`); a write that fails may have
   * written part of it (`truncate` takes it back).
   */
  readonly append: (attempt: string, stream: OutputStream, text: string, options?: AppendOptions) => Effect.Effect<void, OutputNotKept>
  /** The size of each stream now (0 for one not there). */
  readonly sizes: (attempt: string) => Effect.Effect<OutputSizes>
  /**
   * Cuts each stream back to `sizes` (taken before appending): what a refused call wrote is taken
   * back, so that the same call made again does not write it twice. Best effort.
   */
  readonly truncate: (attempt: string, sizes: OutputSizes) => Effect.Effect<void>
  /**
   * The end of a stream, at most `maxBytes`, from the start of a line when it had to be cut ("" when
   * there is none yet); `skipped`: how many bytes before it are not shown.
   */
  readonly tail: (attempt: string, stream: OutputStream, maxBytes: number) => Effect.Effect<{ readonly text: string; readonly skipped: number }>
  /**
   * At most `max` bytes from `offset`, and the offset after them: whole UTF-8 characters only (the
   * start of one cut at the end is left for the next read), but when `ended` (the job has exited,
   * nothing more will come) the stream's last bytes are read as they are, a character the job left
   * incomplete as U+FFFD, as a reader of the whole file would see it.
   */
  readonly readFrom: (attempt: string, stream: OutputStream, offset: number, max: number, ended?: boolean) => Effect.Effect<{ readonly text: string; readonly next: number }>
  /** Every attempt that has output files here. */
  readonly attempts: Effect.Effect<ReadonlyArray<string>>
  /** Removes an attempt's files (none there: nothing to do); one that cannot be removed (a read-only directory) is said. */
  readonly remove: (attempt: string) => Effect.Effect<void, OutputNotKept>
  /**
   * Notes that the output files of these runs are being removed because the owner forgot them:
   * a later owner that keeps more settled runs (`SVC_WORKFLOW_RETAINED_RUNS` raised) brings them
   * back into memory without their files, and says so rather than show them as having printed
   * nothing. The note is made before the files go; the latest `REMEMBERED_REMOVALS` are kept.
   */
  readonly noteRemoved: (runs: ReadonlyArray<string>) => Effect.Effect<void>
  /** Whether the owner removed this run's output files when it forgot it (`noteRemoved`). */
  readonly wasRemoved: (run: string) => Effect.Effect<boolean>
}

export class RunFiles extends Context.Tag("svc/RunFiles")<RunFiles, RunFilesService>() {}
