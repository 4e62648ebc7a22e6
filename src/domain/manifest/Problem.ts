/**
 * A problem found in a bag manifest: where (a key path into the document) and what.
 *
 * The path is the position in the YAML document as written, so an adapter that still has the
 * source can turn it into a line and column. `at: "key"` points at the key itself (an unknown
 * key), `at: "value"` at the value under it.
 */
export type PathSegment = string | number
export type KeyPath = ReadonlyArray<PathSegment>

export type Severity = "error" | "warning"

export interface Problem {
  readonly path: KeyPath
  readonly message: string
  readonly severity: Severity
  readonly at: "key" | "value"
}

export const error = (path: KeyPath, message: string, at: "key" | "value" = "value"): Problem => ({
  path,
  message,
  severity: "error",
  at
})

export const warning = (path: KeyPath, message: string): Problem => ({
  path,
  message,
  severity: "warning",
  at: "value"
})

/** `jobs.build.runs.command[0]`: how paths are written in messages and in `--json`. */
export const formatPath = (path: KeyPath): string => {
  let out = ""
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`
    else if (/^[A-Za-z0-9_-]+$/.test(segment)) out += out === "" ? segment : `.${segment}`
    else out += `[${JSON.stringify(segment)}]`
  }
  return out === "" ? "(root)" : out
}

export const isUnder = (path: KeyPath, prefix: KeyPath): boolean =>
  prefix.length <= path.length && prefix.every((segment, i) => path[i] === segment)

export const hasErrors = (problems: ReadonlyArray<Problem>): boolean => problems.some((p) => p.severity === "error")

/** How a value is named in a message: kinds, not dumps, so a secret-looking value is never echoed whole. */
export const describeValue = (value: unknown): string => {
  if (value === null) return "null"
  if (value === undefined) return "nothing"
  if (Array.isArray(value)) return "a list"
  switch (typeof value) {
    case "string":
      return value.length > 40 ? `the string "${value.slice(0, 37)}..."` : `the string ${JSON.stringify(value)}`
    case "number":
      return `the number ${value}`
    case "boolean":
      return String(value)
    case "object":
      return "a map"
    default:
      return typeof value
  }
}
