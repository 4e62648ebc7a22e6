// A separate process for test/infra/runtime/home-lock.test.ts: takes a home's lock through the
// compiled HomeLock (dist/, built by `npm run build`), as `svc serve` does, starting at a given
// moment, and prints `held` (then holds it until killed), `busy`, or `error <message>`.
//
//   node test/support/lock-child.mjs <home> <epoch ms to start at>
import { existsSync } from "node:fs"

const module = new URL("../../dist/infra/runtime/HomeLock.js", import.meta.url)
if (!existsSync(module)) {
  process.stderr.write(`lock-child: ${module.pathname} missing; run \`npm run build\` first\n`)
  process.exit(2)
}
const { holdHome } = await import(module.href)
const Effect = await import("effect/Effect")

const [home, at] = process.argv.slice(2)
// Spun, not slept: every child leaves this loop at the same moment (a timer is late by the load).
while (Date.now() < Number(at)) {}
await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const held = yield* Effect.either(holdHome(home))
      if (held._tag === "Left") return process.stdout.write(held.left.busy ? "busy" : `error ${held.left.message}`)
      process.stdout.write("held")
      yield* Effect.never
    })
  )
)
