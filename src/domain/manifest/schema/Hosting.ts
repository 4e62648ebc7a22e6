/** Infrastructure and hosting: `infra` and a provider bag's `provides`. */
import * as Schema from "effect/Schema"
import { BagPath, VARIABLE_NAME } from "../Formats.js"
import { byKind, matching, oneOfValues, opt } from "../internal/schemaKit.js"

/**
 * The spec allows one provider: the lowercase name of the infrastructure-as-code tool. We
 * read that tool as Terraform (see docs/manifest.md).
 */
export const INFRA_PROVIDER = "terraform"

export const Infra = Schema.Struct({
  provider: oneOfValues(INFRA_PROVIDER),
  root: BagPath,
  // Any environment variable name: Terraform's own inputs are `TF_VAR_<name>`, usually lower case.
  variables: opt(
    Schema.Array(matching(VARIABLE_NAME, "must be an environment variable name (letters, digits, underscores; not starting with a digit)"))
  )
})

export const Provides = Schema.Struct({
  // `Schema.Struct({})` would accept any non-null value (even `true`): spell out "an empty map".
  local: opt(
    byKind("an empty map {}", {
      map: Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
        Schema.filter((o) => Object.keys(o).length === 0 || "must be an empty map {}: local takes no options")
      )
    })
  ),
  tunnel: opt(
    Schema.Struct({
      reach: Schema.Array(oneOfValues("private", "public")),
      gates: opt(Schema.Array(oneOfValues("access")))
    })
  )
})
