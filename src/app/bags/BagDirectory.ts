/** Port: reading a bag directory (its manifest text, its file listing, its content digest). */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { BagListing } from "../../domain/manifest/Environment.js"

export interface BagFile {
  readonly path: string
  readonly executable: boolean
  readonly size: number
}

export interface BagSnapshot {
  /** Absolute path of the directory read. */
  readonly dir: string
  readonly manifestText: string
  readonly listing: BagListing
  readonly files: ReadonlyArray<BagFile>
}

export class BagDirectoryError extends Data.TaggedError("BagDirectoryError")<{
  readonly reason: "NotFound" | "NotADirectory" | "NoManifest" | "TooLarge" | "Unreadable" | "Symlink"
  readonly message: string
}> {}

export class BagDirectory extends Context.Tag("svc/BagDirectory")<
  BagDirectory,
  {
    readonly read: (dir: string) => Effect.Effect<BagSnapshot, BagDirectoryError>
    /** `sha256:<hex>` over the canonical listing (domain/bags/Digest); refuses symlinks. */
    readonly digest: (snapshot: BagSnapshot) => Effect.Effect<string, BagDirectoryError>
    /** A text file inside the bag (a path the manifest names, already checked to stay inside). */
    readonly readText: (dir: string, path: string) => Effect.Effect<string, BagDirectoryError>
  }
>() {}
