import { createHash, hash } from "node:crypto"
import * as Layer from "effect/Layer"
import { Hashing } from "../../app/journal/Hashing.js"

// One-shot hashing: a quarter of createHash().update().digest()'s cost per call, and every
// authenticated call of the worker route hashes the presented credential.
export const layer = Layer.succeed(Hashing, {
  sha256Hex: (text) => hash("sha256", text, "hex"),
  sha256: () => {
    const h = createHash("sha256")
    return { update: (text) => void h.update(text, "utf8"), hex: () => h.digest("hex") }
  }
})
