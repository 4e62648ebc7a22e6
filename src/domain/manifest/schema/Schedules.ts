/** `schedules`: work run on a trigger (one of every, cron, at) with one payload (job, action, entry). */
import * as Schema from "effect/Schema"
import { At, BagPath, Duration, EnvLiteral, EVERY_INTERVALS, KebabName } from "../Formats.js"
import { Bool, byKind, matching, NonEmpty, oneOfValues, opt, Str, StrList, withDefault } from "../internal/schemaKit.js"

/** `<job>`, `<bag>:<job>`, either with `@<version>`. */
export const JOB_REFERENCE = /^(?:([A-Za-z0-9][A-Za-z0-9._-]*):)?([a-z0-9]+(?:-[a-z0-9]+)*)(?:@([A-Za-z0-9][A-Za-z0-9._+-]*))?$/

export const Schedule = Schema.Struct({
  description: opt(Str),
  every: opt(oneOfValues(...EVERY_INTERVALS)),
  cron: opt(NonEmpty),
  timezone: withDefault(NonEmpty, () => "UTC"),
  at: opt(At),
  job: opt(matching(JOB_REFERENCE, "must name a job: <job> or <bag>:<job>, optionally with @<version>")),
  action: opt(
    byKind("an action name or an inline action", {
      string: matching(/^(?:[A-Za-z0-9][A-Za-z0-9._-]*:)?[^\s:@]+$/, "must name an action: <name> or <bag>:<name>"),
      map: Schema.Record({ key: Schema.String, value: Schema.Unknown })
    })
  ),
  entry: opt(BagPath),
  args: opt(Schema.Array(Schema.String)),
  env: opt(Schema.Array(EnvLiteral)),
  secrets: opt(StrList),
  timeout: opt(Duration),
  identity: opt(NonEmpty),
  inputs: opt(byKind("a map of inputs", { map: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })),
  traits: opt(StrList),
  bounds: opt(StrList),
  overlap: withDefault(oneOfValues("skip", "queue"), () => "skip" as const),
  catch_up: withDefault(oneOfValues("none", "once"), () => "once" as const),
  enabled: withDefault(Bool, () => true)
})
export type Schedule = typeof Schedule.Type

export const Schedules = Schema.Record({ key: KebabName, value: Schedule })
