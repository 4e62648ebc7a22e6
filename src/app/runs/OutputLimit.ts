/**
 * `SVC_WORKFLOW_OUTPUT_LIMIT`: how much of each stream of an attempt's output this machine keeps
 * (domain/runs/OutputLimit.ts; docs/runs.md, "How much output is kept"), set where the runtime's
 * other variables are (svc.yaml's `services.workflows.runtime.env`, or the environment, which
 * wins): bytes, or a whole number of KiB, MiB or GiB ("64MiB", "512 KiB").
 */
import * as Either from "effect/Either"
import { DEFAULT_OUTPUT_LIMIT, formatSize, GiB, KiB, MAX_OUTPUT_LIMIT, MiB, MIN_OUTPUT_LIMIT } from "../../domain/runs/OutputLimit.js"

export const OUTPUT_LIMIT_VARIABLE = "SVC_WORKFLOW_OUTPUT_LIMIT"

const UNITS: Record<string, number> = { "": 1, b: 1, kib: KiB, mib: MiB, gib: GiB }

/** The limit from its variable (unset or empty: the default), or what is wrong with it. */
export const parseOutputLimit = (raw: string | undefined): Either.Either<number, string> => {
  if (raw === undefined || raw.trim() === "") return Either.right(DEFAULT_OUTPUT_LIMIT)
  const wrong = (more = "") =>
    Either.left(`${OUTPUT_LIMIT_VARIABLE} must be a size from ${formatSize(MIN_OUTPUT_LIMIT)} to ${formatSize(MAX_OUTPUT_LIMIT)}, in bytes or in whole KiB, MiB or GiB (as 64MiB), not ${JSON.stringify(raw)}${more}`)
  const m = /^(\d+)\s*([A-Za-z]*)$/.exec(raw.trim())
  if (m === null) return wrong()
  const unit = UNITS[m[2]!.toLowerCase()]
  // KB and MB are left out on purpose: 1,000 or 1,024 would be a guess.
  if (unit === undefined) return wrong(`; ${m[2]} is not taken (KiB, MiB and GiB are 1,024 apart)`)
  const n = Number(m[1]) * unit
  if (!Number.isSafeInteger(n) || n < MIN_OUTPUT_LIMIT || n > MAX_OUTPUT_LIMIT) return wrong()
  return Either.right(n)
}
