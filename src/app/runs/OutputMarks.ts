/**
 * What the owner remembers, per attempt running on a worker, of the output it has written for it
 * (docs/runs.md, "Output"). In memory: a restart forgets it.
 *
 * - Per stream, what of the worker's copy it has written, from the pieces' `at` (revision 4,
 *   OutputPieces.ts): a piece sent again is written once.
 * - Per stream, where it is as to the owner's output limit (OutputLimit.ts, `ownerPart`).
 * - Why its output could not be written (a full disk, a read-only runs directory): said once in
 *   the log; nothing more of it is written (it would leave a gap), and the attempt fails when it
 *   reports, as a job on the owner fails whose output cannot be written (docs/executors.md).
 *
 * An attempt's entries go when its report is recorded, or when its output comes for an attempt
 * that no longer runs; one superseded or stopped whose worker never calls again (killed, its
 * machine gone) is dropped by a sweep once the entries have doubled since the last one, so they
 * stay as many as the attempts running, give or take a factor of two.
 */
import type { OutputStream } from "./RunFiles.js"
import type { OwnerCut } from "../../domain/runs/OutputLimit.js"
import { newPart, type PieceMark } from "../../domain/runs/OutputPieces.js"

type Marks = { readonly stdout?: PieceMark; readonly stderr?: PieceMark; readonly cut?: { readonly stdout?: OwnerCut; readonly stderr?: OwnerCut } }

/** An attempt's entries at one moment, to put back (a report refused). */
export interface MarksSnapshot {
  readonly marks: Marks | undefined
  readonly lost: string | undefined
}

const FIRST_SWEEP = 64

export class OutputMarks {
  private readonly written = new Map<string, Marks>()
  private readonly lost = new Map<string, string>()
  private sweepAt = FIRST_SWEEP

  /**
   * Of a piece of `attempt`'s `stream` lying at `at` in the worker's copy, the part not written
   * yet, noted as written, and where in the worker's copy it starts (it ends where the piece
   * does). `stillRuns` tells which attempts a sweep keeps.
   */
  newText(attempt: string, stream: OutputStream, at: readonly [number, number], text: string, stillRuns: (attempt: string) => boolean): { readonly text: string; readonly start: number } {
    const marks = this.written.get(attempt)
    if (marks === undefined) this.sweep(stillRuns)
    const before = marks?.[stream]
    const part = newPart(before, at, text)
    // Replaced, never changed, so that a snapshot holds.
    this.written.set(attempt, { ...marks, [stream]: part.mark })
    // Written whole from where it lies, or the rest past what was written before.
    return { text: part.write, start: part.write.length === text.length || before === undefined ? at[0] : before.upTo }
  }

  /** Where the stream is as to the owner's output limit (`ownerPart`); `open` until said otherwise. */
  cutOf(attempt: string, stream: OutputStream): OwnerCut {
    return this.written.get(attempt)?.cut?.[stream] ?? "open"
  }

  /** Notes where the stream is now as to the limit (after `newText`, which keeps the attempt's entry). */
  setCut(attempt: string, stream: OutputStream, now: OwnerCut): void {
    const marks = this.written.get(attempt) ?? {}
    if ((marks.cut?.[stream] ?? "open") === now) return
    this.written.set(attempt, { ...marks, cut: { ...marks.cut, [stream]: now } })
  }

  /** Its output could not be written: why. */
  lose(attempt: string, why: string, stillRuns: (attempt: string) => boolean): void {
    if (!this.lost.has(attempt)) this.sweep(stillRuns)
    this.lost.set(attempt, why)
  }

  /** Why its output could not be written, if it could not. */
  lostWhy(attempt: string): string | undefined {
    return this.lost.get(attempt)
  }

  snapshot(attempt: string): MarksSnapshot {
    return { marks: this.written.get(attempt), lost: this.lost.get(attempt) }
  }

  restore(attempt: string, snapshot: MarksSnapshot): void {
    if (snapshot.marks === undefined) this.written.delete(attempt)
    else this.written.set(attempt, snapshot.marks)
    if (snapshot.lost === undefined) this.lost.delete(attempt)
    else this.lost.set(attempt, snapshot.lost)
  }

  forget(attempt: string): void {
    this.written.delete(attempt)
    this.lost.delete(attempt)
  }

  /** How many attempts have entries. */
  get size(): number {
    return new Set([...this.written.keys(), ...this.lost.keys()]).size
  }

  private sweep(stillRuns: (attempt: string) => boolean): void {
    if (this.written.size + this.lost.size < this.sweepAt) return
    for (const map of [this.written, this.lost]) {
      for (const attempt of map.keys()) if (!stillRuns(attempt)) map.delete(attempt)
    }
    this.sweepAt = Math.max(FIRST_SWEEP, 2 * (this.written.size + this.lost.size))
  }
}
