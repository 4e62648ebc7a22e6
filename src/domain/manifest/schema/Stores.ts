/** Databases a bag owns: `store`, `stores`, and their `snapshots` and `restores` hooks. */
import * as Schema from "effect/Schema"
import { BagPath, ScriptFile, StoreName } from "../Formats.js"
import { oneOfValues } from "../internal/schemaKit.js"

export const Store = Schema.Struct({
  owned_by: oneOfValues("identity", "node"),
  engine: oneOfValues("sqlite"),
  migrations: BagPath
})
export type Store = typeof Store.Type

export const Stores = Schema.Record({ key: StoreName, value: Store })

/** Keyed by a declared store name (`default` for `store`); checked against the stores in Rules. */
export const StoreHooks = Schema.Record({
  key: Schema.String,
  value: Schema.Struct({ entry: ScriptFile([".js", ".mjs"]) })
})
