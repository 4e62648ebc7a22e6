/**
 * `svc bag check`: judge a bag directory alone, without installing it: the manifest (every
 * problem, positioned) and the files it names.
 */
import * as Effect from "effect/Effect"
import { checkManifest, type ManifestCheck } from "../../domain/manifest/Check.js"
import type { ConstantResolver } from "../../domain/manifest/Constants.js"
import type { BagListing } from "../../domain/manifest/Environment.js"
import type { Manifest } from "../../domain/manifest/Manifest.js"
import { error, formatPath, type Problem, type Severity } from "../../domain/manifest/Problem.js"
import { withoutSecrets } from "../../domain/workers/Secrets.js"
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

/** Checks manifest text; with a listing, also that the files it names exist; `found` adds what was found beside it. */
export const checkText = (text: string, listing?: BagListing, constants?: ConstantResolver, found: ReadonlyArray<Problem> = []) =>
  Effect.map(ManifestSource, (source): CheckReport => {
    const parsed = source.parse(text)
    if (parsed.problems.length > 0) {
      const problems = parsed.problems
        .map((p) => ({ path: withoutSecrets(formatPath(p.path)), line: p.line, column: p.column, message: withoutSecrets(p.message), severity: p.severity }))
        .sort(byPosition)
      return { valid: false, problems, manifest: undefined, externalConstants: [] }
    }
    const result = checkManifest(parsed.value, {
      validators: source.validators,
      ...(listing === undefined ? {} : { listing }),
      ...(constants === undefined ? {} : { constants })
    })
    const problems = [...result.problems, ...found]
      .map((p) => ({ path: withoutSecrets(formatPath(p.path)), ...parsed.locate(p.path, p.at), message: withoutSecrets(p.message), severity: p.severity }))
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

/** `relative` (POSIX, `..` allowed) from the absolute directory `base`. */
export const resolveFrom = (base: string, relative: string): string => {
  const parts = base.split("/").filter((p) => p !== "")
  for (const part of relative.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") parts.pop()
    else parts.push(part)
  }
  return `/${parts.join("/")}`
}

/** The composed children a bag's `bags` map names, by `path` and by Git `repo` (as written: the check judges the rest). */
export const compositionOf = (raw: unknown) => {
  const bags = typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>)["bags"] : undefined
  const paths: Array<{ readonly name: string; readonly path: string }> = []
  const repos: Array<{ readonly name: string; readonly repo: string }> = []
  if (typeof bags !== "object" || bags === null || Array.isArray(bags)) return { paths, repos }
  for (const [name, entry] of Object.entries(bags as Record<string, unknown>)) {
    const source = typeof entry === "object" && entry !== null ? (entry as { readonly path?: unknown; readonly repo?: unknown }) : {}
    if (typeof source.path === "string") paths.push({ name, path: source.path })
    else if (typeof source.repo === "string") repos.push({ name, repo: source.repo })
  }
  return { paths, repos }
}

/**
 * `svc bag check DIR`: the bag, and beside it each child it composes from a `path`, which must be
 * a bag directory (install fetches it from there). A directory alone (an installed copy, whose
 * relative paths lead nowhere) is judged by checkSnapshot.
 */
export const checkBag = (dir: string, constants?: ConstantResolver) =>
  Effect.gen(function* () {
    const snapshot = yield* (yield* BagDirectory).read(dir)
    return { snapshot, report: yield* checkSource(snapshot, constants) }
  })

/** checkBag of a directory already read. */
export const checkSource = (snapshot: BagSnapshot, constants?: ConstantResolver) =>
  Effect.gen(function* () {
    const directory = yield* BagDirectory
    const found: Array<Problem> = []
    for (const child of compositionOf((yield* ManifestSource).parse(snapshot.manifestText).value).paths) {
      const read = yield* Effect.either(directory.read(resolveFrom(snapshot.dir, child.path)))
      if (read._tag === "Left") found.push(error(["bags", child.name, "path"], `there is no bag at ${child.path}: ${read.left.message}`))
    }
    return yield* checkText(snapshot.manifestText, snapshot.listing, constants, found)
  })
