/** Calls the running runtime's admin API; not running is exit 2 (CLI contract), a refusal exit 1. */
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { adminCall, ForeignSocket, RuntimeNotRunning, SocketPathTooLong } from "../infra/http/AdminApi.js"
import { SvcHome } from "../infra/SvcHome.js"
import { refused, setupProblem, unreachable } from "./CliFailure.js"

/** Why the admin socket could not be used: not reachable, exit 2 (CLI contract). */
const notAnswering = (e: unknown): string => {
  const code = (e as { code?: unknown }).code
  if (code === "EACCES" || code === "EPERM") {
    return `the runtime's admin socket refuses this user (${code}): run svc as the user that runs svc serve for this $SVC_HOME`
  }
  return `the runtime did not answer: ${e instanceof Error ? e.message : String(e)}`
}

/**
 * A runtime that is there but does not answer (stopped with SIGSTOP, a suspended machine, an
 * event loop held) accepts the connection and says nothing: a call is given up after
 * `ANSWER_WITHIN` as one to a runtime that is not there (exit 2), said on stderr once
 * `SLOW_NOTICE` has passed. (A call that ran without limit hung as long as the runtime was stopped.)
 */
export const SLOW_NOTICE = Duration.seconds(10)
export const ANSWER_WITHIN = Duration.seconds(60)

export interface AdminOptions {
  /** How long the runtime may take to answer (a call that waits on the runtime's side: that wait and a margin). */
  readonly answerWithin?: Duration.Duration
  /** Whether to say on stderr that it has not answered in `SLOW_NOTICE` (not for a call expected to wait). */
  readonly notice?: boolean
}

/** Admin routes that change something: given up on, such a request may still be carried out. */
const CHANGING = new Set(["/invite", "/rotate", "/revoke", "/release", "/runs/submit", "/runs/stop"])

/** Says on stderr, once `SLOW_NOTICE` has passed without an answer, that the runtime has not answered. */
export const slowNotice = <A, E, R>(effect: Effect.Effect<A, E, R>, home: string, then: string): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Effect.fork(Effect.zipRight(Effect.sleep(SLOW_NOTICE), Console.error(`note: svc serve for ${home} has not answered in ${Duration.toSeconds(SLOW_NOTICE)} s (its process stopped, or its machine overloaded?); ${then}`))),
    (notice) => Effect.ensuring(effect, Fiber.interrupt(notice))
  )

/** The code of the runtime's refusal (`{code, message}`), when it gives one. */
const codeOf = (body: unknown): string | undefined => {
  const code = typeof body === "object" && body !== null ? (body as { code?: unknown }).code : undefined
  return typeof code === "string" && /^[a-z][a-z0-9-]{0,63}$/.test(code) ? code : undefined
}

export const admin = (method: "GET" | "POST", path: string, body?: unknown, options: AdminOptions = {}) =>
  Effect.flatMap(SvcHome, (home) => {
    const within = options.answerWithin ?? ANSWER_WITHIN
    // A request sent cannot be taken back: a runtime stopped (SIGSTOP) carries it out when it resumes.
    const keyed = path === "/runs/submit" && typeof (body as { readonly key?: unknown } | undefined)?.key === "string"
    const caveat = (what: string) =>
      !CHANGING.has(path)
        ? ""
        : keyed
          ? `; the request was sent and ${what}: sending it again with the same --idempotency-key answers that run if it was made, and makes it if not`
          : `; the request was sent and ${what}: look (svc runs list, svc workers status) before sending it again`
    const sent = caveat("may still be carried out when it runs again")
    // The connection lost once the request was on its way (the runtime killed, say): it may have
    // been recorded before the runtime went, and a retry would then do it twice.
    const lost = (e: unknown) => {
      const code = (e as { code?: unknown }).code
      return code === "EACCES" || code === "EPERM" || code === "ENOENT" || code === "ECONNREFUSED" ? "" : caveat("may have been carried out (in part, for a stop of several runs) before the runtime went")
    }
    const call = Effect.tryPromise({
      // Interrupted (Ctrl-C, or no answer in time), the call is aborted (its connection closed), not left to run out.
      try: (signal) => adminCall(home.path, method, path, body, signal),
      catch: (e) =>
        e instanceof RuntimeNotRunning
          ? unreachable(`${e.message}: start it with svc serve`)
          : e instanceof SocketPathTooLong || e instanceof ForeignSocket
            ? setupProblem(e.message)
            : unreachable(`${notAnswering(e)}${lost(e)}`)
    }).pipe(
      Effect.timeoutFail({
        duration: within,
        onTimeout: () =>
          unreachable(`svc serve for ${home.path} did not answer within ${Duration.toSeconds(within)} s: its process may be stopped (SIGSTOP: kill -CONT it) or stuck (restart it)${sent}`)
      })
    )
    return options.notice === false ? call : slowNotice(call, home.path, `waiting up to ${Duration.toSeconds(within)} s in all`)
  }).pipe(
    Effect.flatMap((r) =>
      r.status === 200
        ? Effect.succeed(r.body as Record<string, unknown>)
        : Effect.fail(refused(String((r.body as { message?: unknown }).message ?? `the runtime answered ${r.status}`), codeOf(r.body)))
    )
  )
