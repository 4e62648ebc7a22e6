/** What a bag grants and restricts: `traits`, `bounds`, `credentials`, `permissions`, `tools`. */
import * as Schema from "effect/Schema"
import { EnvVarName, LocalName } from "../Formats.js"
import { byKind, NonEmpty, oneOfValues, opt, StrList, withDefault } from "../internal/schemaKit.js"

/**
 * The restriction inside a bound. The spec shows `deniedTools` and `bash.denyPrograms`; the
 * rest of the bound object is open (not shown), so other keys are kept as written.
 */
export const Bound = Schema.Struct(
  {
    deniedTools: opt(StrList),
    bash: opt(Schema.Struct({ denyPrograms: opt(StrList) }, Schema.Record({ key: Schema.String, value: Schema.Unknown })))
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

export const Trait = Schema.Struct({
  description: NonEmpty,
  // Spec: "`write` is read as `readwrite`"; the decoded value says what is granted.
  access: withDefault(
    Schema.transform(oneOfValues("read", "readwrite", "write"), Schema.Literal("read", "readwrite"), {
      strict: true,
      decode: (a) => (a === "write" ? "readwrite" : a),
      encode: (a) => a
    }),
    () => "read" as const
  ),
  includes: opt(StrList),
  harnessTraits: opt(Schema.Record({ key: NonEmpty, value: NonEmpty })),
  nativeTools: opt(Schema.Record({ key: NonEmpty, value: StrList })),
  bags: opt(StrList),
  namespaces: opt(StrList),
  skills: opt(StrList),
  instructions: opt(StrList),
  bounds: opt(StrList),
  bound: opt(Bound)
})
export type Trait = typeof Trait.Type

export const NamedBound = Schema.Struct({ description: NonEmpty, bound: Bound })

export const Traits = Schema.Record({ key: LocalName, value: Trait })
export const Bounds = Schema.Record({ key: LocalName, value: NamedBound })

export const Credential = Schema.Struct({
  source: oneOfValues("vault"),
  item: NonEmpty,
  field: oneOfValues("username", "password", "notes", "uri")
})
export const Credentials = Schema.Record({ key: EnvVarName, value: Credential })

export const Permission = Schema.Struct({
  kind: oneOfValues("automation", "accessibility", "screen-recording", "full-disk-access"),
  app: opt(NonEmpty),
  reason: NonEmpty
})

/**
 * `tools`: each entry one tool name mapped to its visibility. Tool metadata objects are only
 * served by a remote bag over the tool protocol, never read from a bag directory.
 */
export const ToolVisibility = oneOfValues("enabled", "deferred", "disabled")
export const ToolOverride = Schema.Record({ key: NonEmpty, value: ToolVisibility }).pipe(
  Schema.filter(
    (entry) =>
      Object.keys(entry).length === 1 ||
      "must map exactly one tool name to enabled, deferred or disabled (tool metadata objects come only from a remote bag over the tool protocol)"
  )
)
export const Tools = Schema.Array(byKind("a single-key map such as {search: deferred}", { map: ToolOverride }))
