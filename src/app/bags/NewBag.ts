/** `svc new NAME`: writes the starter bag into a new directory NAME. */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { starterFiles } from "../../domain/bags/Starter.js"
import { BAG_NAME } from "../../domain/manifest/Formats.js"
import { holdsSecret, secretRefusal } from "../../domain/workers/Secrets.js"

export class NewBagRefused extends Data.TaggedError("NewBagRefused")<{ readonly message: string }> {}

export const newBag = (name: string, parent: string = ".") =>
  Effect.gen(function* () {
    // Not echoed: a credential or token pasted here, as the name or in the path above it, is not
    // printed back, nor made a directory.
    if (holdsSecret(name)) return yield* new NewBagRefused({ message: secretRefusal("the bag name given") })
    if (holdsSecret(parent)) return yield* new NewBagRefused({ message: secretRefusal("the path given") })
    if (!BAG_NAME.test(name)) {
      return yield* new NewBagRefused({
        message: `${JSON.stringify(name)} is not a bag name: use letters, digits, dots, underscores and hyphens, starting with a letter or digit`
      })
    }
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const dir = path.resolve(parent, name)
    if (yield* fs.exists(dir)) return yield* new NewBagRefused({ message: `${dir} already exists; choose another name or remove it` })
    // Each missing directory alone, from the top: made at once with its parents, a failure (a
    // read-only file system) read "no such file or directory" (Node's recursive mkdir says ENOENT
    // for any failure). One made meanwhile by another process is taken as it is.
    const missing: Array<string> = []
    for (let d = path.dirname(dir); path.dirname(d) !== d && !(yield* fs.exists(d)); d = path.dirname(d)) missing.unshift(d)
    for (const d of missing) yield* fs.makeDirectory(d).pipe(Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "AlreadyExists", () => Effect.void))
    yield* fs.makeDirectory(dir)
    for (const file of starterFiles(name)) {
      const target = path.join(dir, file.path)
      yield* fs.makeDirectory(path.dirname(target), { recursive: true })
      yield* fs.writeFileString(target, file.content)
    }
    return dir
  }).pipe(
    Effect.catchTags({
      // What the file system said, with the path (not the library's "NotFound: FileSystem.makeDirectory (...)").
      SystemError: (e) => new NewBagRefused({ message: `cannot create the bag: ${e.description ?? e.message}` }),
      BadArgument: (e) => new NewBagRefused({ message: `cannot create the bag: ${e.message}` })
    })
  )
