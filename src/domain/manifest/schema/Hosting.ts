/** Infrastructure and hosting: `infra` and a provider bag's `provides`. */
import { Schema } from "effect"
import { BagPath, EnvVarName } from "../Formats.js"
import { oneOfValues, opt } from "../internal/schemaKit.js"

/**
 * The spec allows one provider: the lowercase name of the infrastructure-as-code tool. We
 * read that tool as Terraform (see docs/manifest.md).
 */
export const INFRA_PROVIDER = "terraform"

export const Infra = Schema.Struct({
  provider: oneOfValues(INFRA_PROVIDER),
  root: BagPath,
  variables: opt(Schema.Array(EnvVarName))
})

export const Provides = Schema.Struct({
  local: opt(Schema.Struct({})),
  tunnel: opt(
    Schema.Struct({
      reach: Schema.Array(oneOfValues("private", "public")),
      gates: opt(Schema.Array(oneOfValues("access")))
    })
  )
})
