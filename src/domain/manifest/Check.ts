/**
 * The whole manifest check, pure: substitute constants, apply the removed/retired/extension
 * key rules, decode with the strict schema (every problem, not only the first), then the
 * cross-key, reference, format and file rules. Returns every problem with its key path, and the
 * typed manifest when there is no error.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import { substituteConstants, type ExternalConstant } from "./Constants.js"
import type { CheckEnvironment } from "./Environment.js"
import { problemsOfIssue } from "./internal/issues.js"
import { isMap } from "./internal/schemaKit.js"
import { EXTENSION_KEYS, Manifest, REPLACED_KEYS, RETIRED_KEYS } from "./Manifest.js"
import { error, hasErrors, isUnder, type KeyPath, type PathSegment, type Problem } from "./Problem.js"
import { extensionKeyProblems, fileRules } from "./rules/files.js"
import { KEBAB, STORE_NAME } from "./Formats.js"
import { Job } from "./schema/Jobs.js"
import { Schedule } from "./schema/Schedules.js"
import { Store } from "./schema/Stores.js"
import { formatRules } from "./rules/formats.js"
import { secretRules } from "./rules/secrets.js"
import { compositionRules, jobRules, scheduleGrantRules, scheduleJobRules, toolRules, traitRules, vendorRules } from "./rules/references.js"
import * as Structure from "./rules/structure.js"

export interface ManifestCheck {
  readonly problems: ReadonlyArray<Problem>
  /**
   * The decoded manifest; present only when no problem is an error and every value is known
   * (another bag's constant is known only where that bag is installed).
   */
  readonly manifest: Manifest | undefined
  /** Other bags' constants used, resolved where those bags are installed. */
  readonly externalConstants: ReadonlyArray<ExternalConstant>
}

const decode = ParseResult.decodeUnknownEither(Manifest, { errors: "all", onExcessProperty: "error" })

const crossKeyRules: ReadonlyArray<(raw: Record<string, unknown>) => Array<Problem>> = [
  Structure.processRules,
  Structure.scheduleStructure,
  Structure.bagSourceRules,
  Structure.storeRules,
  Structure.permissionRules,
  Structure.mcpRules,
  Structure.appRules,
  Structure.hookRules,
  Structure.providesRules,
  Structure.dependencyRules,
  Structure.validateRules,
  traitRules,
  jobRules,
  scheduleJobRules,
  scheduleGrantRules,
  compositionRules,
  vendorRules,
  toolRules
]

export const checkManifest = (document: unknown, env: CheckEnvironment): ManifestCheck => {
  if (!isMap(document)) {
    const what = document === null || document === undefined ? "empty" : Array.isArray(document) ? "a list" : `a ${typeof document}`
    return {
      problems: [error([], `bag.yaml must be a map of keys (name, description, ...), but it is ${what}`)],
      manifest: undefined,
      externalConstants: []
    }
  }
  const cycle = selfReference(document)
  if (cycle !== undefined) {
    return {
      problems: [error(cycle, "contains itself: a YAML alias inside its own anchor makes a value without end, which no manifest key accepts")],
      manifest: undefined,
      externalConstants: []
    }
  }
  const substitution = substituteConstants(document, env.constants)
  const problems: Array<Problem> = [...substitution.problems]
  const raw: Record<string, unknown> = { ...substitution.value }

  for (const [key, message] of Object.entries(REPLACED_KEYS)) {
    if (key in raw) {
      problems.push(error([key], message, "key"))
      delete raw[key]
    }
  }
  for (const key of RETIRED_KEYS) delete raw[key]
  const extensionProblems = extensionKeyProblems(raw, EXTENSION_KEYS)
  problems.push(...extensionProblems)
  for (const p of extensionProblems) delete raw[p.path[0] as string]

  const opaque = substitution.opaque
  const visible = (p: Problem) => !opaque.some((o: KeyPath) => isUnder(p.path, o))
  const decoded = decode(raw)
  if (Either.isLeft(decoded)) problems.push(...problemsOfIssue(decoded.left).filter(visible))
  problems.push(...misnamedEntryProblems(raw).filter(visible))
  for (const rule of crossKeyRules) problems.push(...rule(raw).filter(visible))
  problems.push(...formatRules(raw, env.validators).filter(visible))
  problems.push(...secretRules(raw).filter(visible))
  if (env.listing !== undefined) problems.push(...fileRules(raw, env.listing).filter(visible))

  // A problem inside a constant's value is said where the constant is used, naming the constant:
  // the key at fault (`runs.extra`) is in `constants`, not on the line the reference is on.
  const fromConstants = substitution.substituted
  const sourced =
    fromConstants.length === 0
      ? problems
      : problems.map((p) => {
          const from = fromConstants.find((s) => isUnder(p.path, s.path))
          return from === undefined ? p : { ...p, message: `${p.message} (in the value of constant ${JSON.stringify(from.constant)})` }
        })
  const unique = dedupe(sourced)
  return {
    problems: unique,
    manifest: Either.isRight(decoded) && !hasErrors(unique) ? decoded.right : undefined,
    externalConstants: substitution.external
  }
}

