/**
 * The owner's TLS material: the operator's own (`--tls-cert`, `--tls-key`), or a self-signed
 * certificate generated at first start and kept in `$SVC_HOME/tls/` (key mode 0600). Workers pin
 * its SHA-256 fingerprint, carried in join tokens, so no trust-on-first-use is involved.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as nodePath from "node:path"
import { generate } from "selfsigned"
import { makeDirectory } from "../MakeDirectory.js"

export interface TlsMaterial {
  readonly cert: string
  readonly key: string
  /** SHA-256 of the DER certificate, lowercase hex without colons. */
  readonly fingerprint: string
}

/** A certificate's SHA-256 as svc writes it (lowercase hex without colons), from what Node gives: an X509Certificate, or a TLS peer's certificate. */
export const hexFingerprint = (certificate: { readonly fingerprint256: string }): string => certificate.fingerprint256.replace(/:/g, "").toLowerCase()

export const fingerprintOf = (pem: string): string => hexFingerprint(new X509Certificate(pem))

/**
 * The operator's certificate and key, checked before anything listens: each a PEM of its kind,
 * and the key the certificate's. Answers the certificate's fingerprint.
 */
const checkedPair = (cert: string, key: string, given: { readonly certFile: string; readonly keyFile: string }, named: { readonly cert: string; readonly key: string } = { cert: "--tls-cert ", key: "--tls-key " }): string => {
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(cert)
  } catch {
    throw new Error(`${named.cert}${given.certFile} is not a PEM certificate`)
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(key)
  } catch {
    throw new Error(`${named.key}${given.keyFile} is not a PEM private key`)
  }
  if (!certificate.checkPrivateKey(privateKey)) throw new Error(`${named.key}${given.keyFile} is not the key of the certificate in ${named.cert}${given.certFile}`)
  return hexFingerprint(certificate)
}

/** How far ahead of a worker's clock a pinned certificate's start may be: clocks differ (OwnerClient). */
export const NOT_YET_VALID_SLACK_MS = 24 * 3600 * 1000

/** A certificate expiring sooner than this is said at start. */
export const EXPIRY_NOTICE_DAYS = 14

/** What a start says of the certificate it serves when it is, or soon will be, out of its validity (at `now`); else undefined. */
export const certificateValidity = (pem: string, now: number): string | undefined => {
  const cert = new X509Certificate(pem)
  const [from, to] = [Date.parse(cert.validFrom), Date.parse(cert.validTo)]
  const renew = `renew it: the workers linked to this owner follow a renewal it serves (docs/protocol.md, "When the owner's certificate changes")`
  if (now > to) return `the TLS certificate expired at ${new Date(to).toISOString()}: every worker refuses it, and no new one can join; ${renew}`
  if (now < from) {
    // A worker takes a pinned certificate whose start is up to NOT_YET_VALID_SLACK_MS ahead of its
    // own clock (OwnerClient): what to say depends on how far ahead of this machine's clock it is.
    const refusedUntil = from - NOT_YET_VALID_SLACK_MS
    const ahead = now < refusedUntil
      ? `workers whose clocks agree with this machine's refuse it until ${new Date(refusedUntil).toISOString()} (a worker takes a start up to a day ahead of its own clock)`
      : `workers take it (they allow a start up to a day ahead of their own clock), but one whose clock is behind this machine's may not`
    return `the TLS certificate is not valid before ${new Date(from).toISOString()}: ${ahead}; is this machine's clock right?`
  }
  const days = Math.floor((to - now) / 86_400_000)
  if (days < EXPIRY_NOTICE_DAYS) return `the TLS certificate expires at ${new Date(to).toISOString()}, in ${days === 0 ? "less than a day" : days === 1 ? "1 day" : `${days} days`}: then every worker refuses it; ${renew}`
  return undefined
}

const exists = (path: string) => fs.access(path).then(() => true, () => false)

const fingerprintIn = (file: string): Promise<string | undefined> =>
  fs.readFile(file, "utf8").then(
    (pem) => {
      try {
        return fingerprintOf(pem)
      } catch {
        return undefined
      }
    },
    () => undefined
  )

/**
 * The fingerprints of the certificates this home's owner serves: the one it served last (its copy,
 * the operator's own `--tls-cert` included: Succession.ts) and the one it generated for itself.
 */
export const ownFingerprints = async (home: string): Promise<ReadonlyArray<string>> =>
  (await Promise.all([fingerprintIn(nodePath.join(home, "tls", "served.crt")), fingerprintIn(nodePath.join(home, "tls", "owner.crt"))])).filter((f): f is string => f !== undefined)

export const loadOrCreate = async (home: string, given?: { readonly certFile: string; readonly keyFile: string }): Promise<TlsMaterial> => {
  if (given !== undefined) {
    const [cert, key] = await Promise.all([fs.readFile(given.certFile, "utf8"), fs.readFile(given.keyFile, "utf8")])
    return { cert, key, fingerprint: checkedPair(cert, key, given) }
  }
  const dir = nodePath.join(home, "tls")
  const certFile = nodePath.join(dir, "owner.crt")
  const keyFile = nodePath.join(dir, "owner.key")
  if ((await exists(certFile)) && (await exists(keyFile))) {
    const [cert, key] = await Promise.all([fs.readFile(certFile, "utf8"), fs.readFile(keyFile, "utf8")])
    // Checked as a given pair is, each file named: a cut one said only OpenSSL's words ("bad end line").
    return { cert, key, fingerprint: checkedPair(cert, key, { certFile, keyFile }, { cert: "", key: "" }) }
  }
  await makeDirectory(dir, 0o700)
  const host = os.hostname()
  const notAfter = new Date(Date.now() + 10 * 365 * 24 * 3600 * 1000)
  // Valid from a day before it is made: a worker's clock a little behind the owner's (or the
  // owner's ahead when it made it, then corrected) would find it "not valid yet" (clock audit).
  const notBefore = new Date(Date.now() - 24 * 3600 * 1000)
  const pems = await generate([{ name: "commonName", value: `svc owner ${host}` }], {
    keySize: 2048,
    algorithm: "sha256",
    notBeforeDate: notBefore,
    notAfterDate: notAfter,
    extensions: [
      { name: "basicConstraints", cA: false },
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: host },
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
          { type: 7, ip: "::1" }
        ]
      }
    ]
  } as Parameters<typeof generate>[1])
  await fs.writeFile(keyFile, pems.private, { mode: 0o600 })
  await fs.writeFile(certFile, pems.cert, { mode: 0o644 })
  return { cert: pems.cert, key: pems.private, fingerprint: fingerprintOf(pems.cert) }
}
