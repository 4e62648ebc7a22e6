/**
 * `svc workers invite|join|rotate|revoke|status` (worker-protocol spec, "Command-line operations"),
 * `release` and `leave`, each in its own file under `workers/`.
 */
import * as Command from "@effect/cli/Command"
import { invite } from "./workers/invite.js"
import { join } from "./workers/join.js"
import { leave } from "./workers/leave.js"
import { release } from "./workers/release.js"
import { revoke } from "./workers/revoke.js"
import { rotate } from "./workers/rotate.js"
import { status } from "./workers/status.js"

export const workersCommand = Command.make("workers").pipe(
  Command.withDescription("Workers: invite, join, rotate, revoke, release, status, leave"),
  Command.withSubcommands([invite, join, rotate, revoke, release, status, leave])
)
