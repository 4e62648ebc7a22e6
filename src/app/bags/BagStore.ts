/** Port: the installed bags in `$SVC_HOME` (see docs/bags.md for the layout). */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { BagSnapshot } from "./BagDirectory.js"

export interface InstalledJob {
  readonly name: string
  /** `BAG:JOB@VERSION` when the job has a version. */
  readonly address: string | undefined
}

export interface PinnedConstant {
  readonly bag: string
  readonly name: string
  readonly value: unknown
}

export interface InstalledBag {
  readonly name: string
  readonly description: string
  readonly digest: string
  readonly installedAt: string
  /** Where it was installed from, for the operator's information only. */
  readonly source: string
  readonly jobs: ReadonlyArray<InstalledJob>
  /** The bag's own constants, which bags composing or requiring it may use. */
  readonly constants: Readonly<Record<string, unknown>>
  /** Other bags' constants this bag uses, with the values they had when it was installed. */
  readonly pinnedConstants: ReadonlyArray<PinnedConstant>
  /** Directory holding the installed copy. */
  readonly path: string
}

export class BagStoreError extends Data.TaggedError("BagStoreError")<{
  readonly reason: "NotInstalled" | "Io" | "Corrupt"
  readonly message: string
}> {}

export class BagStore extends Context.Tag("svc/BagStore")<
  BagStore,
  {
    readonly list: Effect.Effect<ReadonlyArray<InstalledBag>, BagStoreError>
    readonly get: (name: string) => Effect.Effect<InstalledBag | undefined, BagStoreError>
    /** Copies the snapshot's files and records it; replaces an installed bag of that name atomically. */
    readonly put: (snapshot: BagSnapshot, record: Omit<InstalledBag, "path">) => Effect.Effect<InstalledBag, BagStoreError>
    readonly remove: (name: string) => Effect.Effect<void, BagStoreError>
    /**
     * Runs `effect` (an install or a removal: what it reads and what it changes) with this store
     * to itself: another process's install or removal waits until it ends (two installs of one
     * bag at a time both said they had installed it, and one was wrong).
     */
    readonly exclusive: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | BagStoreError, R>
  }
>() {}

/** Port: looking up host programs on PATH (for `svc bag doctor`). */
export class HostPrograms extends Context.Tag("svc/HostPrograms")<
  HostPrograms,
  {
    readonly which: (program: string) => Effect.Effect<string | undefined>
    readonly platform: "macos" | "linux" | "other"
  }
>() {}
