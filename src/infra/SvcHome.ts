/**
 * Where this installation keeps its state: `$SVC_HOME`, or `~/.svc` (design.md, CLI contract).
 * Tests always set `SVC_HOME`.
 */
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export class SvcHome extends Context.Tag("svc/SvcHome")<SvcHome, { readonly path: string }>() {}

/** An SVC_HOME svc will not take, in words. */
export class SvcHomeProblem extends Data.TaggedError("SvcHomeProblem")<{ readonly message: string }> {}

/**
 * `$SVC_HOME` as given: empty reads as unset (`SVC_HOME= svc serve` made the current directory a
 * home), and a relative path is refused (it named another home in each directory svc ran from).
 */
export const homeOf = (given: string, homedir: string): string | SvcHomeProblem => {
  if (given === "") return nodePath.join(homedir, ".svc")
  if (!nodePath.isAbsolute(given)) {
    return new SvcHomeProblem({ message: `SVC_HOME must be an absolute path, not ${JSON.stringify(given)}: a relative one names another home in each directory svc runs from (unset it for ${nodePath.join(homedir, ".svc")})` })
  }
  return nodePath.resolve(given)
}

export const layer = Layer.effect(
  SvcHome,
  Effect.flatMap(Effect.orDie(Config.string("SVC_HOME").pipe(Config.withDefault(""))), (given) => {
    const path = homeOf(given, os.homedir())
    return typeof path === "string" ? Effect.succeed({ path }) : Effect.fail(path)
  })
)

export const layerAt = (path: string) => Layer.succeed(SvcHome, { path })
