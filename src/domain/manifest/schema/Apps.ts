/** `apps`: macOS or iOS apps a bag builds. */
import * as Schema from "effect/Schema"
import { BagPath } from "../Formats.js"
import { Bool, byKind, NonEmpty, oneOfValues, opt, StrList, withDefault } from "../internal/schemaKit.js"

export const App = Schema.Struct({
  name: NonEmpty,
  description: NonEmpty,
  platform: oneOfValues("macos", "ios"),
  build: byKind("a package script name or a map with project, scheme and configuration", {
    string: NonEmpty,
    map: Schema.Struct({
      project: BagPath.pipe(Schema.filter((p) => p.endsWith(".xcodeproj") || "must be an .xcodeproj path")),
      scheme: opt(NonEmpty),
      configuration: withDefault(NonEmpty, () => "Release")
    })
  }),
  output: BagPath.pipe(Schema.filter((p) => /\.app\/?$/.test(p) || "must name the .app bundle produced inside the bag")),
  id: opt(NonEmpty),
  "protocol-version": opt(
    Schema.Literal(1, 2).annotations({ message: () => ({ message: "must be 1 (legacy) or 2", override: true }) })
  ),
  capabilities: opt(
    Schema.Struct({
      streaming: opt(Bool),
      gating: opt(Bool),
      listener: opt(Bool),
      attachments: opt(Bool),
      approvalReview: opt(Bool),
      replay: opt(Bool)
    })
  ),
  macos: opt(
    Schema.Struct({ "bundle-id": opt(NonEmpty), "url-schemes": opt(StrList), "login-item": opt(Bool), "keep-alive": opt(Bool) })
  ),
  ios: opt(Schema.Struct({ "bundle-id": opt(NonEmpty), "url-schemes": opt(StrList), device: opt(Bool) }))
})
export type App = typeof App.Type
export const Apps = Schema.Record({ key: NonEmpty, value: App })
