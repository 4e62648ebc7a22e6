/** Programs a bag runs: long-running `services` and on-demand `scripts`. */
import * as Schema from "effect/Schema"
import { BagPath, EnvLiteral } from "../Formats.js"
import { Bool, matching, NonEmpty, oneOfValues, opt, StrList, withDefault } from "../internal/schemaKit.js"

export const Service = Schema.Struct({
  description: NonEmpty,
  entry: opt(BagPath),
  command: opt(NonEmpty),
  args: opt(Schema.Array(Schema.String)),
  env: opt(Schema.Array(EnvLiteral)),
  secrets: opt(StrList),
  "optional-secrets": opt(StrList),
  "working-directory": opt(BagPath),
  autostart: withDefault(oneOfValues("login", "manual"), () => "login" as const),
  serves: opt(oneOfValues("http")),
  health: opt(NonEmpty),
  socket: opt(NonEmpty),
  user: opt(matching(/^_[A-Za-z0-9_.-]+$/, "must be a macOS service account name starting with an underscore")),
  "local-only": opt(Bool)
})
export type Service = typeof Service.Type
export const Services = Schema.Record({ key: NonEmpty, value: Service })

export const Script = Schema.Struct({
  description: NonEmpty,
  entry: opt(BagPath),
  command: opt(NonEmpty),
  args: opt(Schema.Array(Schema.String)),
  env: opt(Schema.Array(EnvLiteral)),
  secrets: opt(StrList),
  "working-directory": opt(BagPath)
})
export type Script = typeof Script.Type
export const Scripts = Schema.Record({ key: NonEmpty, value: Script })
