/** `svc workers invite` (worker-protocol spec, "Command-line operations"): a one-time join token for a new worker, alone on stdout. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { durationSeconds } from "../../../domain/manifest/Formats.js"
import { JOB_ADDRESS } from "../../../domain/manifest/JobAddress.js"
import { workerNameShapeProblem } from "../../../domain/workers/Invite.js"
import { parseJoinToken } from "../../../domain/workers/Secrets.js"
import { admin } from "../../admin.js"
import { usage } from "../../CliFailure.js"
import { json, printJson } from "../../output.js"
import { onlyThisMachine } from "./loopback.js"

export const invite = Command.make(
  "invite",
  {
    scope: Options.text("scope").pipe(Options.repeated, Options.withDescription("BAG:JOB@VERSION the worker may claim (repeat for several); none: every job")),
    expires: Options.text("expires").pipe(Options.optional, Options.withDescription("expire the unused invite after DURATION (30m, 12h, 7d; a bare number is seconds), 365d at most; scoped invites expire after 24h at most")),
    name: Options.text("name").pipe(Options.optional, Options.withDescription("the worker's human name")),
    json
  },
  ({ expires, json: asJson, name, scope }) =>
    Effect.gen(function* () {
      // A name that cannot be one is a usage problem, said before the owner is asked, as a bad --scope is.
      const badName = Option.isSome(name) ? workerNameShapeProblem(name.value) : undefined
      if (badName !== undefined) return yield* usage(`--name: ${badName}`)
      const bad = scope.filter((s) => !JOB_ADDRESS.test(s))
      if (bad.length > 0) return yield* usage(`--scope names versioned jobs as BAG:JOB@VERSION (such as hasher:checksum@1.0.0); ${bad.map((b) => JSON.stringify(b)).join(", ")} ${bad.length === 1 ? "is" : "are"} not`)
      const seconds = Option.isSome(expires) ? durationSeconds(expires.value) : null
      const expiresInMs = seconds === undefined ? undefined : seconds === null ? null : seconds * 1000
      if (expiresInMs === undefined) return yield* usage(`--expires takes a duration such as 30m, 12h or 7d (or seconds: 90), not ${JSON.stringify(Option.getOrElse(expires, () => ""))}`)
      const answer = yield* admin("POST", "/invite", { scope, expiresInMs, name: Option.getOrNull(name) })
      // The token alone on stdout, once: TOKEN=$(svc workers invite) works. With --json, one
      // document holding it (the one time it is printed) with what a script keeps of the invite:
      // its id (to revoke it unused), name, scope and expiry (it was said on stderr only).
      const expiresAt = answer["expiresAt"] === null || answer["expiresAt"] === undefined ? null : new Date(Number(answer["expiresAt"])).toISOString()
      if (asJson) yield* printJson({ token: String(answer["token"]), inviteId: String(answer["inviteId"]), name: Option.getOrNull(name), scope, expiresAt })
      else yield* Console.log(String(answer["token"]))
      const until = answer["expiresAt"] === null ? "never expires" : `expires ${new Date(Number(answer["expiresAt"])).toISOString()} if unused`
      yield* Console.error(`invite ${String(answer["inviteId"])}: ${scope.length === 0 ? "every job" : scope.join(", ")}; ${until}. Redeem it on the worker with: svc workers join TOKEN`)
      // An owner from before notes does not send them.
      for (const note of (answer["notes"] as ReadonlyArray<string> | undefined) ?? []) yield* Console.error(`note: ${note}`)
      // The address in the token (never the token itself) is what a worker will call.
      const content = parseJoinToken(String(answer["token"]))
      if (typeof content !== "string" && onlyThisMachine(content.url)) {
        // The port the owner listens on now (--listen), not the default's.
        const port = new URL(content.url).port || "443"
        yield* Console.error(
          `note: the token sends the worker to ${content.url}, which only this machine can reach. For a worker on another machine, restart svc serve with --listen 0.0.0.0:${port} --public-url https://THIS-HOST:${port} (docs/operations.md) and invite again`
        )
      }
    })
).pipe(Command.withDescription("Print a one-time join token for a new worker (stdout, one line; --json: with the invite id, name, scope and expiry)"))
