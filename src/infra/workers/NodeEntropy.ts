import { randomFillSync } from "node:crypto"
import * as Layer from "effect/Layer"
import { Entropy } from "../../app/workers/Entropy.js"

/**
 * Bytes from node:crypto's CSPRNG, drawn 4 KiB at a time: one `randomBytes` call costs about
 * 5 us here whatever its size (bench/dispatch: 2% of the owner's time, a run id per
 * submission), so small requests are served from a pool, as Node serves `randomUUID`. Each
 * byte is handed out once; a request larger than the pool goes to the CSPRNG directly.
 */
export const make = (poolSize = 4096) => {
  const pool = new Uint8Array(poolSize)
  let next = poolSize
  return {
    bytes: (n: number): Uint8Array => {
      if (n > poolSize) return randomFillSync(new Uint8Array(n))
      if (next + n > poolSize) {
        randomFillSync(pool)
        next = 0
      }
      const out = pool.slice(next, next + n)
      // What was handed out is not kept.
      pool.fill(0, next, next + n)
      next += n
      return out
    }
  }
}

export const layer = Layer.sync(Entropy, () => make())
