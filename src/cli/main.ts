/** The `svc` command tree and the layers it runs with. */
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Layer from "effect/Layer"
import * as NodeBagDirectory from "../infra/bags/NodeBagDirectory.js"
import * as FileBagStore from "../infra/bags/FileBagStore.js"
import * as HostPrograms from "../infra/bags/HostPrograms.js"
import * as ManifestSourceLive from "../infra/manifest/ManifestSourceLive.js"
import * as SvcHome from "../infra/SvcHome.js"
import { setupProblem } from "./CliFailure.js"
import { bagCommand } from "./commands/bag.js"
import { auditCommand } from "./commands/journal/audit.js"
import { journalCommand } from "./commands/journal.js"
import { newCommand } from "./commands/new.js"
import { runCommand, runsCommand } from "./commands/runs.js"
import { serveCommand } from "./commands/serve.js"
import { workersCommand } from "./commands/workers.js"

export const VERSION = "0.1.0"

export const svc = Command.make("svc").pipe(
  Command.withDescription("svc: spread background work from an owner machine to linked workers"),
  Command.withSubcommands([newCommand, bagCommand, serveCommand, workersCommand, runCommand, runsCommand, journalCommand, auditCommand])
)

export const cli = Command.run(svc, { name: "svc", version: VERSION })

/** $SVC_HOME svc will not take is a usage error (exit 2), said before anything runs. */
const home = SvcHome.layer.pipe(Layer.catchAll((e) => Layer.fail(setupProblem(e.message))))

export const MainLayer = Layer.mergeAll(
  NodeContext.layer,
  NodeBagDirectory.layer,
  FileBagStore.layer.pipe(Layer.provide(home)),
  HostPrograms.layer,
  home,
  ManifestSourceLive.layer
)
