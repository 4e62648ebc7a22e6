/**
 * The shapes of svc's secrets, so a mistyped or truncated one is refused before any lookup and
 * a leaked one is recognisable to secret scanners (as GitHub's `ghp_` tokens are):
 *
 *   worker credential   svc_wk_<30 base62 random><6 base62 CRC-32>
 *   join token          svc_jt_<base64url(JSON {v, u, f, i, s})>_<6 base62 CRC-32>
 *   join key            svc_jk_<30 base62 random><6 base62 CRC-32>
 *
 * The join token carries what a worker needs to reach and trust the owner: its URL (`u`), the
 * SHA-256 fingerprint of its TLS certificate (`f`), the invite id (`i`) and the secret (`s`).
 * It carries no scope: the owner keeps the scope, so editing a token cannot widen it.
 * The join key is made by the joining machine and sent with its join: the owner keeps its hash,
 * and answers a join again, with a new credential, to the one machine that can show the key
 * (a join whose answer was lost; docs/protocol.md, "A join whose answer never came").
 * Random bytes come in from the edge (the domain makes no randomness).
 */
export const CREDENTIAL_PREFIX = "svc_wk_"
export const JOIN_TOKEN_PREFIX = "svc_jt_"
export const JOIN_KEY_PREFIX = "svc_jk_"

/**
 * A credential, join token or join key, or the start of one, anywhere in a text: a prefix
 * followed by at least one character a secret's body is made of. The one pattern behind both
 * what is cut from messages and what is refused where a value would be recorded, so the two agree.
 */
const SECRET_SHAPED = /svc_(wk|jt|jk)_[A-Za-z0-9_-]+/g
const SECRET_SHAPED_ONCE = new RegExp(SECRET_SHAPED.source)

/**
 * `text` with every credential or join token in it cut to its prefix (`svc_wk_…`): what a
 * message that quotes words a person typed (a token pasted where a name belongs) may show.
 */
export const withoutSecrets = (text: string): string => text.replace(SECRET_SHAPED, (_, kind: string) => `svc_${kind}_…`)

/**
 * Whether `text` holds something shaped as a credential or join token anywhere: a value that
 * would be journaled or shown (a name, a label, a scope) must not, since the journal keeps it for
 * ever and every listing repeats it.
 */
export const holdsSecret = (text: string): boolean => SECRET_SHAPED_ONCE.test(text)

/** What a value holding a secret's shape is told, naming `what` it was given as. */
export const secretRefusal = (what: string): string =>
  `${what} holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…): refused, so that no secret is recorded or shown`

/** Which secret `word` is shaped as, if it is one. */
export const secretKindOf = (word: string): "credential" | "join token" | undefined => {
  const w = word.trim()
  return w.startsWith(CREDENTIAL_PREFIX) ? "credential" : w.startsWith(JOIN_TOKEN_PREFIX) ? "join token" : undefined
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

export const crc32 = (text: string): number => {
  let crc = 0xffffffff
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    // Secrets are ASCII; a non-ASCII character still changes the sum.
    crc = CRC_TABLE[(crc ^ (code & 0xff)) & 0xff]! ^ (crc >>> 8)
    if (code > 0xff) crc = CRC_TABLE[(crc ^ (code >>> 8)) & 0xff]! ^ (crc >>> 8)
  }
  return (crc ^ 0xffffffff) >>> 0
}

export const base62 = (n: number, width: number): string => {
  let out = ""
  let v = n
  for (let i = 0; i < width; i++) {
    out = BASE62[v % 62]! + out
    v = Math.floor(v / 62)
  }
  return out
}

/** 30 base62 characters from at least 30 random bytes (each byte picks one character). */
export const base62FromBytes = (bytes: Uint8Array, length = 30): string => {
  if (bytes.length < length) throw new Error(`need ${length} random bytes`)
  let out = ""
  for (let i = 0; i < length; i++) out += BASE62[bytes[i]! % 62]
  return out
}

