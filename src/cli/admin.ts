/** Calls the running runtime's admin API; not running is exit 2 (CLI contract), a refusal exit 1. */
import * as Effect from "effect/Effect"
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

export const admin = (method: "GET" | "POST", path: string, body?: unknown) =>
  Effect.flatMap(SvcHome, (home) =>
    Effect.tryPromise({
      // Interrupted, the call is aborted (its connection closed), not left to run out.
      try: (signal) => adminCall(home.path, method, path, body, signal),
      catch: (e) =>
        e instanceof RuntimeNotRunning
          ? unreachable(`${e.message}: start it with svc serve`)
          : e instanceof SocketPathTooLong || e instanceof ForeignSocket
            ? setupProblem(e.message)
            : unreachable(notAnswering(e))
    })
  ).pipe(
    Effect.flatMap((r) =>
      r.status === 200 ? Effect.succeed(r.body as Record<string, unknown>) : Effect.fail(refused(String((r.body as { message?: unknown }).message ?? `the runtime answered ${r.status}`)))
    )
  )
