/** `jobs`: the work a bag ships, and what runs it (`runs`). */
import * as Schema from "effect/Schema"
import { BagPath, durationAtMost, EnvLiteral, KebabName, Label, VARIABLE_NAME } from "../Formats.js"
import { byKind, choose, forbidden, isMap, matching, nonEmptyList, NonEmpty, oneOfValues, opt, Str, StrList } from "../internal/schemaKit.js"

/** A job's own version, part of its address `BAG:JOB@VERSION`, so it may not hold `:` or `@`. */
// At most 64 characters: part of the address workers advertise (a 70,000-character version passed
// the check, and every advertisement of the worker holding it was refused as too large).
export const JOB_VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/
export const JobVersion = byKind("a version string or number", {
  string: matching(JOB_VERSION, "must be a version such as 1.0.0 (letters, digits, '.', '_', '+', '-'; no ':' or '@'; 64 characters at most)"),
  number: Schema.Number.pipe(Schema.filter((n) => (Number.isFinite(n) && n >= 0) || "must be a non-negative number"))
})

const Command = byKind("a command string or a list of program and arguments", {
  string: NonEmpty,
  list: nonEmptyList(Schema.String, "program")
})

/**
 * A job's secret names: each becomes an environment variable of the job, read from a file of that
 * name (docs/executors.md, "Secrets"), so it must be a variable name (no `/`, no `..`).
 */
const SecretNames = Schema.Array(matching(VARIABLE_NAME, "must be a secret name usable as an environment variable: letters, digits and underscores, not starting with a digit"))

/** The longest a job's `timeout` may be: 365 days (the spec sets none; docs/manifest.md). */
export const JOB_TIMEOUT_MAX_S = 365 * 86_400

const execution = {
  secrets: opt(SecretNames),
  env: opt(Schema.Array(EnvLiteral)),
  "working-directory": opt(BagPath)
}

export const NodeRuns = Schema.Struct({
  using: Schema.Literal("node"),
  main: BagPath,
  command: opt(forbidden("applies only to process jobs (using: process)")),
  action: opt(forbidden("applies only to action jobs (using: action)")),
  ...execution
})

export const ProcessRuns = Schema.Struct({
  using: Schema.Literal("process"),
  // The program must be named; an argument is any string, " " and "" too (`tr " " _`, `-N ""`):
  // with no shell between, each reaches the program as written (executors.md).
  command: Schema.Array(Schema.String).pipe(
    Schema.filter((c) => {
      if (c.length === 0) return "must be a non-empty list: the program, then its arguments (no shell)"
      if (c[0]!.trim().length === 0) return { path: [0], message: "must name the program (then its arguments): it is empty" }
      // A program's name and arguments cannot hold one: such a job passed the check and failed at every run.
      const nul = c.findIndex((a) => a.includes("\u0000"))
      return nul < 0 || { path: [nul], message: "holds a NUL character, which no program's name or argument can" }
    })
  ),
  main: opt(forbidden("applies only to node jobs (using: node)")),
  action: opt(forbidden("applies only to action jobs (using: action)")),
  ...execution
})

const notForAction = forbidden("does not apply to action jobs: the agent's own context decides it")
export const ActionRuns = Schema.Struct({
  using: Schema.Literal("action"),
  action: matching(/^(?:[A-Za-z0-9][A-Za-z0-9._-]*:)?[^\s:@]+$/, "must name an action: <name> or <bag>:<name>"),
  main: opt(forbidden("applies only to node jobs (using: node)")),
  command: opt(forbidden("applies only to process jobs (using: process)")),
  secrets: opt(notForAction),
  env: opt(notForAction),
  "working-directory": opt(notForAction)
})

/**
 * When `using` is missing or wrong, what the other keys must be depends on it, so only `using`
 * is judged, and keys no kind of `runs` has (`usign`, `mian`): each is unknown, with the key it
 * is likely a typo of.
 */
const UnknownRuns = Schema.Struct({
  using: oneOfValues("node", "process", "action"),
  main: opt(Schema.Unknown),
  command: opt(Schema.Unknown),
  action: opt(Schema.Unknown),
  secrets: opt(Schema.Unknown),
  env: opt(Schema.Unknown),
  "working-directory": opt(Schema.Unknown)
})

export const Runs = choose<typeof NodeRuns.Type | typeof ProcessRuns.Type | typeof ActionRuns.Type>(
  "a map with using: node, process or action",
  (u) => {
    if (!isMap(u)) return undefined
    switch (u["using"]) {
      case "node":
        return NodeRuns
      case "process":
        return ProcessRuns
      case "action":
        return ActionRuns
      default:
        return UnknownRuns
    }
  }
)
export type Runs = typeof Runs.Type

/** JSON Schema content is checked by a JSON Schema compiler (see Check), not by this schema. */
export const JsonSchemaDocument = byKind("a JSON Schema object", {
  map: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

export const Job = Schema.Struct({
  description: opt(Str),
  version: opt(JobVersion),
  runs: Runs,
  input_schema: opt(JsonSchemaDocument),
  output_schema: opt(JsonSchemaDocument),
  requires: opt(
    Schema.Struct({
      tools: opt(StrList),
      secrets: opt(SecretNames),
      bins: opt(StrList),
      labels: opt(Schema.Array(Label))
    })
  ),
  preflight: opt(Schema.Struct({ command: Command, timeout: opt(durationAtMost(60)), hint: opt(Str) })),
  validate: opt(
    Schema.Struct({ files_exist: opt(Schema.Array(BagPath)), command: opt(Command), timeout: opt(durationAtMost(600)) })
  ),
  // A year at most: a longer one is a slip (99999999999999999999d was taken, and shown as 8.64e+24 s).
  timeout: opt(durationAtMost(JOB_TIMEOUT_MAX_S)),
  bounds: opt(StrList)
})
export type Job = typeof Job.Type

export const Jobs = Schema.Record({ key: KebabName, value: Job })
