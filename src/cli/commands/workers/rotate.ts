/** `svc workers rotate` (worker-protocol spec, "Command-line operations"): a new credential for a worker, through the owner's admin API. */
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { admin } from "../../admin.js"
import { json, printJson } from "../../output.js"
import { workerArg } from "./workerArgument.js"

export const rotate = Command.make("rotate", { worker: workerArg, json }, ({ json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/rotate", { worker })
    if (json) return yield* printJson({ ...answer, rotation: "pending" })
    yield* Console.log(
      answer["pendingAlready"] === true
        ? `a rotation is pending for ${String(answer["name"])} already (asked earlier, not taken yet): the new credential is handed over in the answer to its next call; nothing more was recorded`
        : `rotation requested for ${String(answer["name"])}: the new credential is handed over in the answer to its next call; the old one then works 5 more minutes`
    )
  })
).pipe(Command.withDescription("Issue a new credential to a worker (the old one works 5 more minutes)"))
