/** `svc workers release`: confirm a worker no longer runs anything, freeing the slots its attempts hold, through the owner's admin API. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { admin } from "../../admin.js"
import { json, printJson } from "../../output.js"
import { workerArg } from "./workerArgument.js"

const force = Options.boolean("force").pipe(Options.withDescription("release a worker that is still advertising (you know it runs nothing)"))

/**
 * What `svc workers release` did: the slots freed; a run placed elsewhere already is not placed
 * again. The worker by name and id: the identities of a machine that joined again share its name.
 */
export const releasedLine = (freed: number, name: string, id: string): string =>
  freed === 0
    ? `nothing to release: no attempt holds a slot of ${name} (${id})`
    : `released ${freed} slot${freed === 1 ? "" : "s"} of ${name} (${id}): its attempts there are recorded as stopped; a run of theirs still unfinished, and not placed elsewhere already, is placed again`

export const release = Command.make("release", { worker: workerArg, force, json }, ({ force, json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/release", { worker, force })
    if (json) return yield* printJson(answer)
    yield* Console.log(releasedLine(Number(answer["freed"]), String(answer["name"]), String(answer["id"])))
  })
).pipe(Command.withDescription("Confirm a worker (say, a revoked one) no longer runs anything: free the slots its attempts hold"))
