/**
 * How many settled runs the owner keeps in memory (docs/runs.md, "Runs kept in memory"):
 * `SVC_WORKFLOW_RETAINED_RUNS`, set where the runtime's other variables are (svc.yaml's
 * `services.workflows.runtime.env`, or the environment, which wins). Settled runs are kept in
 * two generations of this size, so memory holds between this many and twice as many of the
 * most recently settled runs; older ones are read from the journal when asked for. It is a
 * parameter of the projections: replay folds with the one the owner ran with.
 */
import * as Either from "effect/Either"
import { RETAINED_SETTLED_RUNS } from "../../domain/runs/Runs.js"

export const RETAINED_RUNS_VARIABLE = "SVC_WORKFLOW_RETAINED_RUNS"
/**
 * At most: the runs kept are in every checkpoint's snapshot (about 1.4 KB of JSON each, made on
 * the owner's thread in about 30 ms per 1,000 runs: bench/journal-replay), and one JSON text
 * cannot exceed about 512 MB in Node; 50,000 keeps the snapshot under about 140 MB.
 */
export const MAX_RETAINED_RUNS = 50_000

/** The generation size from its variable (unset or empty: the default), or what is wrong with it. */
export const parseRetainedRuns = (raw: string | undefined): Either.Either<number, string> => {
  if (raw === undefined || raw.trim() === "") return Either.right(RETAINED_SETTLED_RUNS)
  const text = raw.trim()
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < 1 || n > MAX_RETAINED_RUNS) {
    return Either.left(`${RETAINED_RUNS_VARIABLE} must be a whole number from 1 to ${MAX_RETAINED_RUNS.toLocaleString("en-US")}, not ${JSON.stringify(raw)}`)
  }
  return Either.right(n)
}
