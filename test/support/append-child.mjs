// A separate process for test/infra/journal/crash.test.ts: appends multi-event commands to the
// SQLite journal through the compiled adapter (dist/, built by `npm run build`) from several
// fibers at once, forever, and prints one line per acknowledged append:
//
//   ack <stream> <commandId> <seq>,<seq>[,<seq>] <streamVersion>,<streamVersion>[,...]
//
// printed only after the append's Effect completed, i.e. after the commit that holds it.
// stdout is a pipe, which Node writes synchronously on Linux, so a printed line is in the pipe
// before the next append starts, and survives the SIGKILL the test sends.
//
//   node test/support/append-child.mjs <file.sqlite> <run> [fibers]
//
// Each fiber owns the stream `worker-r<run>f<fiber>` and appends to it with the right expected
// versions. Command k of a fiber has 2 or 3 events (2 + (fiber + k) % 2); every event of it
// carries `at = commandId` (run * 1e9 + fiber * 1e6 + k), so a checker can tell which events
// belong together.
import { existsSync } from "node:fs"

const dist = new URL("../../dist/", import.meta.url)
const modules = ["infra/journal/SqliteJournal.js", "domain/journal/Events.js", "app/journal/Journal.js"].map((p) => new URL(p, dist))
const missing = modules.filter((u) => !existsSync(u))
if (missing.length > 0) {
  process.stderr.write(`append-child: ${missing.map((u) => u.pathname).join(", ")} missing; run \`npm run build\` first\n`)
  process.exit(2)
}
const [{ layer }, Events, { Journal }] = await Promise.all(modules.map((u) => import(u.href)))
const Effect = await import("effect/Effect")

const [file, runArg, fibersArg] = process.argv.slice(2)
if (file === undefined || runArg === undefined) {
  process.stderr.write("usage: append-child.mjs <file.sqlite> <run> [fibers]\n")
  process.exit(2)
}
const run = Number(runArg)
const fibers = Number(fibersArg ?? 8)

const hex = (n) => n.toString(16).padStart(64, "0")

/** The events of command k of a fiber, all stamped with the command id. */
const commandEvents = (workerId, k, size, commandId) => {
  const events = [
    new Events.SessionStarted({ workerId, fence: k + 1, takeover: k % 7 === 3, at: commandId }),
    new Events.WorkerAdvertised({
      workerId,
      capacity: 1 + (k % 16),
      labels: ["os=linux", `cmd=${commandId}`],
      capabilities: ["node"],
      artifacts: [{ address: `bag:job@${k}`, digest: hex(commandId) }],
      at: commandId
    })
  ]
  if (size === 3) events.push(new Events.CredentialRotationRequested({ workerId, actor: "operator", at: commandId }))
  return events
}

const appender = (journal, fiber) =>
  Effect.gen(function* () {
    const workerId = `r${run}f${fiber}`
    const stream = `worker-${workerId}`
    let version = 0
    for (let k = 0; ; k++) {
      const size = 2 + ((fiber + k) % 2)
      const commandId = run * 1e9 + fiber * 1e6 + k
      const envelopes = yield* journal.append({ stream, expectedVersion: version, events: commandEvents(workerId, k, size, commandId) })
      version += envelopes.length
      process.stdout.write(
        `ack ${stream} ${commandId} ${envelopes.map((e) => e.sequence).join(",")} ${envelopes.map((e) => e.streamVersion).join(",")}\n`
      )
    }
  })

const program = Effect.gen(function* () {
  const journal = yield* Journal
  process.stdout.write("ready\n")
  yield* Effect.all(
    Array.from({ length: fibers }, (_, i) => appender(journal, i)),
    { concurrency: "unbounded", discard: true }
  )
}).pipe(Effect.provide(layer(file)), Effect.scoped)

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`append-child failed: ${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
