/**
 * Where this installation keeps its state: `$SVC_HOME`, or `~/.svc` (design.md, CLI contract).
 * Tests always set `SVC_HOME`.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import { Config, Context, Effect, Layer } from "effect"

export class SvcHome extends Context.Tag("svc/SvcHome")<SvcHome, { readonly path: string }>() {}

export const layer = Layer.effect(
  SvcHome,
  Effect.map(
    Config.string("SVC_HOME").pipe(Config.withDefault(nodePath.join(os.homedir(), ".svc"))),
    (path) => ({ path: nodePath.resolve(path) })
  )
)

export const layerAt = (path: string) => Layer.succeed(SvcHome, { path })
