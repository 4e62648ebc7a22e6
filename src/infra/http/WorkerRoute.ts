/**
 * The single worker route, `POST /api/worker`, served over HTTPS by node:https with a thin
 * handler: the transport rules are enforced here (a worker credential on any other route or
 * method: 401; body over 64 KiB: 413; not JSON: 415; strict decoding: 400), then the call goes
 * to the Owner service and its answer or refusal is encoded (docs/protocol.md). The messages
 * are the Schemas of app/workers/Protocol.ts, also declared as an HttpApi (WorkerApi.ts) for
 * the OpenAPI document.
 */
import { isUtf8 } from "node:buffer"
import type * as http from "node:http"
import * as https from "node:https"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Cause from "effect/Cause"
import * as ParseResult from "effect/ParseResult"
import { issuesText } from "../schema/Issues.js"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { Owner } from "../../app/workers/Owner.js"
import { MAX_BODY_BYTES, Refusal, STATUS, WorkerRequest, WorkerResponse } from "../../app/workers/Protocol.js"
import { CREDENTIAL_PREFIX, withoutSecrets } from "../../domain/workers/Secrets.js"
import { connectionCap } from "./ConnectionCap.js"
import { depthOf, MAX_VALUE_DEPTH } from "../../domain/runs/Values.js"
import { duplicateKeyIn, secretPlaceIn } from "../../domain/workers/StrictJson.js"
import { strictGuard } from "../schema/Guard.js"
import { pathOf, SuccessionRequest, type SuccessionAnswer, type SuccessionStep } from "../tls/Succession.js"

export const ROUTE = "/api/worker"
/** The kinds of call the route takes (docs/protocol.md, "Messages"). */
const REQUEST_KINDS = ["join", "hello", "advertise", "heartbeat", "claim", "decline", "report", "bye", "leave"] as const
export { MAX_BODY_BYTES }

const decodeRequest = ParseResult.decodeUnknownEither(WorkerRequest, { errors: "all", onExcessProperty: "error" })
const decodeSuccession = ParseResult.decodeUnknownEither(SuccessionRequest, { errors: "all", onExcessProperty: "error" })
/** A body this lets through is one the decoder accepts as it is: the decoder is skipped (schema/Guard.ts). */
const isRequest = strictGuard(WorkerRequest)
const encodeSync = Schema.encodeSync(WorkerResponse)
const isResponse = strictGuard(WorkerResponse)
/** A response the strict guard lets through is its own encoding (the schemas transform nothing). */
const encodeResponse = (response: WorkerResponse): unknown => (isResponse(response) ? response : encodeSync(response))

/** `close`: the connection ends with this answer (Connection: close) instead of being kept for the next call. */
const send = (res: http.ServerResponse, status: number, body: unknown, close = false) => {
  if (res.headersSent) return
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...(close ? { connection: "close" } : {})
  })
  res.end(text)
}

/**
 * Refusals after which the connection is closed: a caller not shown to hold a credential (or one
 * whose call is not a worker's at all) does not keep a connection open by calling again and
 * again. A worker's own refusals (fenced, superseded, ...) keep it: the worker calls on.
 */
const CLOSES: ReadonlySet<keyof typeof STATUS> = new Set(["unauthenticated", "join-refused", "bad-request", "payload-too-large", "unsupported-media-type"] as const)

/** A refusal quotes what was sent at most cut to a secret's prefix: a worker's log keeps these messages. */
const refuse = (res: http.ServerResponse, code: keyof typeof STATUS, message: string, extra: Record<string, unknown> = {}) =>
  send(res, STATUS[code], { code, message: withoutSecrets(message), ...extra }, CLOSES.has(code))

/** Top-level fields a secret-shaped string may be in: a join's earlier credential (its proof) and join key, a job's own result and output. */
const SECRETS_MAY_BE_IN: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ["join", new Set(["previousCredential", "joinKey"])],
  ["report", new Set(["outcome", "output"])],
  ["heartbeat", new Set(["output"])]
])
const NO_FIELDS: ReadonlySet<string> = new Set()

/**
 * How deep a body may nest (objects and arrays within each other): a report's result may nest as
 * deep as a run's result (MAX_VALUE_DEPTH), and lies 2 levels down (`outcome.result`). A body of
 * 64 KiB can nest 30,000 levels; wording the refusal of one that deep overflowed the call stack
 * (the decoder's message quotes the value) and stopped the owner, before authentication.
 */
export const MAX_BODY_DEPTH = MAX_VALUE_DEPTH + 2

/**
 * Why a parsed body is refused before it is decoded: a key twice in one object (the last would
 * win), or a secret-shaped string where it would be journaled, shown or echoed.
 */
