/** Port: SHA-256 of text, hex (checkpoint digests). Backed by node:crypto in infra. */
import * as Context from "effect/Context"

/** A SHA-256 fed in pieces: `hex()` is the digest of every piece given, in order, as one text. */
export interface Sha256 {
  readonly update: (text: string) => void
  readonly hex: () => string
}

export class Hashing extends Context.Tag("svc/Hashing")<
  Hashing,
  {
    readonly sha256Hex: (text: string) => string
    /** The same digest for a text given in pieces (a checkpoint's snapshot, hashed as it is made). */
    readonly sha256: () => Sha256
  }
>() {}
