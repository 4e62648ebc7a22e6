/**
 * The words and values of a submission and a result, checked alike wherever they come in (the
 * CLI before it asks, the owner when asked). A run's input and result are JSON documents that
 * come from outside (a person's `--input`, a job's last line of output, a worker's report).
 * JSON.stringify, the schema checks and the journal walk them by recursion, so a document nested
 * some thousands of levels deep overflowed the stack: a job whose result line was `[[[[...]]]]`
 * left its run running forever. Past `MAX_VALUE_DEPTH` levels a document is refused where it
 * comes in, saying so.
 */
import { labelProblem } from "../manifest/Formats.js"
import { JOB_ADDRESS } from "../manifest/JobAddress.js"
import { holdsSecret, secretRefusal } from "../workers/Secrets.js"
import { secretPlaceIn } from "../workers/StrictJson.js"

/** Why `address` is not a versioned job address, or undefined: what the CLI says before asking, and the owner when asked. */
export const jobAddressProblem = (address: string): string | undefined =>
  JOB_ADDRESS.test(address) ? undefined : `${JSON.stringify(address)} is not a job address: use BAG:JOB@VERSION, such as hasher:checksum@1.0.0`

/** Why a run's `--prefer` labels are not taken (each must be KEY=VALUE), or undefined. */
export const preferenceProblem = (prefer: ReadonlyArray<string>): string | undefined => {
  if (prefer.some(holdsSecret)) return secretRefusal("--prefer")
  const bad = prefer.find((p) => labelProblem(p) !== undefined)
  // Quoted cut short: a label of 100 KB was echoed whole.
  return bad === undefined ? undefined : `--prefer takes KEY=VALUE labels; ${JSON.stringify(bad.length > 60 ? `${bad.slice(0, 60)}…` : bad)} ${labelProblem(bad)}`
}

/** The longest idempotency key taken (`svc run --idempotency-key`). */
export const MAX_KEY_LENGTH = 200

/**
 * Why `key` is not taken as an idempotency key, or undefined: 1 to 200 printable ASCII characters
 * without spaces (a UUID, `ci-build-4211/step-3`), not shaped as an svc secret (it is journaled
 * and shown).
 */
export const idempotencyKeyProblem = (key: string): string | undefined => {
  if (holdsSecret(key)) return secretRefusal("--idempotency-key")
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
    return `--idempotency-key takes 1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces (a UUID, or a build's id and step), not ${JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}...` : key)}`
  }
  return undefined
}

/** JSON with object keys sorted: two equal values print the same text whatever their key order. */
export const canonicalJson = (v: unknown): string =>
  JSON.stringify(v, (_k, value: unknown) =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value
  )

/**
 * Why a run's input (`what`: "--input", "the input") is not taken for holding a string, or a key,
 * shaped as an svc secret, or undefined: the journal keeps a run's input for ever, and shows it
 * (`svc journal tail`, `svc runs show`). A job gets a secret from the owner's secrets instead.
 * (A job's result is its own data, kept as it printed it: not checked.)
 */
export const inputSecretProblem = (value: unknown, what: string): string | undefined => {
  const at = secretPlaceIn(value)
  if (at === undefined) return undefined
  return `${secretRefusal(`${what}${at === "" ? "" : ` (at ${at})`}`)}; a job takes a secret from $SVC_HOME/secrets on the host that runs it (docs/executors.md, "Secrets")`
}

/** How deep a run's input or result may nest (arrays and objects within each other). */
export const MAX_VALUE_DEPTH = 512

/** How deep `value` nests (a scalar 0, `{}` 1), counted without recursion, stopping once past `limit`. */
export const depthOf = (value: unknown, limit: number): number => {
  let deepest = 0
  const stack: Array<unknown> = [value]
  const depths: Array<number> = [0]
  while (stack.length > 0) {
    const v = stack.pop()
    const d = depths.pop()!
    if (typeof v !== "object" || v === null) continue
    const here = d + 1
    if (here > deepest) {
      deepest = here
      if (deepest > limit) return deepest
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      stack.push(child)
      depths.push(here)
    }
  }
  return deepest
}

/** Why `value` (`what`: "input", "its result") nests too deep to be taken, or undefined. */
export const depthProblem = (value: unknown, what: string, limit: number = MAX_VALUE_DEPTH): string | undefined =>
  depthOf(value, limit) > limit ? `${what} nests more than ${limit} levels deep (arrays and objects within each other); at most ${limit} are taken` : undefined