const bodyProblem = (text: string, json: unknown): string | undefined => {
  if (depthOf(json, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) return `the body nests more than ${MAX_BODY_DEPTH} levels deep (objects and arrays within each other); at most ${MAX_BODY_DEPTH} are taken`
  const twice = duplicateKeyIn(text)
  if (twice !== undefined) return `the body names ${twice} twice: a key may appear once in an object`
  const kind = typeof json === "object" && json !== null ? (json as { readonly kind?: unknown }).kind : undefined
  // A map, not an object's keys: a kind such as "constructor" found what every object inherits.
  const secret = secretPlaceIn(json, typeof kind === "string" ? (SECRETS_MAY_BE_IN.get(kind) ?? NO_FIELDS) : NO_FIELDS)
  if (secret !== undefined) {
    return `${secret} holds what is shaped as an svc secret (a credential, join token or join key): refused, so that no secret is recorded or shown (a credential goes in the Authorization header only)`
  }
  return undefined
}

/** A charset other than UTF-8 named in Content-Type (any of them, when several are), or undefined. */
const otherCharset = (type: string): string | undefined => {
  for (const m of type.matchAll(/;\s*charset\s*=\s*"?([^";\s]*)"?/gi)) {
    if (!/^utf-?8$/i.test(m[1]!)) return m[1] === "" ? "an empty charset" : m[1]
  }
  return undefined
}

/** The bearer token as presented, or undefined. */
export const bearerOf = (req: http.IncomingMessage): string | undefined => {
  const header = req.headers["authorization"]
  if (typeof header !== "string") return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return m?.[1]
}

/**
 * The answer to a finished call: its response, its refusal, or a bare 500 for a bug, which
 * `logBug` says in the runtime's log (with its time and level: it was written bare to stderr).
 */
const answer = (res: http.ServerResponse, exit: Exit.Exit<WorkerResponse, Refusal>, logBug: (line: string) => void): void => {
  if (Exit.isSuccess(exit)) return send(res, 200, encodeResponse(exit.value))
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some" && failure.value instanceof Refusal) {
    const r = failure.value
    return refuse(res, r.code, r.message, r.stopAll === true ? { stopAll: true } : {})
  }
  if (Cause.isInterruptedOnly(exit.cause)) return void res.destroy()
  // A bug, not a refusal: say so without details (they may hold what must not leak).
  logBug(`internal error on ${ROUTE} (a bug of svc's; the call was answered 500): ${Cause.pretty(exit.cause).split("\n")[0]}`)
  return send(res, 500, { code: "internal", message: "the owner failed to handle this call" })
}

/**
 * `succession`: the changes of certificate this owner signed and the fingerprint of the one it
 * serves, for the workers that pinned an earlier one (none: it answers that it knows none).
 */
