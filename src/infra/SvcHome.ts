/**
 * Where this installation keeps its state: `$SVC_HOME`, or `~/.svc` (design.md, CLI contract).
 * Tests always set `SVC_HOME`.
 */
import * as fs from "node:fs"
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

/**
 * What tells this home from a copy of it: its real path, device and inode (a copy elsewhere differs
 * in path or inode; two containers' overlays of one image share path and inode, not the device).
 * Leftover-job notes and a worker's kept session key are bound to it. Undefined when it cannot be read.
 */
export interface HomeIdentity {
  readonly realPath: string
  readonly dev: number
  readonly ino: number
}

export const identityOf = (home: string): HomeIdentity | undefined => {
  try {
    const realPath = fs.realpathSync(home)
    const { dev, ino } = fs.statSync(realPath)
    return { realPath, dev, ino }
  } catch {
    return undefined
  }
}

/** The identity as one line per part, as leftover-job notes keep it and session bindings hash it. */
export const identityText = ({ realPath, dev, ino }: HomeIdentity): string => `${realPath}\n${dev}\n${ino}`

/** Why an existing `path` cannot be a home (it is a file, say), or undefined (a directory, or nothing yet). */
export const notAHome = (path: string): SvcHomeProblem | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(path)
  } catch {
    return undefined
  }
  return stat.isDirectory() ? undefined : new SvcHomeProblem({ message: `SVC_HOME is ${path}, which is a file, not a directory: point it at a directory (svc makes it when missing)` })
}

export const layer = Layer.effect(
  SvcHome,
  Effect.flatMap(Effect.orDie(Config.string("SVC_HOME").pipe(Config.withDefault(""))), (given) => {
    const path = homeOf(given, os.homedir())
    if (typeof path !== "string") return Effect.fail(path)
    const problem = notAHome(path)
    return problem === undefined ? Effect.succeed({ path }) : Effect.fail(problem)
  })
)

export const layerAt = (path: string) => Layer.succeed(SvcHome, { path })
