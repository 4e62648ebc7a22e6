/**
 * The small value formats of bag.yaml: names, durations, KEY=VALUE literals, schedule
 * intervals and times. Each is a pure check with the rule text used in messages.
 */
import * as Schema from "effect/Schema"
import { byKind, matching } from "./internal/schemaKit.js"

/**
 * `name`: letters, digits, dots, underscores, hyphens (spec); starting with a letter or digit, and
 * at most 100 characters: the installed copy's directory is named after it, and a 5,000-character
 * name passed check and then failed install with the file system's ENAMETOOLONG.
 */
export const BAG_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/
export const BAG_NAME_RULE = "must use only ASCII letters, digits, dots, underscores and hyphens, starting with a letter or digit, 100 characters at most"
// The description is what a map keyed by bag names (`requires`) says of a bad key. (A secret's
// shape, here or anywhere in a manifest, is refused by rules/secrets.ts.)
export const BagName = matching(BAG_NAME, BAG_NAME_RULE).annotations({ description: BAG_NAME_RULE })

// At most 100 characters, as a bag's name: a job's name is part of its address, which workers
// advertise (a bag whose long names filled an advertisement silenced its worker).
export const KEBAB = /^(?=.{1,100}$)[a-z0-9]+(?:-[a-z0-9]+)*$/
export const KEBAB_RULE = "use kebab-case: lowercase letters and digits joined by single hyphens, 100 characters at most"
export const KebabName = Schema.String.pipe(Schema.filter((s) => KEBAB.test(s))).annotations({ description: KEBAB_RULE })

export const STORE_NAME = /^[a-z0-9][a-z0-9_-]*$/
export const STORE_RULE = "use lowercase letters, digits, hyphens and underscores, starting with a letter or digit"
export const StoreName = Schema.String.pipe(Schema.filter((s) => STORE_NAME.test(s))).annotations({ description: STORE_RULE })

export const ENV_VAR = /^[A-Z_][A-Z0-9_]*$/
export const ENV_VAR_RULE = "an environment variable name uses capitals, digits and underscores"
export const EnvVarName = Schema.String.pipe(Schema.filter((s) => ENV_VAR.test(s))).annotations({ description: ENV_VAR_RULE })

/** Trait and bound names are qualified as `<bag>:<name>`, so a colon inside one would be ambiguous. */
export const LOCAL_NAME = /^[^:\s]+$/
export const LocalName = Schema.String.pipe(Schema.filter((s) => LOCAL_NAME.test(s))).annotations({
  description: "a name may not contain a colon or spaces"
})

/** An environment variable's name, as a secret's name must be (it becomes one): letters, digits, underscores, not starting with a digit. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Non-secret `KEY=VALUE` literal (service, script, job and schedule `env`). */
// No NUL in the value: an environment cannot hold one (such a job passed the check and failed at every run).
export const ENV_LITERAL = /^[A-Za-z_][A-Za-z0-9_]*=[^\u0000]*$/
export const EnvLiteral = matching(ENV_LITERAL, "must be a KEY=VALUE literal with KEY a variable name (letters, digits and underscores, not starting with a digit), and no NUL character")

/**
 * A worker label `KEY=VALUE`. Labels travel comma-separated in `SVC_WORKFLOW_LABELS`, so
 * neither part may hold a comma; the key may not be empty.
 */
// No control characters (C0, DEL, C1) either: labels are shown in terminals, where one such as
// ESC ] 0 ; ... BEL retitled the operator's window (or, OSC 52, wrote its clipboard).
export const LABEL = /^[A-Za-z0-9][A-Za-z0-9._/-]*=[^,=\u0000-\u001f\u007f-\u009f]*$/
/** The longest label (the worker route's bound: longer ones are refused there). */
export const MAX_LABEL_LENGTH = 200
export const LABEL_RULE = `a KEY=VALUE label (key: letters, digits, '.', '_', '/', '-'; value: no commas, '=' or control characters; ${MAX_LABEL_LENGTH} characters at most)`
export const Label = matching(LABEL, `must be ${LABEL_RULE}`).pipe(Schema.filter((s) => s.length <= MAX_LABEL_LENGTH || `must be ${LABEL_RULE}: it is ${s.length} characters long`))

/** Why `label` is not a label a worker may advertise or a run prefer, or undefined. */
export const labelProblem = (label: string): string | undefined =>
  !LABEL.test(label) ? `is not ${LABEL_RULE}` : label.length > MAX_LABEL_LENGTH ? `is ${label.length} characters long: a label is at most ${MAX_LABEL_LENGTH}` : undefined

