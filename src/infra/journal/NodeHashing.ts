import { createHash } from "node:crypto"
import * as Layer from "effect/Layer"
import { Hashing } from "../../app/journal/Hashing.js"

export const layer = Layer.succeed(Hashing, { sha256Hex: (text) => createHash("sha256").update(text).digest("hex") })
