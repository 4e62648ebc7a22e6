/**
 * Certificate succession (docs/protocol.md, "When the owner's certificate changes"): workers pin
 * the owner's certificate, so a new one (a renewal, the operator's own in place of the generated
 * one) used to break every link until each worker joined again. Now the owner signs each change
 * with the key of the certificate it served before: a step `from -> to`, the statement signed
 * being the two fingerprints. A worker meeting a certificate it has not pinned asks the owner for
 * the steps from its pin (sending no credential: the server is not known yet), checks each
 * signature with the key of the certificate before it, starting from its pin, and pins the
 * certificate presented only when the steps end at it. Whoever cannot sign with a key a worker
 * trusts cannot move it: the same trust as the pin, carried forward.
 *
 * The owner keeps, in `$SVC_HOME/tls/`, the certificate and key it last served (`served.crt`,
 * `served.key`, mode 0600: its own copy, since the operator's files may be replaced by then) and
 * the steps (`succession.json`).
 */
import { createPrivateKey, sign, verify, X509Certificate, type KeyObject } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Schema from "effect/Schema"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import { fingerprintOf, hexFingerprint, type TlsMaterial } from "./OwnerCertificate.js"

/** One change of certificate, signed with the key of the one before. */
export const SuccessionStep = Schema.Struct({
  /** SHA-256 of the certificate served before, lowercase hex. */
  from: Schema.String,
  /** SHA-256 of the certificate served after. */
  to: Schema.String,
  /** The certificate served after, PEM: its fingerprint is `to`. */
  certificate: Schema.String,
  /** Base64 signature of `statement(from, to)` by the key of the certificate `from`. */
  signature: Schema.String,
  /** When the owner first served `to` (ISO 8601). */
  at: Schema.String
}).annotations({ identifier: "SuccessionStep" })
export type SuccessionStep = typeof SuccessionStep.Type

const Fingerprint = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "a SHA-256 fingerprint: 64 lowercase hex digits" }))

/** A worker's question, sent with no credential (the server is not known yet): the steps from the certificate it pinned. */
export const SuccessionRequest = Schema.Struct({ kind: Schema.Literal("succession"), from: Fingerprint }).annotations({
  identifier: "SuccessionRequest",
  description: "The signed changes of certificate from the one the worker pinned (`from`) to the one the owner serves now; sent without Authorization"
})
export type SuccessionRequest = typeof SuccessionRequest.Type

/** The owner's answer: the steps, in order; none when it knows no way from that certificate. */
export const SuccessionAnswer = Schema.Struct({
  kind: Schema.Literal("succession"),
  /** In order, each signed by the key of the certificate before it; empty when the owner signed no way from that certificate. */
  steps: Schema.Array(SuccessionStep).annotations({ description: "in order, each signed by the key of the certificate before it; empty when the owner signed no way from that certificate" })
})
export type SuccessionAnswer = typeof SuccessionAnswer.Type

/** What is signed: both fingerprints, under a name of its own (no other svc signature can pass for it). */
export const statement = (from: string, to: string): Buffer => Buffer.from(`svc certificate succession v1\nfrom sha256 ${from}\nto sha256 ${to}\n`, "utf8")

/** The digest to sign with: none for the keys that take none (Ed25519, Ed448), SHA-256 for RSA and EC. */
const digestFor = (key: KeyObject): string | null => (key.asymmetricKeyType === "ed25519" || key.asymmetricKeyType === "ed448" ? null : "sha256")

/** The step from the certificate `before` (with its key) to `after`. */
export const signStep = (before: { readonly cert: string; readonly key: string }, after: string, at: Date): SuccessionStep => {
  const key = createPrivateKey(before.key)
  const from = fingerprintOf(before.cert)
  const to = fingerprintOf(after)
  return { from, to, certificate: after, signature: sign(digestFor(key), statement(from, to), key).toString("base64"), at: at.toISOString() }
}

/** The most steps a worker follows at once (a renewal every 60 days for 16 years). */
export const MAX_STEPS = 100

/**
 * Follows `steps` from the pinned certificate (PEM) to the one presented (`presented`, its
 * fingerprint): each step must start at the certificate reached so far, be signed by its key,
 * and name the fingerprint of the certificate it carries. Answers that certificate (PEM), or
 * why the steps do not lead there.
 */
export const follow = (pinned: string, steps: ReadonlyArray<SuccessionStep>, presented: string): { readonly certificate: string } | { readonly problem: string } => {
  if (steps.length === 0) return { problem: "it offered no change signed by the pinned certificate's key" }
  if (steps.length > MAX_STEPS) return { problem: `it offered ${steps.length} changes of certificate, more than the ${MAX_STEPS} a worker follows` }
  let current = pinned
  for (const [i, step] of steps.entries()) {
    const where = `change ${i + 1} of ${steps.length}`
    let cert: X509Certificate
    let next: X509Certificate
    try {
      cert = new X509Certificate(current)
      next = new X509Certificate(step.certificate)
    } catch {
      return { problem: `${where} carries a certificate that is not one` }
    }
    const from = hexFingerprint(cert)
    if (step.from !== from) return { problem: `${where} starts at another certificate (sha256 ${step.from}) than ${i === 0 ? "the pinned one" : "the one before it"} (sha256 ${from})` }
    if (hexFingerprint(next) !== step.to) return { problem: `${where} names another certificate (sha256 ${step.to}) than the one it carries` }
    let ok = false
    try {
      ok = verify(digestFor(cert.publicKey), statement(step.from, step.to), cert.publicKey, Buffer.from(step.signature, "base64"))
    } catch {
      ok = false
    }
    if (!ok) return { problem: `${where} (to sha256 ${step.to}) is not signed by the key of the certificate before it` }
    current = step.certificate
  }
  const reached = fingerprintOf(current)
  return reached === presented ? { certificate: current } : { problem: `its signed changes end at another certificate (sha256 ${reached}) than the one it presented (sha256 ${presented})` }
}