const checksum = (body: string) => base62(crc32(body), 6)

export const makeCredential = (randomBytes: Uint8Array): string => {
  const body = CREDENTIAL_PREFIX + base62FromBytes(randomBytes)
  return body + checksum(body)
}

/** A join key (see above) from 30 random bytes. */
export const makeJoinKey = (randomBytes: Uint8Array): string => {
  const body = JOIN_KEY_PREFIX + base62FromBytes(randomBytes)
  return body + checksum(body)
}

const JOIN_KEY_SHAPE = /^svc_jk_[0-9A-Za-z]{36}$/

/** Why a join key is malformed (said without repeating it), or undefined when its shape and checksum hold. */
export const joinKeyProblem = (key: string): string | undefined => {
  if (!JOIN_KEY_SHAPE.test(key)) return "joinKey must be svc_jk_ followed by 36 letters and digits"
  if (checksum(key.slice(0, -6)) !== key.slice(-6)) return "joinKey's checksum does not match: it was changed or cut short"
  return undefined
}

const CREDENTIAL_SHAPE = /^svc_wk_[0-9A-Za-z]{36}$/

/** Why a presented credential is malformed, or undefined when its shape and checksum hold. */
export const credentialProblem = (credential: string): string | undefined => {
  if (!credential.startsWith(CREDENTIAL_PREFIX)) return "a worker credential starts with svc_wk_"
  if (!CREDENTIAL_SHAPE.test(credential)) return "a worker credential is svc_wk_ followed by 36 letters and digits"
  if (checksum(credential.slice(0, -6)) !== credential.slice(-6)) return "the worker credential's checksum does not match: it was mistyped or truncated"
  return undefined
}

export interface JoinTokenContent {
  /** The owner's URL the worker calls, e.g. https://owner.lan:7443 */
  readonly url: string
  /** SHA-256 fingerprint of the owner's TLS certificate, hex. */
  readonly fingerprint: string
  readonly inviteId: string
  /** The secret; the owner keeps only its SHA-256. */
  readonly secret: string
}

const toBase64Url = (text: string): string => {
  const bytes = new TextEncoder().encode(text)
  let binary = ""
  for (const b of bytes) binary += String.fromCharCode(b)
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

const fromBase64Url = (text: string): string | undefined => {
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"))
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
  } catch {
    return undefined
  }
}

export const formatJoinToken = (c: JoinTokenContent): string => {
  const body = JOIN_TOKEN_PREFIX + toBase64Url(JSON.stringify({ v: 1, u: c.url, f: c.fingerprint, i: c.inviteId, s: c.secret }))
  return `${body}_${checksum(body)}`
}

export const parseJoinToken = (token: string): JoinTokenContent | string => {
  const trimmed = token.trim()
  if (!trimmed.startsWith(JOIN_TOKEN_PREFIX)) return "a join token starts with svc_jt_"
  const cut = trimmed.lastIndexOf("_")
  const body = trimmed.slice(0, cut)
  if (cut <= JOIN_TOKEN_PREFIX.length || checksum(body) !== trimmed.slice(cut + 1)) {
    return "the join token's checksum does not match: it was mistyped, truncated or edited"
  }
  const json = fromBase64Url(body.slice(JOIN_TOKEN_PREFIX.length))
  let parsed: unknown
  try {
    parsed = json === undefined ? undefined : JSON.parse(json)
  } catch {
    parsed = undefined
  }
  const p = parsed as Record<string, unknown> | undefined
  if (
    p === undefined ||
    p["v"] !== 1 ||
    typeof p["u"] !== "string" ||
    typeof p["f"] !== "string" ||
    !/^[0-9a-f]{64}$/.test(p["f"]) ||
    typeof p["i"] !== "string" ||
    typeof p["s"] !== "string"
  ) {
    return "the join token is not one this svc can read"
  }
  return { url: p["u"], fingerprint: p["f"], inviteId: p["i"], secret: p["s"] }
}
