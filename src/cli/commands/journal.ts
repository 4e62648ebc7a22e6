/**
 * `svc journal replay|tail|export|history`, each in its own file under `journal/`; they read the
 * store file read-only, so they work whether the owner runs or not (design.md, CLI contract).
 */
import * as Command from "@effect/cli/Command"
import { exportCommand } from "./journal/export.js"
import { historyCommand } from "./journal/history.js"
import { replayCommand } from "./journal/replay.js"
import { tailCommand } from "./journal/tail.js"

export const journalCommand = Command.make("journal").pipe(
  Command.withDescription("The owner's event journal: replay, tail, export, history (read-only)"),
  Command.withSubcommands([replayCommand, tailCommand, exportCommand, historyCommand])
)
