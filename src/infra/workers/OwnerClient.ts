/**
 * The worker's HTTPS client for the owner's route. Trust is the pinned certificate: at join the
 * owner's certificate is fetched and must have the fingerprint the join token carries; every
 * later call trusts exactly that certificate (as its only CA) and checks the fingerprint again.
 */
import * as https from "node:https"
import * as tls from "node:tls"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Unreachable } from "../../app/workers/Link.js"
import { Refusal, RefusalCode, WorkerResponse, type WorkerRequest } from "../../app/workers/Protocol.js"
import { withoutSecrets } from "../../domain/workers/Secrets.js"

const fingerprintHex = (cert: tls.PeerCertificate) => cert.fingerprint256.replace(/:/g, "").toLowerCase()

/** Fetches the owner's certificate and checks it against the pinned fingerprint. */
export const fetchPinnedCertificate = (url: string, fingerprint: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    const socket = tls.connect({ host: u.hostname, port: Number(u.port || 443), servername: net(u.hostname), rejectUnauthorized: false }, () => {
      const cert = socket.getPeerCertificate()
      socket.destroy()
      if (!cert || !cert.raw) return reject(new Error(`${url} presented no certificate`))
      if (fingerprintHex(cert) !== fingerprint) {
        return reject(new Error(`${url} presented a certificate with another fingerprint than the join token pins: this is not the owner that invited you`))
      }
      const b64 = cert.raw.toString("base64").replace(/(.{64})/g, "$1\n").trimEnd()
      resolve(`-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`)
    })
    socket.setTimeout(10_000, () => socket.destroy(new Error(`${url} did not answer within 10 s`)))
    socket.on("error", reject)
  })

/** SNI takes names, not IP addresses. */
const net = (host: string) => (/^[\d.]+$/.test(host) || host.includes(":") ? undefined : host) as string

const decodeResponse = Schema.decodeUnknownEither(WorkerResponse)
const decodeRefusal = Schema.decodeUnknownEither(Schema.Struct({ code: RefusalCode, message: Schema.String, stopAll: Schema.optionalWith(Schema.Boolean, { exact: true }) }))

export interface PinnedOwner {
  readonly url: string
  readonly fingerprint: string
  readonly certificate: string
}

export const makeAgent = (owner: PinnedOwner) =>
  new https.Agent({
    keepAlive: true,
    ca: owner.certificate,
    // The pinned certificate is the trust anchor; its name need not match the URL's host.
    checkServerIdentity: (_host, cert) => (fingerprintHex(cert) === owner.fingerprint ? undefined : new Error("the owner's certificate changed: not the pinned one"))
    // No cap on connections: a call never waits for another one's socket (with 4, a report
    // queued behind calls an owner stopped with SIGSTOP held, and no timeout of its own ran).
  })

/**
 * A TLS verification failure in words. The agent trusts the pinned certificate alone, so any
 * failure of that check means the owner's address answered with another certificate (or the
 * pinned one is out of its validity): said so, not as OpenSSL's "self-signed certificate".
 */
export const certificateProblem = (e: NodeJS.ErrnoException): string | undefined => {
  switch (e.code) {
    case "CERT_HAS_EXPIRED":
      return "the owner's certificate, the one pinned at join, has expired: its operator must renew it, and this worker join again with a new token"
    case "CERT_NOT_YET_VALID":
      return "the owner's certificate, the one pinned at join, is not valid yet: check this machine's clock"
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
    case "SELF_SIGNED_CERT_IN_CHAIN":
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
    case "UNABLE_TO_GET_ISSUER_CERT_LOCALLY":
    case "CERT_SIGNATURE_FAILURE":
    case "CERT_UNTRUSTED":
      return `it presented another certificate than the one pinned at join (TLS: ${e.code}): not the owner that invited this worker, or one that made itself a new certificate (then join again with a new token from it)`
    default:
      return e.message === "the owner's certificate changed: not the pinned one"
        ? "it presented another certificate than the one pinned at join (same issuer, another fingerprint): not the owner that invited this worker, or one that made itself a new certificate (then join again with a new token from it)"
        : undefined
  }
}

/** One call of the route: the answer, a refusal, or Unreachable. */
/** The message of an answer that is no refusal (an owner starting says so), as `: message`; else nothing. */
const messageOf = (json: unknown): string => {
  const message = typeof json === "object" && json !== null ? (json as { readonly message?: unknown }).message : undefined
  return typeof message === "string" && message !== "" ? `: ${withoutSecrets(message.slice(0, 300))}` : ""
}

/**
 * How long a call waits for its answer: a claim, its wait at the owner and 25 s more; any other
 * call 15 s (a live owner answers in milliseconds; an owner stopped with SIGSTOP takes the
 * connection and says nothing, and what waits on the answer, a report's slot, a stop, should not
 * wait long for it).
 */
export const answerWithinMs = (request: WorkerRequest): number => (request.kind === "claim" ? request.waitSeconds * 1000 + 25_000 : 15_000)

export const callOwner = (owner: PinnedOwner, agent: https.Agent, bearer: string, request: WorkerRequest, timeoutMs = answerWithinMs(request)) =>
  Effect.async<import("../../app/workers/Protocol.js").WorkerResponse, Refusal | Unreachable>((resume) => {
    const body = JSON.stringify(request)
    const u = new URL("/api/worker", owner.url)
    const req = https.request(
      u,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${bearer}` }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("error", (e) => resume(Effect.fail(new Unreachable({ message: `${owner.url}: ${e.message}` }))))
        res.on("end", () => {
          let json: unknown
          try {
            json = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          } catch {
            return resume(Effect.fail(new Unreachable({ message: `${owner.url} answered ${res.statusCode} with a body that is not JSON` })))
          }
          if (res.statusCode === 200) {
            const answer = decodeResponse(json)
            return resume(answer._tag === "Right" ? Effect.succeed(answer.right) : Effect.fail(new Unreachable({ message: `${owner.url} answered something this svc cannot read` })))
          }
          const refusal = decodeRefusal(json)
          return resume(
            refusal._tag === "Right"
              ? Effect.fail(new Refusal(refusal.right))
              : Effect.fail(new Unreachable({ message: `${owner.url} answered ${res.statusCode}${messageOf(json)}` }))
          )
        })
      }
    )
    req.on("error", (e: NodeJS.ErrnoException) => resume(Effect.fail(new Unreachable({ message: `${owner.url}: ${certificateProblem(e) ?? e.message}` }))))
    req.end(body)
    return Effect.sync(() => req.destroy())
  }).pipe(
    // From the moment it is made, not from when it gets a connection (a socket's own timeout):
    // an owner stopped with SIGSTOP takes connections and answers nothing. Given up, the request
    // is destroyed (the canceler above).
    Effect.timeoutFail({ duration: Duration.millis(timeoutMs), onTimeout: () => new Unreachable({ message: `${owner.url}: no answer within ${timeoutMs / 1000} s` }) })
  )
