/** Port: cryptographically secure random bytes (secrets, ids). node:crypto in infra. */
import * as Context from "effect/Context"

export class Entropy extends Context.Tag("svc/Entropy")<Entropy, { readonly bytes: (n: number) => Uint8Array }>() {}
