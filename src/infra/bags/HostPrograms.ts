/** `HostPrograms`: looks a program up on PATH the way a shell would (no shell is run). */
import { constants as fsConstants } from "node:fs"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HostPrograms } from "../../app/bags/BagStore.js"

const executable = (path: string) => fs.access(path, fsConstants.X_OK).then(() => true, () => false)

export const make = (env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform) =>
  HostPrograms.of({
    platform: platform === "darwin" ? "macos" : platform === "linux" ? "linux" : "other",
    which: (program) =>
      Effect.promise(async () => {
        if (program.includes("/")) return (await executable(program)) ? program : undefined
        for (const dir of (env["PATH"] ?? "").split(nodePath.delimiter)) {
          if (dir === "") continue
          const candidate = nodePath.join(dir, program)
          if (await executable(candidate)) return candidate
        }
        return undefined
      })
  })

export const layer = Layer.sync(HostPrograms, () => make())
