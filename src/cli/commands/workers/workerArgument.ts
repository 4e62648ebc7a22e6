/** The WORKER argument of the commands that act on one worker of this owner (rotate, release). */
import * as Args from "@effect/cli/Args"

export const workerArg = Args.text({ name: "WORKER" }).pipe(Args.withDescription("worker id or name"))
