/** Calls the running runtime's admin API; not running is exit 2 (CLI contract), a refusal exit 1. */
import * as Effect from "effect/Effect"
import { adminCall, RuntimeNotRunning, SocketPathTooLong } from "../infra/http/AdminApi.js"
import { SvcHome } from "../infra/SvcHome.js"
import { CliFailure, refused, usage } from "./CliFailure.js"

export const admin = (method: "GET" | "POST", path: string, body?: unknown) =>
  Effect.flatMap(SvcHome, (home) =>
    Effect.tryPromise({
      try: () => adminCall(home.path, method, path, body),
      catch: (e) =>
        e instanceof RuntimeNotRunning
          ? new CliFailure({ exitCode: 2, message: `${e.message}: start it with svc serve`, unreachable: true })
          : e instanceof SocketPathTooLong
            ? usage(e.message)
            : new CliFailure({ exitCode: 1, message: `the runtime did not answer: ${e instanceof Error ? e.message : String(e)}`, unreachable: true })
    })
  ).pipe(
    Effect.flatMap((r) =>
      r.status === 200 ? Effect.succeed(r.body as Record<string, unknown>) : Effect.fail(refused(String((r.body as { message?: unknown }).message ?? `the runtime answered ${r.status}`)))
    )
  )
