/**
 * An attempt's output on its way from a worker to its owner (docs/runs.md, "Output"): read from
 * the worker's copy as deltas that fit in what is left of a body (at most 64 KiB), and carried
 * by one call at a time. A piece whose answer was lost goes again from the same offset; its `at`
 * (revision 4) lets the owner write it once (OutputPieces.ts). Heartbeats (WorkHeartbeats.ts)
 * and the report (WorkReports.ts) both send it.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { RunFilesService } from "../runs/RunFiles.js"
import { jsonBytes, MAX_BODY_BYTES, type OutputDelta } from "./Protocol.js"
import type { Running } from "./Work.js"

/** At most this many bytes of one stream in one delta (the protocol's limit on its characters). */
const MAX_DELTA = 65_536
/** Room kept in every body for what the estimate of the rest may miss. */
export const BODY_SLACK = 1_024
/** A report's body without output at most, so that a quarter of a body is left for output. */
export const MAX_REPORT_BYTES = (MAX_BODY_BYTES / 4) * 3 - BODY_SLACK
/**
 * What one delta adds to a body besides its text: the field names, the attempt id, the quotes,
 * and where its pieces lie (`at`, revision 4; counted at its largest, sent or not).
 */
const LARGEST_AT = [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER] as const
export const deltaOverhead = (attempt: string) => jsonBytes({ attempt, stdout: "", stderr: "", at: { stdout: LARGEST_AT, stderr: LARGEST_AT } }) + 1

/**
 * An attempt's output goes in one call at a time, so that no piece goes twice: the
 * heartbeats carry it until its report begins (`Running.reporting`); from then on the report
 * does, once the heartbeat that may be carrying some of it is answered (`carrying`, `carried`).
 */
export interface Carriage {
  readonly carrying: Set<string>
  carried: Deferred.Deferred<void>
}

/** Answers once no heartbeat in flight carries the attempt's output. */
export const notCarried = (c: Carriage, attempt: string): Effect.Effect<void> =>
  c.carrying.has(attempt) ? Effect.zipRight(Deferred.await(c.carried), Effect.suspend(() => notCarried(c, attempt))) : Effect.void

export const makeOutputDeltas = (files: RunFilesService, revision: () => number) => {
  /**
   * One stream's output from `offset`, as much as `budget` bytes of JSON can carry (escapes and
   * UTF-8 included); `more` when the read was cut short, by the budget or the delta's limit,
   * so output may be left.
   */
  const readWithin = (attempt: string, stream: "stdout" | "stderr", offset: number, budget: number, ended: boolean) =>
    Effect.gen(function* () {
      let max = Math.min(MAX_DELTA, budget - 2)
      while (max > 0) {
        const read = yield* files.readFrom(attempt, stream, offset, max, ended)
        const bytes = jsonBytes(read.text)
        // A read that filled what was asked (but for a character cut at its end) may have left some.
        if (bytes <= budget) return { text: read.text, next: read.next, bytes, more: read.next - offset > max - 4 }
        // Escapes made it heavier than its bytes: ask for proportionally fewer.
        max = Math.floor((max * budget) / bytes) - 8
      }
      return { text: "", next: offset, bytes: 2, more: true }
    })

  /**
   * An attempt's output since the owner last had it, as much as `budget` bytes of a body can
   * carry, and where the next delta starts; `more` when some may be left.
   */
  const delta = (attempt: string, r: Running, budget: number) =>
    Effect.gen(function* () {
      const room = budget - deltaOverhead(attempt)
      // Reporting, the job has exited: its streams are whole, a character it left incomplete included.
      const out = yield* readWithin(attempt, "stdout", r.offsets.stdout, room, r.reporting)
      const err = yield* readWithin(attempt, "stderr", r.offsets.stderr, room - out.bytes + 2, r.reporting)
      // Revision 4: where the pieces lie, so that a piece sent again is written once.
      const at = revision() >= 4 ? { at: { stdout: [r.offsets.stdout, out.next] as const, stderr: [r.offsets.stderr, err.next] as const } } : {}
      return {
        delta: { attempt, stdout: out.text, stderr: err.text, ...at } satisfies OutputDelta,
        next: { stdout: out.next, stderr: err.next },
        bytes: deltaOverhead(attempt) + out.bytes + err.bytes - 4,
        more: out.more || err.more
      }
    })

  return { delta }
}

/** An attempt's next delta (`makeOutputDeltas`). */
export type Delta = ReturnType<typeof makeOutputDeltas>["delta"]
