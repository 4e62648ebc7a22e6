/** `vendors`: the catalog of model vendors, read as data. */
import * as Schema from "effect/Schema"
import { EnvVarName } from "../Formats.js"
import { Bool, byKind, choose, isMap, nonEmptyList, NonEmpty, oneOfValues, opt } from "../internal/schemaKit.js"

export const BaseUrl = byKind("a URL or a map with env, fallback and path", {
  string: NonEmpty,
  map: Schema.Struct({ env: opt(EnvVarName), fallback: opt(NonEmpty), path: opt(Schema.String) })
})

const EnvCredential = Schema.Struct({
  env: EnvVarName,
  item: opt(NonEmpty),
  field: opt(oneOfValues("username", "password", "notes", "uri"))
})
const Placeholder = Schema.Struct({ placeholder: NonEmpty })

export const VendorCredential = byKind("a map with env (and item, field), a map with placeholder, or null", {
  null: Schema.Null,
  map: choose("a map with env or placeholder", (u) => (isMap(u) && "placeholder" in u ? Placeholder : EnvCredential))
})

export const StructuredOutput = oneOfValues("native", "prompted")

export const Model = Schema.Struct({
  id: NonEmpty,
  label: NonEmpty,
  kind: oneOfValues("completion", "embedding", "decision"),
  roles: opt(Schema.Array(oneOfValues("default", "small"))),
  note: opt(Schema.String),
  local: opt(Bool),
  dimensions: opt(Schema.Int.pipe(Schema.positive())),
  structuredOutput: opt(StructuredOutput)
})

export const Vendor = Schema.Struct({
  id: NonEmpty,
  label: NonEmpty,
  baseUrl: opt(BaseUrl),
  credential: VendorCredential,
  compatible: opt(
    Schema.Array(
      Schema.Struct({ with: NonEmpty, baseUrl: opt(BaseUrl), structuredOutput: opt(StructuredOutput), egressSandbox: opt(Bool) })
    )
  ),
  models: nonEmptyList(Model, "model")
})
export type Vendor = typeof Vendor.Type
export const Vendors = Schema.Array(Vendor)
