import { randomBytes } from "node:crypto"
import * as Layer from "effect/Layer"
import { Entropy } from "../../app/workers/Entropy.js"

export const layer = Layer.succeed(Entropy, { bytes: (n) => new Uint8Array(randomBytes(n)) })
