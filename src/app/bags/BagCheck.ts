/**
 * `svc bag check`: judge a bag directory alone, without installing it: the manifest (every
 * problem, positioned) and the files it names.
 */
import * as Effect from "effect/Effect"
import { checkManifest, type ManifestCheck } from "../../domain/manifest/Check.js"
import type { ConstantResolver } from "../../domain/manifest/Constants.js"
import type { BagListing } from "../../domain/manifest/Environment.js"
import type { Manifest } from "../../domain/manifest/Manifest.js"
import { formatPath, type Severity } from "../../domain/manifest/Problem.js"
import { BagDirectory, type BagSnapshot } from "./BagDirectory.js"
import { ManifestSource } from "./ManifestSource.js"

export interface ReportedProblem {
  readonly path: string
  readonly line: number
  readonly column: number
  readonly message: string
  readonly severity: Severity
}

export interface CheckReport {
  readonly valid: boolean
  /** Sorted by position in bag.yaml. */
  readonly problems: ReadonlyArray<ReportedProblem>
  readonly manifest: Manifest | undefined
  readonly externalConstants: ManifestCheck["externalConstants"]
}

const byPosition = (a: ReportedProblem, b: ReportedProblem) => a.line - b.line || a.column - b.column

/** Checks manifest text; with a listing, also that the files it names exist. */
export const checkText = (text: string, listing?: BagListing, constants?: ConstantResolver) =>
  Effect.map(ManifestSource, (source): CheckReport => {
    const parsed = source.parse(text)
    if (parsed.problems.length > 0) {
      const problems = parsed.problems
        .map((p) => ({ path: formatPath(p.path), line: p.line, column: p.column, message: p.message, severity: p.severity }))
        .sort(byPosition)
      return { valid: false, problems, manifest: undefined, externalConstants: [] }
    }
    const result = checkManifest(parsed.value, {
      validators: source.validators,
      ...(listing === undefined ? {} : { listing }),
      ...(constants === undefined ? {} : { constants })
    })
    const problems = result.problems
      .map((p) => ({ path: formatPath(p.path), ...parsed.locate(p.path, p.at), message: p.message, severity: p.severity }))
      .sort(byPosition)
    return {
      valid: !problems.some((p) => p.severity === "error"),
      problems,
      manifest: result.manifest,
      externalConstants: result.externalConstants
    }
  })

export const checkSnapshot = (snapshot: BagSnapshot, constants?: ConstantResolver) =>
  checkText(snapshot.manifestText, snapshot.listing, constants)

export const checkBag = (dir: string, constants?: ConstantResolver) =>
  Effect.gen(function* () {
    const snapshot = yield* (yield* BagDirectory).read(dir)
    const report = yield* checkSnapshot(snapshot, constants)
    return { snapshot, report }
  })
