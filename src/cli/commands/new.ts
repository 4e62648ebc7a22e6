/** `svc new NAME`: create a starter bag that `svc bag check` accepts. */
import * as nodePath from "node:path"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { newBag } from "../../app/bags/NewBag.js"
import { refused } from "../CliFailure.js"
import { printJson } from "../output.js"

export const newCommand = Command.make(
  "new",
  {
    name: Args.text({ name: "NAME" }).pipe(Args.withDescription("bag name; the bag is created in ./NAME (or give a path: DIR/NAME)")),
    json: Options.boolean("json").pipe(Options.withDescription("print { name, dir } as JSON"))
  },
  ({ json, name: given }) => {
    // A path names the directory too: its last part is the bag's name.
    const trimmed = given.replace(/\/+$/, "")
    const name = nodePath.basename(trimmed)
    const parent = nodePath.dirname(trimmed)
    return newBag(name, parent).pipe(
      Effect.flatMap((dir) =>
        json
          ? printJson({ name, dir })
          : Console.log(`created ${dir}\nnext: svc bag check ${trimmed} && svc bag install ${trimmed}`)
      ),
      Effect.catchTag("NewBagRefused", (e) => Effect.fail(refused(e.message)))
    )
  }
).pipe(Command.withDescription("Create a starter bag (bag.yaml and a versioned node job) in a new directory"))