export const makeHandler = (runtime: Runtime.Runtime<Owner>, succession?: { readonly steps: ReadonlyArray<SuccessionStep>; readonly current: string }) => {
  const fork = Runtime.runFork(runtime)
  const owner = Context.get(runtime.context, Owner)
  // The runtime's clock (a test clock under test), read without running an effect.
  const clock = Runtime.runSync(runtime)(Clock.clockWith(Effect.succeed))
  const inflight = new Set<Fiber.RuntimeFiber<Exit.Exit<WorkerResponse, Refusal>>>()
  const logBug = (line: string) => void fork(Effect.logError(line))
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const bearer = bearerOf(req)
    const path = (req.url ?? "").split("?")[0]
    if (path !== ROUTE || req.method !== "POST") {
      // Spec: the worker's credential opens this route and nothing else.
      if (bearer?.startsWith(CREDENTIAL_PREFIX)) {
        refuse(res, "unauthenticated", `a worker credential opens POST ${ROUTE} and nothing else`)
      } else send(res, 404, { code: "not-found", message: `this server answers POST ${ROUTE} only` }, true)
      req.resume()
      return
    }
    const type = String(req.headers["content-type"] ?? "")
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      refuse(res, "unsupported-media-type", "the body must be JSON, sent as Content-Type: application/json")
      req.resume()
      return
    }
    const charset = otherCharset(type)
    if (charset !== undefined) {
      refuse(res, "unsupported-media-type", `the body must be JSON in UTF-8, not ${charset}`)
      req.resume()
      return
    }
    const declared = Number(req.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES) {
      refuse(res, "payload-too-large", `the body may be at most ${MAX_BODY_BYTES} bytes`)
      req.resume()
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let tooLarge = false
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        tooLarge = true
        return
      }
      chunks.push(chunk)
    })
    req.on("error", () => res.destroy())
    req.on("end", () => {
      // What the body is answered with, or a bare 500 for a bug: an exception thrown here, outside
      // any fiber, would stop the whole owner (it did, for a body no check had foreseen).
      try {
        onBody()
      } catch (e) {
        logBug(`internal error on ${ROUTE} (a bug of svc's; the call was answered 500): ${withoutSecrets(e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 500)}`)
        send(res, 500, { code: "internal", message: "the owner failed to handle this call" }, true)
      }
    })
    const onBody = () => {
      if (tooLarge) return refuse(res, "payload-too-large", `the body may be at most ${MAX_BODY_BYTES} bytes`)
      const body = Buffer.concat(chunks)
      // Decoding would put U+FFFD for each bad byte, and the owner would record what was not sent.
      if (!isUtf8(body)) return refuse(res, "bad-request", "the body is not valid UTF-8: JSON between systems is UTF-8 (RFC 8259)")
      const text = body.toString("utf8")
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch (e) {
        return refuse(res, "bad-request", `the body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`)
      }
      // Not an object at all: said in a sentence (the decoder's message spelt out every message's type, 1.9 KB).
      if (typeof json !== "object" || json === null || Array.isArray(json)) {
        return refuse(res, "bad-request", `the body is not a worker message: it must be a JSON object with a kind (${REQUEST_KINDS.join(", ")}), not ${json === null ? "null" : Array.isArray(json) ? "a list" : `a ${typeof json}`}`)
      }
      const problem = bodyProblem(text, json)
      if (problem !== undefined) return refuse(res, "bad-request", problem)
      // A worker that met a certificate it has not pinned asks, with no credential, how the
      // owner's certificate changed since (Succession.ts): answered from what this start keeps.
      if (typeof json === "object" && json !== null && (json as { readonly kind?: unknown }).kind === "succession") {
        const asked = decodeSuccession(json)
        if (asked._tag === "Left") return refuse(res, "bad-request", `the body is not a worker message: ${issuesText(asked.left, 5)}`)
        const steps = succession === undefined ? [] : pathOf(succession.steps, asked.right.from, succession.current)
        return send(res, 200, { kind: "succession", steps } satisfies SuccessionAnswer)
      }
      let request: WorkerRequest
      if (isRequest(json)) request = json
      else {
        const decoded = decodeRequest(json)
        if (decoded._tag === "Left") return refuse(res, "bad-request", `the body is not a worker message: ${issuesText(decoded.left, 5)}`)
        request = decoded.right
      }
      // Most calls (an unchanged refresh, a refused credential) are answered from the state as it
      // is, without a fiber; the rest run as one, answered at once when they did not wait.
      const now = owner.answerNow(bearer, request, clock.unsafeCurrentTimeMillis())
      if (now !== undefined) return answer(res, now instanceof Refusal ? Exit.fail(now) : Exit.succeed(now), logBug)
      // Its outcome as a value: a refusal is an answer, not a fiber failing (which Effect logs
      // at DEBUG with its message: the refused secret itself, and a line per unauthenticated call).
      const fiber = fork(Effect.exit(owner.handle(bearer, request)))
      const done = fiber.unsafePoll()
      if (done !== null) return answer(res, Exit.flatten(done), logBug)
      inflight.add(fiber)
      // A caller that went away (a worker stopped mid long-poll) does not keep its call running.
      res.once("close", () => {
        if (!res.writableEnded) Effect.runFork(Fiber.interrupt(fiber))
      })
      fiber.addObserver((exit) => {
        inflight.delete(fiber)
        answer(res, Exit.flatten(exit), logBug)
      })
    }
  }
  /** Interrupts every call still running (a claim's long poll): the runtime is stopping. */
  const interruptAll = () => Effect.runPromise(Fiber.interruptAll(inflight))
  return Object.assign(handler, { interruptAll })
}

/**
 * What the route answers while the owner starts (it listens before it has folded its journal,
 * so that a port already in use is said at once): 503, `starting`, call again in a second. The
 * calls used to wait unanswered for the whole start, up to the request timeout.
 */
export const startingHandler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
  if (!res.headersSent) res.setHeader("retry-after", "1")
  send(res, 503, { code: "starting", message: "svc serve is starting (it reads its journal): call again in a moment" }, true)
  req.resume()
}

export interface ServeOptions {
  readonly cert: string
  readonly key: string
  readonly host: string
  readonly port: number
  /** Connections held at once (ConnectionCap.ts); default from this process's limit of open files. */
  readonly maxConnections?: number
}

/**
 * The HTTPS server, with timeouts against slow clients, keep-alive well above 5 s, and a cap on
 * the connections held at once (docs/protocol.md, "Limits").
 */
export const createServer = (options: ServeOptions, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): https.Server => {
  // Node checks the header and request timeouts every connectionsCheckingInterval (30 s by
  // default): a client that stopped mid-headers was cut after 20-40 s, not 10. A TLS handshake
  // not finished in 10 s is dropped (Node's default: 120 s for a connection that says nothing).
  const server = https.createServer({ cert: options.cert, key: options.key, connectionsCheckingInterval: 1_000, handshakeTimeout: 10_000 }, handler)
  server.maxConnections = options.maxConnections ?? connectionCap()
  server.headersTimeout = 10_000
  // A claim may wait up to 30 s for work.
  server.requestTimeout = 60_000
  server.keepAliveTimeout = 65_000
  server.maxHeadersCount = 50
  return server
}
