import type { ConstantResolver } from "./Constants.js"

/**
 * What a manifest check needs besides the manifest, passed in as values so the check stays
 * pure: the bag directory's listing, and the validators of formats that well-kept libraries
 * own (cron expressions, IANA zones, JSON Schema), supplied by the infra layer.
 */
export interface BagListing {
  /** Relative POSIX paths of the bag's regular files. */
  readonly files: ReadonlySet<string>
  /** Relative POSIX paths of the bag's directories (the root is ""). */
  readonly dirs: ReadonlySet<string>
  /** Paths that are symbolic links, to files (also in `files`) or to directories (not walked); install refuses a bag holding one. */
  readonly symlinks?: ReadonlySet<string>
}

export interface FormatValidators {
  /** Why a five-field cron expression is invalid, or undefined when it is valid. */
  readonly cron: (expression: string) => string | undefined
  readonly isTimeZone: (zone: string) => boolean
  /**
   * Why a document is not a valid JSON Schema, none when it compiles: where in the document
   * (keys from its root; empty when the validator cannot say) and what, each problem it can
   * name (every unknown `format`, say), though one may hide others behind it.
   */
  readonly jsonSchema: (schema: unknown) => ReadonlyArray<{ readonly path: ReadonlyArray<string | number>; readonly message: string }>
  /** Why `value` does not satisfy `schema` (assumed valid), or undefined when it does. */
  readonly validate: (schema: unknown, value: unknown) => string | undefined
}

export interface CheckEnvironment {
  readonly validators: FormatValidators
  /** Other bags' constants, where they are installed (see Constants). */
  readonly constants?: ConstantResolver
  /** Absent when only the manifest text is checked: file existence is then not judged. */
  readonly listing?: BagListing
}

/** `./a/../b/` -> `b`: the form listings use. Assumes the path was checked to stay inside the bag. */
export const normalizeBagPath = (path: string): string => {
  const out: Array<string> = []
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") out.pop()
    else out.push(part)
  }
  return out.join("/")
}
