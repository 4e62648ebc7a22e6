/**
 * A runtime that is there but does not answer (SIGSTOP): its admin socket accepts the connection
 * and says nothing. A CLI call says so after 10 s and gives up after 60 s (exit 2); `run --wait`
 * asks again for up to 60 s once a wait has gone unanswered. Real Unix sockets, Effect's TestClock.
 */
import { createServer, type Server, type Socket } from "node:net"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { admin, ANSWER_WITHIN, SLOW_NOTICE } from "../../src/cli/admin.js"
import { CliFailure, unreachable } from "../../src/cli/CliFailure.js"
import { followThroughRestarts } from "../../src/cli/commands/runs.js"
import { layerAt } from "../../src/infra/SvcHome.js"
import { tempDir } from "../support/svc.js"

/** What a command writes to stderr, kept. */
const stderrKept = () =>
  Console.consoleWith((base) => {
    const lines: Array<string> = []
    const console: Console.Console = { ...base, error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(args.map(String).join(" "))) }
    return Effect.succeed({ lines, console })
  })

/** An admin socket that takes connections and never answers, as a stopped runtime's does. */
const silentRuntime = Effect.acquireRelease(
  Effect.async<{ readonly home: string; readonly server: Server; readonly sockets: Set<Socket> }>((resume) => {
    const home = tempDir("svc-admin-silent-")
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      // Read (and dropped): a socket never read does not see its peer close.
      socket.resume()
      socket.on("close", () => sockets.delete(socket))
    })
    server.listen(join(home, "admin.sock"), () => resume(Effect.succeed({ home, server, sockets })))
  }),
  ({ server, sockets }) =>
    Effect.async<void>((resume) => {
      for (const s of sockets) s.destroy()
      server.close(() => resume(Effect.void))
    })
)

