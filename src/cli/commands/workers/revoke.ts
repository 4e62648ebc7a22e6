/** `svc workers revoke` (worker-protocol spec, "Command-line operations"): revoke a worker, or an invite not yet redeemed, through the owner's admin API. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { admin } from "../../admin.js"
import { json, printJson } from "../../output.js"

export const revoke = Command.make("revoke", { worker: Args.text({ name: "WORKER" }).pipe(Args.withDescription("worker id or name, or the id of an invite not yet redeemed")), json }, ({ json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/revoke", { worker })
    if (json) return yield* printJson({ ...answer, revoked: true })
    if (answer["kind"] === "invite") {
      const name = answer["name"] === null ? "" : ` (for ${String(answer["name"])})`
      return yield* Console.log(`revoked invite ${String(answer["id"])}${name}: its token can no longer be redeemed`)
    }
    yield* Console.log(`revoked ${String(answer["name"])}: its next call is refused and it is told to stop its work`)
  })
).pipe(Command.withDescription("Revoke a worker (its next call is refused and its running work stopped), or an invite not yet redeemed"))
