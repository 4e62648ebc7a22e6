/**
 * Port: turning bag.yaml text into a plain value with positions, and the format validators the
 * pure check needs. The infra layer backs it with the `yaml` package, croner and ajv.
 */
import * as Context from "effect/Context"
import type { FormatValidators } from "../../domain/manifest/Environment.js"
import type { KeyPath, Problem } from "../../domain/manifest/Problem.js"

export interface Position {
  readonly line: number
  readonly column: number
}

export interface ParsedText {
  /** Undefined when the YAML itself failed (see problems). */
  readonly value: unknown
  readonly problems: ReadonlyArray<Problem & Position>
  readonly locate: (path: KeyPath, at: "key" | "value") => Position
}

export class ManifestSource extends Context.Tag("svc/ManifestSource")<
  ManifestSource,
  {
    readonly parse: (text: string) => ParsedText
    readonly validators: FormatValidators
  }
>() {}