/** An admin socket that reads a request, then drops the connection unanswered, as a runtime killed while it handled the call. */
const dyingRuntime = Effect.acquireRelease(
  Effect.async<{ readonly home: string; readonly server: Server }>((resume) => {
    const home = tempDir("svc-admin-dying-")
    const server = createServer((socket) => {
      socket.once("data", () => socket.destroy())
    })
    server.listen(join(home, "admin.sock"), () => resume(Effect.succeed({ home, server })))
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

/** Lets the real socket I/O that the test clock does not drive happen (up to 5 s of real time). */
const ioSettles = (done: () => boolean) =>
  Effect.promise(async () => {
    for (let t = 0; t < 5_000 && !done(); t += 10) await new Promise((resolve) => setTimeout(resolve, 10))
  })

describe("an admin call to a runtime that does not answer", () => {
  it.scoped("says so after 10 s, gives up after 60 s as unreachable (exit 2), and closes its connection", () =>
    Effect.gen(function* () {
      const { home, sockets } = yield* silentRuntime
      const { lines, console } = yield* stderrKept()
      const call = yield* Effect.fork(admin("POST", "/runs/list", { limit: 1 }).pipe(Effect.provide(layerAt(home)), Effect.withConsole(console)))
      yield* ioSettles(() => sockets.size === 1)
      expect(sockets.size).toBe(1)
      yield* TestClock.adjust(Duration.subtract(SLOW_NOTICE, Duration.millis(1)))
      expect(lines).toEqual([])
      yield* TestClock.adjust(Duration.millis(1))
      expect(lines).toEqual([
        `note: svc serve for ${home} has not answered in 10 s (its process stopped, or its machine overloaded?); waiting up to 60 s in all`
      ])
      yield* TestClock.adjust(Duration.subtract(ANSWER_WITHIN, Duration.sum(SLOW_NOTICE, Duration.millis(1))))
      expect(call.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      const exit = yield* Fiber.await(call)
      expect(exit).toEqual(
        Exit.fail(unreachable(`svc serve for ${home} did not answer within 60 s: its process may be stopped (SIGSTOP: kill -CONT it) or stuck (restart it)`))
      )
      yield* ioSettles(() => sockets.size === 0)
      expect(sockets.size).toBe(0)
      // Said once.
      expect(lines).toHaveLength(1)
    })
  )

  it.scoped("that changes something says, given up, that it may still be carried out when the runtime resumes", () =>
    Effect.gen(function* () {
      const { home } = yield* silentRuntime
      const { console } = yield* stderrKept()
      const call = yield* Effect.fork(admin("POST", "/runs/submit", { address: "a:b@1.0.0", input: {}, prefer: [] }).pipe(Effect.provide(layerAt(home)), Effect.withConsole(console)))
      yield* TestClock.adjust(ANSWER_WITHIN)
      const exit = yield* Fiber.await(call)
      expect(exit).toEqual(
        Exit.fail(
          unreachable(
            `svc serve for ${home} did not answer within 60 s: its process may be stopped (SIGSTOP: kill -CONT it) or stuck (restart it); the request was sent and may still be carried out when it runs again: look (svc runs list, svc workers status) before sending it again`
          )
        )
      )
    })
  )

  it.scoped("whose connection is lost once sent says, when it changes something, that it may have been carried out (exit 2 all the same)", () =>
    Effect.gen(function* () {
      const { home } = yield* dyingRuntime
      const failure = (path: string, body: unknown) => Effect.flip(admin("POST", path, body).pipe(Effect.provide(layerAt(home))))
      const submitted = yield* failure("/runs/submit", { address: "a:b@1.0.0", input: {}, prefer: [] })
      expect(submitted.exitCode).toBe(2)
      expect(submitted.message).toMatch(
        /^the runtime did not answer: (socket hang up|read ECONNRESET); the request was sent and may have been carried out \(in part, for a stop of several runs\) before the runtime went: look \(svc runs list, svc workers status\) before sending it again$/
      )
      const keyed = yield* failure("/runs/submit", { address: "a:b@1.0.0", input: {}, prefer: [], key: "k1" })
      expect(keyed.message).toMatch(/before the runtime went: sending it again with the same --idempotency-key answers that run if it was made, and makes it if not$/)
      // A question changes nothing: nothing more to say.
      expect((yield* failure("/runs/list", { limit: 1 })).message).toMatch(/^the runtime did not answer: (socket hang up|read ECONNRESET)$/)
    })
  )

  it.scoped("that waits on the runtime's side is given its own time, with no notice", () =>
    Effect.gen(function* () {
      const { home, sockets } = yield* silentRuntime
      const { lines, console } = yield* stderrKept()
      const call = yield* Effect.fork(
        admin("POST", "/runs/wait", { run: "r1", ms: 25_000 }, { answerWithin: Duration.seconds(35), notice: false }).pipe(Effect.provide(layerAt(home)), Effect.withConsole(console))
      )
      yield* ioSettles(() => sockets.size === 1)
      yield* TestClock.adjust(Duration.seconds(34))
      expect(call.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.seconds(1))
      const exit = yield* Fiber.await(call)
      expect(Exit.isFailure(exit) && Exit.causeOption(exit)).toBeTruthy()
      expect(lines).toEqual([])
    })
  )
})

describe("run --wait through an owner that does not answer", () => {
  const gone = unreachable("svc serve for /h did not answer within 35 s: ...")

  it.effect("says so once, asks again every half second, and takes the first answer", () =>
    Effect.gen(function* () {
      const { lines, console } = yield* stderrKept()
      let asked = 0
      const probe = (within: Duration.Duration) =>
        Effect.suspend(() => {
          asked++
          expect(Duration.toMillis(within)).toBe(5_000)
          return asked < 3 ? Effect.fail(gone) : Effect.succeed("the run, as it is")
        })
      const waiting = yield* Effect.fork(followThroughRestarts(Effect.fail(gone) as Effect.Effect<string, CliFailure>, probe, "r7").pipe(Effect.withConsole(console)))
      yield* TestClock.adjust("1 second")
      expect(asked).toBe(2)
      yield* TestClock.adjust("500 millis")
      expect(yield* Fiber.join(waiting)).toBe("the run, as it is")
      expect(lines).toEqual([`the owner does not answer (${gone.message}); still waiting for run r7, for up to 60 seconds until it is back`])
    })
  )

  it.effect("gives up 60 s after the first unanswered wait, each question given at most the time left", () =>
    Effect.gen(function* () {
      const withins: Array<number> = []
      // Each question goes unanswered for as long as it may wait (a stopped owner).
      const probe = (within: Duration.Duration) =>
        Effect.zipRight(
          Effect.sync(() => void withins.push(Duration.toMillis(within))),
          Effect.zipRight(Effect.sleep(within), Effect.fail(gone))
        )
      const { console } = yield* stderrKept()
      const waiting = yield* Effect.fork(followThroughRestarts(Effect.fail(gone) as Effect.Effect<string, CliFailure>, probe, "r7").pipe(Effect.withConsole(console)))
      yield* TestClock.adjust(Duration.seconds(59))
      expect(waiting.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.seconds(2))
      // It says that the run is kept, and how to follow it (the runs audit's last words were the owner's absence alone).
      expect(yield* Fiber.await(waiting)).toEqual(
        Exit.fail(new CliFailure({ ...gone, message: `${gone.message}; stopped waiting for run r7 after 60 seconds: the owner keeps it, and once it is back svc runs show r7 follows it` }))
      )
      // 0.5 s apart, 5 s each, the last one cut to what was left of the 60 s.
      expect(withins.slice(0, 2)).toEqual([5_000, 5_000])
      expect(withins.at(-1)).toBeLessThan(5_000)
      expect(withins.reduce((a, b) => a + b, 0) + withins.length * 500).toBeLessThanOrEqual(60_500)
    })
  )

  it.effect("a refusal while it asks again ends the wait with it", () =>
    Effect.gen(function* () {
      const { console } = yield* stderrKept()
      const refusal = { ...gone, unreachable: false, exitCode: 1 } as CliFailure
      const waiting = yield* Effect.fork(followThroughRestarts(Effect.fail(gone) as Effect.Effect<string, CliFailure>, () => Effect.fail(refusal), "r7").pipe(Effect.withConsole(console)))
      yield* TestClock.adjust("500 millis")
      expect(yield* Fiber.await(waiting)).toEqual(Exit.fail(refusal))
    })
  )
})
