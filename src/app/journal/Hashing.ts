/** Port: SHA-256 of text, hex (checkpoint digests). Backed by node:crypto in infra. */
import * as Context from "effect/Context"

export class Hashing extends Context.Tag("svc/Hashing")<Hashing, { readonly sha256Hex: (text: string) => string }>() {}
