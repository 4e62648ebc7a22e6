/** Checks bag.yaml text the way `svc bag check` does, for tests: positioned problems. */
import { checkManifest, type ManifestCheck } from "../../src/domain/manifest/Check.js"
import type { BagListing } from "../../src/domain/manifest/Environment.js"
import { formatPath } from "../../src/domain/manifest/Problem.js"
import { formatValidators } from "../../src/infra/manifest/FormatValidators.js"
import { parseManifest } from "../../src/infra/manifest/YamlManifest.js"

export interface Checked extends ManifestCheck {
  /** `LINE:COL key.path: message`, one per problem (errors and warnings). */
  readonly lines: ReadonlyArray<string>
  readonly errors: ReadonlyArray<{ readonly path: string; readonly line: number; readonly column: number; readonly message: string }>
}

export const listing = (files: ReadonlyArray<string> = [], dirs: ReadonlyArray<string> = []): BagListing => {
  const allDirs = new Set<string>([""])
  for (const d of dirs) allDirs.add(d)
  for (const f of files) {
    const parts = f.split("/")
    for (let i = 1; i < parts.length; i++) allDirs.add(parts.slice(0, i).join("/"))
  }
  return { files: new Set(files), dirs: allDirs }
}

export const check = (text: string, bagListing?: BagListing): Checked => {
  const parsed = parseManifest(text)
  if (parsed.problems.length > 0) {
    const errors = parsed.problems.map((p) => ({ path: formatPath(p.path), line: p.line, column: p.column, message: p.message }))
    return {
      problems: parsed.problems,
      manifest: undefined,
      externalConstants: [],
      errors,
      lines: errors.map((e) => `${e.line}:${e.column} ${e.path}: ${e.message}`)
    }
  }
  const result = checkManifest(parsed.value, bagListing === undefined ? { validators: formatValidators } : { validators: formatValidators, listing: bagListing })
  const located = result.problems.map((p) => {
    const pos = parsed.locate(p.path, p.at)
    return { path: formatPath(p.path), line: pos.line, column: pos.column, message: p.message, severity: p.severity }
  })
  return {
    ...result,
    errors: located.filter((p) => p.severity === "error"),
    lines: located.map((e) => `${e.line}:${e.column} ${e.path}: ${e.message}`)
  }
}

/** The smallest valid manifest, to which a test adds the lines it is about. */
export const MINIMAL = "name: demo\ndescription: A demo bag\n"
