/**
 * A bag's content digest: SHA-256 over a canonical listing of its files, so identical content
 * gives the identical digest on every machine. The listing is built here, purely; the hashing
 * of bytes happens at the edge (infra) and comes in as hex.
 *
 * Canonical listing, one line per regular file, sorted by path (UTF-16 code units of the POSIX
 * relative path, which for the ASCII names bags use is byte order):
 *
 *     <path> NUL <mode> NUL <sha256 of content, hex> LF
 *
 * where mode is `x` for an executable file and `-` otherwise. Directories are implied by file
 * paths (an empty directory does not change the digest); `.git/` is not bag content.
 */
export interface DigestEntry {
  readonly path: string
  readonly executable: boolean
  readonly sha256: string
}

export const canonicalListing = (entries: ReadonlyArray<DigestEntry>): string =>
  [...entries]
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map((e) => `${e.path}\u0000${e.executable ? "x" : "-"}\u0000${e.sha256}\n`)
    .join("")

/** How a digest is written everywhere (store, show, advertisements): `sha256:<hex>`. */
export const formatDigest = (hex: string): string => `sha256:${hex}`

export const shortDigest = (digest: string): string => digest.replace(/^sha256:/, "").slice(0, 12)