export const EVERY_INTERVALS = ["1m", "5m", "15m", "30m", "1h", "1d"] as const

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 }
const DURATION = /^(\d+(?:\.\d+)?)([smhd]?)$/

/**
 * Seconds of a duration: a number of seconds, or a number with `s`, `m`, `h` or `d`
 * (`90`, `"90"`, `30s`, `5m`, `2h`, `1d`). Zero and negative durations are refused: a job
 * with no time at all could never run.
 */
export const durationSeconds = (value: unknown): number | undefined => {
  const seconds = writtenSeconds(value)
  return seconds !== undefined && seconds > 0 ? seconds : undefined
}

/** The seconds a duration is written as, zero and negative ones included; undefined when it is not one. */
const writtenSeconds = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined
  if (typeof value !== "string") return undefined
  const match = DURATION.exec(value.trim())
  if (match === null) return undefined
  return Number(match[1]) * UNIT_SECONDS[match[2] === "" ? "s" : match[2]!]!
}

export const DURATION_RULE = "must be a duration: seconds as a number, or a number with s, m, h or d (90, 30s, 5m, 2h, 1d)"

/** Why `value` is not a duration svc takes: not one at all, or none of time (zero, negative). */
export const durationProblem = (value: unknown): string | undefined => {
  const seconds = writtenSeconds(value)
  if (seconds === undefined) return DURATION_RULE
  return seconds > 0 ? undefined : `must be more than 0 seconds (${JSON.stringify(value)} is no time at all)`
}

// Chosen by kind, not `Schema.Union`: a list or a map gets one message, not one per member.
export const Duration = byKind("a duration: seconds as a number, or a number with s, m, h or d", {
  number: Schema.Number,
  string: Schema.String
}).pipe(Schema.filter((v) => durationProblem(v) ?? true))

export const durationAtMost = (limit: number) =>
  Duration.pipe(
    Schema.filter((v) => (durationSeconds(v) ?? Infinity) <= limit || `must be at most ${limit} seconds${limit % 86_400 === 0 ? ` (${limit / 86_400}d)` : ""}`)
  )

const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

/**
 * Why `s` is not an ISO 8601 date and time with an explicit offset (`Z` or `+02:00`) on a real
 * calendar date, or undefined: a well-formed time on a day that does not exist says so.
 */
export const isoTimeProblem = (s: string): string | undefined => {
  const m = ISO_WITH_OFFSET.exec(s)
  if (m === null) return "must be login or an ISO 8601 time with an offset, such as 2026-12-01T09:00:00+01:00"
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? "0"].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  if (month < 1 || month > 12) return `has month ${m[2]}: there are 12`
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (day < 1 || day > daysInMonth) return `is a day that does not exist: ${m[1]}-${m[2]} has ${daysInMonth} days`
  if (hour > 23 || minute > 59 || second > 59) return `has no such time of day: ${m[4]}:${m[5]}${m[6] === undefined ? "" : `:${m[6]}`}`
  if (m[7] !== "Z") {
    const [oh, om] = m[7]!.slice(1).split(":").map(Number) as [number, number]
    if (oh > 23 || om > 59) return `has an offset that does not exist: ${m[7]}`
  }
  return undefined
}

export const At = Schema.String.pipe(Schema.filter((s) => s === "login" || (isoTimeProblem(s) ?? true)))

/** A path the manifest names must stay inside the bag: relative, no `..` climbing out. */
export const isInsideBag = (path: string): boolean => {
  if (path.length === 0 || path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.includes("\\")) return false
  let depth = 0
  for (const part of path.split("/")) {
    if (part === "..") depth--
    else if (part !== "." && part !== "") depth++
    if (depth < 0) return false
  }
  return true
}

/** A relative path that may leave the bag (`../sibling`): not absolute, POSIX separators. */
export const RelativePath = Schema.String.pipe(
  Schema.filter(
    (s) => (s.length > 0 && !s.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(s) && !s.includes("\\")) || "must be a relative path (no leading /, POSIX separators)"
  )
)

export const BagPath = Schema.String.pipe(
  Schema.filter((s) => isInsideBag(s) || "must be a relative path inside the bag (no leading /, no .. leaving it)")
)

export const ScriptFile = (exts: ReadonlyArray<string>) =>
  BagPath.pipe(Schema.filter((s) => exts.some((e) => s.endsWith(e)) || `must be a ${exts.join(" or ")} file`))
