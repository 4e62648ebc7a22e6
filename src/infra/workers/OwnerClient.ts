/**
 * The worker's HTTPS client for the owner's route. Trust is the pinned certificate: at join the
 * owner's certificate is fetched and must have the fingerprint the join token carries; every
 * later call uses a connection only once it presents exactly that certificate (makeAgent).
 */
import * as https from "node:https"
import * as tls from "node:tls"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Unreachable } from "../../app/workers/Link.js"
import { Refusal, RefusalCode, WorkerResponse, type WorkerRequest } from "../../app/workers/Protocol.js"
import { withoutSecrets } from "../../domain/workers/Secrets.js"
import { hexFingerprint, NOT_YET_VALID_SLACK_MS } from "../tls/OwnerCertificate.js"
import { follow, SuccessionAnswer } from "../tls/Succession.js"

const pemOf = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/(.{64})/g, "$1\n").trimEnd()}\n-----END CERTIFICATE-----\n`

/** Fetches the owner's certificate and checks it against the pinned fingerprint. */
export const fetchPinnedCertificate = (url: string, fingerprint: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    // An IPv6 literal's brackets are the URL's, not the address's (`[::1]` was looked up as a name).
    const socket = tls.connect({ host: u.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(u.port || 443), servername: net(u.hostname), rejectUnauthorized: false }, () => {
      const cert = socket.getPeerCertificate()
      socket.destroy()
      if (!cert || !cert.raw) return reject(new Error(`${url} presented no certificate`))
      if (hexFingerprint(cert) !== fingerprint) {
        return reject(new Error(`${url} presented a certificate with another fingerprint than the join token pins: this is not the owner that invited you`))
      }
      resolve(pemOf(cert.raw))
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

/** The address presented another certificate than the pinned one (its fingerprint), or the pinned one out of its validity. */
class PinProblem extends Error {
  constructor(
    readonly code: "SVC_ANOTHER_CERTIFICATE" | "CERT_HAS_EXPIRED" | "CERT_NOT_YET_VALID",
    message: string
  ) {
    super(message)
  }
}

/** What is wrong with the certificate a connection presented, for a link pinned to `owner`; undefined when it is the pinned one and valid now. */
const pinProblemOf = (socket: tls.TLSSocket, owner: PinnedOwner): PinProblem | undefined => {
  const cert = socket.getPeerCertificate()
  if (!cert || !cert.raw) return new PinProblem("SVC_ANOTHER_CERTIFICATE", "it presented no certificate")
  if (hexFingerprint(cert) !== owner.fingerprint) return new PinProblem("SVC_ANOTHER_CERTIFICATE", "another certificate than the pinned one")
  const now = Date.now()
  if (now > Date.parse(cert.valid_to)) return new PinProblem("CERT_HAS_EXPIRED", "certificate has expired")
  // The pinned certificate is the trust: a start a day ahead of this machine's clock is the two
  // clocks' difference, not a certificate to refuse (an owner whose clock was ahead when it made it).
  if (now < Date.parse(cert.valid_from) - NOT_YET_VALID_SLACK_MS) return new PinProblem("CERT_NOT_YET_VALID", `certificate is not valid before ${new Date(cert.valid_from).toISOString()}`)
  return undefined
}

/** How long a connection of a link's calls may take to complete its TLS handshake (a live owner: milliseconds). */
export const HANDSHAKE_WITHIN_MS = 10_000

/**
 * The agent of a link's calls. Trust is the pinned certificate itself: a connection is handed to
 * a request only once the certificate presented is the pinned one (its SHA-256) and within its
 * validity, so nothing (a credential least of all) is written to any other. Not the pinned
 * certificate as the connection's only CA: a certificate a CA issued (the operator's own
 * `--tls-cert`) cannot anchor itself, and every join to such an owner failed ("it presented
 * another certificate ... UNABLE_TO_VERIFY_LEAF_SIGNATURE", the very one the token pinned).
 */
export const makeAgent = (owner: PinnedOwner, handshakeWithinMs = HANDSHAKE_WITHIN_MS) => {
  // No cap on connections: a call never waits for another one's socket (with 4, a report
  // queued behind calls an owner stopped with SIGSTOP held, and no timeout of its own ran).
  const agent = new https.Agent({ keepAlive: true })
  // Asynchronous (Node's agents take a connection given to the callback later): the request is
  // written to the connection only once it is given.
  const connect = (options: tls.ConnectionOptions, given: (error: Error | null, socket?: tls.TLSSocket) => void): undefined => {
    // The pinned certificate is checked below, whatever names it holds and whoever issued it.
    const socket = tls.connect({ ...options, rejectUnauthorized: false })
    const failed = (e: Error) => given(e)
    socket.once("error", failed)
    // A connection not yet given to its request is the agent's to end, not the request's: a call
    // given up (its timeout) left it open for as long as the other end kept it, a socket a call
    // for an owner that takes connections and never answers them (SIGSTOP, or not TLS at all).
    socket.setTimeout(handshakeWithinMs, () => socket.destroy(new Error(`no TLS handshake within ${handshakeWithinMs / 1000} s`)))
    socket.once("secureConnect", () => {
      socket.setTimeout(0)
      socket.off("error", failed)
      const problem = pinProblemOf(socket, owner)
      if (problem === undefined) return given(null, socket)
      socket.destroy()
      given(problem)
    })
    return undefined
  }
  ;(agent as unknown as { createConnection: typeof connect }).createConnection = connect
  return agent
}

/**
 * A TLS verification failure in words: the address answered with another certificate than the
 * pinned one, or the pinned one is out of its validity (not OpenSSL's "self-signed certificate").
 */
export const certificateProblem = (e: NodeJS.ErrnoException): string | undefined => {
  switch (e.code) {
    case "CERT_HAS_EXPIRED":
      return "the owner's certificate, the one this worker pins, has expired: its operator must renew it (a worker follows a renewal its owner signed: docs/protocol.md, \"When the owner's certificate changes\")"
    case "CERT_NOT_YET_VALID":
      return `the owner's certificate, the one this worker pins, is not valid yet (${e.message}; this machine's time is ${new Date().toISOString()}): this machine's clock or the owner's is wrong by more than a day`
    case "SVC_ANOTHER_CERTIFICATE":
      return "it presented another certificate than the one pinned at join: not the owner that invited this worker, or one that made itself a new certificate without signing the change (then join again with a new token from it)"
    default:
      return undefined
  }
}

/** Whether a TLS failure is the address presenting another certificate than the pinned one (not the pinned one out of its validity). */
const anotherCertificate = (e: NodeJS.ErrnoException): boolean => e.code === "SVC_ANOTHER_CERTIFICATE"

const decodeSuccession = Schema.decodeUnknownEither(SuccessionAnswer)

/**
 * Asks the owner's address, which presented another certificate than the pinned one, for the
 * changes of certificate it signed since the pinned one (Succession.ts), sending no credential:
 * the server is not known to be the owner until the changes check. Answers the owner pinned
 * anew, at the certificate presented, or fails saying why it cannot be followed.
 */
export const followSuccession = (owner: PinnedOwner): Promise<PinnedOwner> =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ kind: "succession", from: owner.fingerprint })
    const u = new URL("/api/worker", owner.url)
    const req = https.request(
      u,
      {
        method: "POST",
        agent: false,
        // Not verified here: what it presents is checked against the signed changes below.
        rejectUnauthorized: false,
        servername: net(u.hostname),
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      },
      (res) => {
        const cert = (res.socket as tls.TLSSocket).getPeerCertificate()
        const chunks: Array<Buffer> = []
        let size = 0
        res.on("data", (c: Buffer) => {
          size += c.length
          // Not the owner's (a hundred steps are some 300 KB): not read on.
          if (size > MAX_SUCCESSION_BYTES) {
            // Said first: the end of a response cut short would be read as a body that is not JSON.
            reject(new Error(`its answer about its changes of certificate is over ${MAX_SUCCESSION_BYTES / 1024 / 1024} MiB`))
            return req.destroy()
          }
          chunks.push(c)
        })
        res.on("error", reject)
        res.on("end", () => {
          if (!cert || !cert.raw) return reject(new Error("it presented no certificate"))
          let json: unknown
          try {
            json = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          } catch {
            return reject(new Error(`asked for its signed changes of certificate, it answered ${res.statusCode} with a body that is not JSON`))
          }
          const answer = res.statusCode === 200 ? decodeSuccession(json) : undefined
          // An svc from before these changes refuses the question as no worker message.
          if (answer === undefined || answer._tag === "Left") return reject(new Error("it offered no change signed by the pinned certificate's key (an svc too old to sign one, or not the owner)"))
          const presented = hexFingerprint(cert)
          const followed = follow(owner.certificate, answer.right.steps, presented)
          if ("problem" in followed) return reject(new Error(followed.problem))
          resolve({ url: owner.url, fingerprint: presented, certificate: followed.certificate })
        })
      }
    )
    // Within 15 s in all, however slowly an answer trickles in.
    const deadline = setTimeout(() => {
      reject(new Error("no whole answer about its changes of certificate within 15 s"))
      req.destroy()
    }, 15_000)
    req.on("close", () => clearTimeout(deadline))
    req.on("error", reject)
    req.end(body)
  })

/** The most a worker reads of an answer about the owner's changes of certificate. */
const MAX_SUCCESSION_BYTES = 4 * 1024 * 1024

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

/** One call of the route: the answer, a refusal, or Unreachable. */
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
              : Effect.fail(
                  new Unreachable({
                    message: `${owner.url} answered ${res.statusCode}${messageOf(json)}`,
                    // An owner reading its journal at its start: it answers in a moment.
                    ...(res.statusCode === 503 && (json as { code?: unknown } | null)?.code === "starting" ? { starting: true } : {})
                  })
                )
          )
        })
      }
    )
    req.on("error", (e: NodeJS.ErrnoException) =>
      resume(Effect.fail(new Unreachable({ message: `${owner.url}: ${certificateProblem(e) ?? e.message}`, ...(anotherCertificate(e) ? { certificateChanged: true } : {}) })))
    )
    req.end(body)
    return Effect.sync(() => req.destroy())
  }).pipe(
    // From the moment it is made, not from when it gets a connection (a socket's own timeout):
    // an owner stopped with SIGSTOP takes connections and answers nothing. Given up, the request
    // is destroyed (the canceler above).
    Effect.timeoutFail({ duration: Duration.millis(timeoutMs), onTimeout: () => new Unreachable({ message: `${owner.url}: no answer within ${timeoutMs / 1000} s` }) })
  )

/**
 * The calls of one link: `callOwner` with the link's pin, following a change of the owner's
 * certificate signed with the pinned one's key (`followSuccession`): the new pin is used from
 * then on, handed to `save` (the link's file), and the call that met the change is made again.
 * Calls that meet it at once wait for the same follow. A follow that fails fails the call, saying
 * why, and the next call tries again (the link backs off between its tries).
 */
export const followingCaller = (
  initial: PinnedOwner,
  save: (next: PinnedOwner) => Effect.Effect<void>
) => {
  let owner = initial
  let agent = makeAgent(owner)
  let following: Promise<PinnedOwner> | undefined
  const followed = (from: PinnedOwner, met: Unreachable) =>
    Effect.suspend(() => {
      // Pinned anew meanwhile, by a call that met the change first: nothing to follow.
      if (owner !== from) return Effect.void
      following ??= followSuccession(from).finally(() => (following = undefined))
      const once = following
      return Effect.tryPromise({ try: () => once, catch: (e) => new Unreachable({ message: `${met.message}; asked for a change signed by the pinned certificate's key: ${e instanceof Error ? e.message : String(e)}` }) }).pipe(
        Effect.flatMap((next) =>
          owner !== from
            ? Effect.void
            : Effect.zipRight(
                Effect.sync(() => {
                  owner = next
                  agent.destroy()
                  agent = makeAgent(next)
                }),
                Effect.zipRight(
                  Effect.logInfo(`the owner at ${next.url} changed its TLS certificate, signed with the key of the one pinned (sha256 ${from.fingerprint}): sha256 ${next.fingerprint} is pinned now`),
                  save(next)
                )
              )
        )
      )
    })
  const call = (bearer: string, request: WorkerRequest): Effect.Effect<import("../../app/workers/Protocol.js").WorkerResponse, Refusal | Unreachable> =>
    Effect.suspend(() => {
      const used = owner
      return callOwner(used, agent, bearer, request).pipe(
        Effect.catchIf(
          (e): e is Unreachable => e._tag === "Unreachable" && e.certificateChanged === true,
          (met) => Effect.zipRight(followed(used, met), Effect.suspend(() => callOwner(owner, agent, bearer, request)))
        )
      )
    })
  return { call, pinned: () => owner, close: () => agent.destroy() }
}
