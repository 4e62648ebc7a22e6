/**
 * Where this installation keeps its state: `$SVC_HOME`, or `~/.svc` (design.md, CLI contract).
 * Tests always set `SVC_HOME`.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class SvcHome extends Context.Tag("svc/SvcHome")<SvcHome, { readonly path: string }>() {}

export const layer = Layer.effect(
  SvcHome,
  Effect.map(
    Config.string("SVC_HOME").pipe(Config.withDefault(nodePath.join(os.homedir(), ".svc"))),
    (path) => ({ path: nodePath.resolve(path) })
  )
)

export const layerAt = (path: string) => Layer.succeed(SvcHome, { path })