/**
 * A map entry whose name breaks the naming rule (`jobs.Build_It`) is reported by the schema,
 * which then skips its body; a person fixing the name should not meet a second round of
 * problems, so the body is validated here as if the name were right.
 */
const NAMED_SECTIONS: ReadonlyArray<readonly [string, RegExp, (u: unknown) => Either.Either<unknown, ParseResult.ParseIssue>]> = [
  ["jobs", KEBAB, ParseResult.decodeUnknownEither(Job, { errors: "all", onExcessProperty: "error" })],
  ["schedules", KEBAB, ParseResult.decodeUnknownEither(Schedule, { errors: "all", onExcessProperty: "error" })],
  ["stores", STORE_NAME, ParseResult.decodeUnknownEither(Store, { errors: "all", onExcessProperty: "error" })]
]

const misnamedEntryProblems = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [section, rule, decodeEntry] of NAMED_SECTIONS) {
    const entries = raw[section]
    if (!isMap(entries)) continue
    for (const [name, body] of Object.entries(entries)) {
      if (rule.test(name)) continue
      const result = decodeEntry(body)
      if (Either.isLeft(result)) out.push(...problemsOfIssue(result.left).map((p) => ({ ...p, path: [section, name, ...p.path] })))
    }
  }
  return out
}

/** Two rules may see the same fault; a person should read it once. */
const dedupe = (problems: ReadonlyArray<Problem>): Array<Problem> => {
  const seen = new Set<string>()
  return problems.filter((p) => {
    const key = `${JSON.stringify(p.path)}\u0000${p.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/**
 * The key path of a value that contains itself (`a: &x [*x]`: YAML lets an alias point into its
 * own anchor), or undefined. Every later step walks the document, so such a value would never
 * end. Iterative, so a deep document cannot overflow the stack; a value shared by several
 * aliases (no cycle) is walked once.
 */
const selfReference = (root: unknown): KeyPath | undefined => {
  type Frame = { readonly node: object; readonly segment: PathSegment; readonly children: ReadonlyArray<readonly [PathSegment, unknown]>; i: number }
  const onPath = new Set<object>()
  const finished = new Set<object>()
  const frames: Array<Frame> = []
  const enter = (node: object, segment: PathSegment) => {
    onPath.add(node)
    const children = Array.isArray(node) ? node.map((v, i) => [i, v] as const) : Object.entries(node)
    frames.push({ node, segment, children, i: 0 })
  }
  if (typeof root !== "object" || root === null) return undefined
  enter(root, "")
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!
    if (frame.i >= frame.children.length) {
      frames.pop()
      onPath.delete(frame.node)
      finished.add(frame.node)
      continue
    }
    const [segment, child] = frame.children[frame.i++]!
    if (typeof child !== "object" || child === null || finished.has(child)) continue
    if (onPath.has(child)) return [...frames.slice(1).map((f) => f.segment), segment]
    enter(child, segment)
  }
  return undefined
}
