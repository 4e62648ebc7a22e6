/** How a bag relates to other bags and programs: `bags`, `requires`, `dependencies`. */
import * as Schema from "effect/Schema"
import { BagName, BagPath, RelativePath } from "../Formats.js"
import { byKind, NonEmpty, opt, Str, Bool } from "../internal/schemaKit.js"

/** A `bags` map entry: where a composed child comes from (`repo` xor `path`; rules in Rules). */
export const BagSource = Schema.Struct({
  repo: opt(NonEmpty),
  rev: opt(NonEmpty),
  ref: opt(NonEmpty),
  // A composed child may sit beside this bag (a monorepo), so `..` is allowed here.
  path: opt(RelativePath),
  subdir: opt(BagPath)
})
export type BagSource = typeof BagSource.Type

export const Bags = byKind("a list of bag names or a map of bags", {
  list: Schema.Array(BagName),
  map: Schema.Record({ key: BagName, value: byKind("a map with repo or path, or nothing", { null: Schema.Null, map: BagSource }) })
})

export const Requirement = Schema.Struct({
  reason: opt(Str),
  optional: opt(Bool),
  resource: opt(NonEmpty),
  "allow-remote": opt(Bool)
})
export type Requirement = typeof Requirement.Type

export const DependencyPackage = Schema.Struct({
  reason: NonEmpty,
  bin: opt(NonEmpty),
  optional: opt(Bool),
  install: opt(Schema.Struct({ macos: opt(NonEmpty), linux: opt(NonEmpty) }))
})
export type DependencyPackage = typeof DependencyPackage.Type

/** A map of packages, or a path inside the bag to a YAML file with that map or a bundle file. */
export const Dependencies = byKind("a map of packages or a path to a file inside the bag", {
  map: Schema.Record({ key: NonEmpty, value: DependencyPackage }),
  string: BagPath
})