/** The steps from certificate `from` to `to` (fingerprints), the shortest way; empty when there is none, or when they are the same. */
export const pathOf = (steps: ReadonlyArray<SuccessionStep>, from: string, to: string): ReadonlyArray<SuccessionStep> => {
  if (from === to) return []
  // Breadth first: a certificate served again later (A, B, A) makes a cycle.
  const cameBy = new Map<string, SuccessionStep | null>([[from, null]])
  const queue = [from]
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    for (const step of steps) {
      if (step.from !== at || cameBy.has(step.to)) continue
      cameBy.set(step.to, step)
      if (step.to === to) {
        const path: Array<SuccessionStep> = []
        for (let s: SuccessionStep | null | undefined = step; s != null; s = cameBy.get(s.from)) path.unshift(s)
        return path
      }
      queue.push(step.to)
    }
  }
  return []
}

const tlsDir = (home: string) => nodePath.join(home, "tls")
const decodeSteps = Schema.decodeUnknownEither(Schema.Struct({ steps: Schema.Array(SuccessionStep) }))

/** The steps this home's owner signed; none when it has signed none. A file that cannot be read is said. */
export const readSteps = async (home: string): Promise<ReadonlyArray<SuccessionStep>> => {
  const file = nodePath.join(tlsDir(home), "succession.json")
  let text: string
  try {
    text = await fs.readFile(file, "utf8")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return []
    throw e
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new Error(`${file} is not JSON: move it away to start without the certificate changes it holds (linked workers then join again)`)
  }
  const decoded = decodeSteps(json)
  if (decoded._tag === "Left") throw new Error(`${file} is not a list of certificate changes: move it away to start without them (linked workers then join again)`)
  return decoded.right.steps
}

const readPair = async (certFile: string, keyFile: string): Promise<{ readonly cert: string; readonly key: string } | undefined> => {
  try {
    const [cert, key] = await Promise.all([fs.readFile(certFile, "utf8"), fs.readFile(keyFile, "utf8")])
    const certificate = new X509Certificate(cert)
    return certificate.checkPrivateKey(createPrivateKey(key)) ? { cert, key } : undefined
  } catch {
    return undefined
  }
}

/** What a start did about its certificate: signed a change from the one served before, or not. */
export type Served =
  | { readonly kind: "same" }
  | { readonly kind: "first" }
  | { readonly kind: "changed"; readonly step: SuccessionStep }
  | { readonly kind: "unsigned"; readonly from: string }

/**
 * Notes the certificate this start serves (`material`). When it differs from the one served
 * before, the change is signed with that one's key and kept: from the copy of the last served
 * pair, or, on a home from before these copies, from the certificate the owner generated for
 * itself (an operator's own certificate in its place). Answers what it did and the steps kept.
 */
export const noteServed = async (home: string, material: TlsMaterial, now: Date): Promise<{ readonly served: Served; readonly steps: ReadonlyArray<SuccessionStep> }> => {
  const dir = tlsDir(home)
  await makePrivateDir(dir)
  const steps = await readSteps(home)
  const served = await readPair(nodePath.join(dir, "served.crt"), nodePath.join(dir, "served.key"))
  const before = served ?? (await readPair(nodePath.join(dir, "owner.crt"), nodePath.join(dir, "owner.key")))
  const keep = async () => {
    await writePrivateFile(nodePath.join(dir, "served.key"), material.key)
    await writePrivateFile(nodePath.join(dir, "served.crt"), material.cert)
  }
  if (before === undefined) {
    await keep()
    return { served: { kind: "first" }, steps }
  }
  const from = fingerprintOf(before.cert)
  if (from === material.fingerprint) {
    // The copy is the one served: kept as it is (a home copied with its tls/ keeps its pair).
    if (served === undefined) await keep()
    return { served: { kind: "same" }, steps }
  }
  let step: SuccessionStep
  try {
    step = signStep(before, material.cert, now)
  } catch {
    await keep()
    return { served: { kind: "unsigned", from }, steps }
  }
  const next = [...steps, step]
  // The steps first: a crash between the two writes signs the same change again at the next start.
  await writePrivateFile(nodePath.join(dir, "succession.json"), JSON.stringify({ steps: next }, null, 2) + "\n")
  await keep()
  return { served: { kind: "changed", step }, steps: next }
}
