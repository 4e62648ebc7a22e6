/**
 * The executor on this machine: each job attempt is one child process, run alike on the owner
 * and on a worker, so where placement sends a job does not change what it sees. The contract
 * (input on stdin, result on the last line of stdout, what the child's environment holds, how it
 * is stopped) is docs/executors.md; this file enforces it.
 *
 * The child gets none of the service's environment (it may hold secrets), only a few harmless
 * variables, the run's names and the job's own literals. It is never started through a shell.
 * Its output goes to the run's files as it arrives; only a bounded tail stays in memory.
 */
import { spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs/promises"
import type { WriteStream } from "node:fs"
import * as nodePath from "node:path"
import { finished } from "node:stream/promises"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Executor, type CheckCommand, type ExecutionOutcome, type ExecutionSpec, type ExecutorService } from "../../app/runs/Executor.js"
import { depthProblem } from "../../domain/runs/Values.js"
import { bundle, defaultCacheDir, isTypeScript } from "./TypeScriptMain.js"

export interface ChildExecutorOptions {
  /** Where bundled TypeScript mains are kept; default `os.tmpdir()/svc-ts-cache-<uid>`. */
  readonly typeScriptCacheDir?: string
  /** Between SIGTERM and SIGKILL when a child is stopped; default 5 s. */
  readonly stopGraceMs?: number
  /** Where a job's secrets are kept, one file per name (`$SVC_HOME/secrets`); none: a job that declares one does not start. */
  readonly secretsDir?: string
}

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The values of the secrets a job declares, from `<dir>/<NAME>` (its content, one trailing line
 * break dropped). A missing one refuses the run, naming the file to write; the value never
 * appears in a message.
 */
const secretsOf = (names: ReadonlyArray<string>, dir: string | undefined): Effect.Effect<Record<string, string>, Refused> =>
  Effect.tryPromise({
    try: async () => {
      const values: Record<string, string> = {}
      for (const name of names) {
        if (!SECRET_NAME.test(name)) throw new Refused({ message: `its secret name ${JSON.stringify(name)} is not an environment variable name` })
        if (dir === undefined) throw new Refused({ message: `it needs the secret ${name}, and this machine keeps no secrets` })
        const file = nodePath.join(dir, name)
        const value = await fs.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
          throw new Refused({
            message:
              e.code === "ENOENT"
                ? `it needs the secret ${name}, which is not set on this machine: write its value to ${file} (readable by svc alone: chmod 600)`
                : `its secret ${name} cannot be read from ${file}: ${e.code ?? e.message}`
          })
        })
        values[name] = value.replace(/\r?\n$/, "")
      }
      return values
    },
    catch: (e) => (e instanceof Refused ? e : new Refused({ message: `its secrets cannot be read: ${e instanceof Error ? e.message : String(e)}` }))
  })

/** Variables of the service's environment a child may see; nothing else is passed on. */
export const PASSED_ENV = ["PATH", "HOME", "TMPDIR", "LANG", "TZ"] as const

const DEFAULT_STOP_GRACE_MS = 5_000
/** Stdout kept in memory to find the result line; the result line can be at most this long. */
export const RESULT_TAIL_BYTES = 64 * 1024
const STDERR_TAIL_BYTES = 4 * 1024
const STDERR_LINE_CHARS = 200
const NOT_JSON_CHARS = 80
/**
 * After the child exits, its output is read until its pipes close, for at most this long: a
 * process it left behind may hold them open, and the run must still end.
 */
const DRAIN_AFTER_EXIT_MS = 2_000

/** A run refused before anything is started; becomes an outcome with ok false. */
class Refused extends Data.TaggedError("Refused")<{ readonly message: string }> {}

/** The last `limit` bytes of a stream (up to twice that in memory between compactions). */
class Tail {
  private chunks: Array<Buffer> = []
  private size = 0
  /** Some bytes at the start were let go. */
  private dropped = false
  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.size += chunk.length
    if (this.size > 2 * this.limit) {
      const all = Buffer.concat(this.chunks)
      // One byte more than the limit: it tells whether the kept bytes start a line.
      this.chunks = [Buffer.from(all.subarray(all.length - this.limit - 1))]
      this.size = this.limit + 1
      this.dropped = true
    }
  }

  /** The lines kept, blank ones left out, trimmed; `firstWhole` false when the first one's start was let go. */
  lines(): { readonly lines: ReadonlyArray<string>; readonly firstWhole: boolean } {
    // The same bytes however the output was chunked: the last `limit`, and the one before them,
    // which is a newline when the first line kept is whole.
    const all = Buffer.concat(this.chunks)
    const cut = this.dropped || all.length > this.limit + 1
    const split = all.subarray(Math.max(0, all.length - this.limit - 1)).toString("utf8").split("\n")
    const firstWhole = !cut || (split[0] ?? "").trim() === ""
    return { lines: split.map((line) => line.trimEnd()).filter((line) => line.trim() !== ""), firstWhole }
  }

  /** The last line that is not blank, trimmed; `whole` false when its start was let go. */
  lastLine(): { readonly line: string; readonly whole: boolean } | undefined {
    const { lines, firstWhole } = this.lines()
    const line = lines[lines.length - 1]
    return line === undefined ? undefined : { line: line.trim(), whole: lines.length > 1 || firstWhole }
  }
}

/**
 * The stderr line that says why the child failed: its last line, except after Node's report of
 * an uncaught exception (which ends with `Node.js vX.Y.Z` after the stack), where it is the
 * error's own line, just above the stack: `Node.js v20.20.2` explains nothing.
 */
export const reasonOf = (lines: ReadonlyArray<string>): string | undefined => {
  const last = lines.length - 1
  if (last < 0) return undefined
  if (!/^Node\.js v\d+\.\d+\.\d+$/.test(lines[last]!.trim())) return lines[last]!.trim()
  const frame = (i: number) => /^\s+at /.test(lines[i]!)
  let i = last - 1
  while (i >= 0 && !frame(i)) i--
  while (i >= 0 && frame(i)) i--
  return (i >= 0 ? lines[i]! : lines[last - 1] ?? lines[last]!).trim()
}

const within = (root: string, path: string): boolean => {
  const relative = nodePath.relative(root, path)
  return relative === "" || (!relative.startsWith(`..${nodePath.sep}`) && relative !== ".." && !nodePath.isAbsolute(relative))
}

/**
 * `relative` resolved inside `bagDir`, refused when it leaves the bag, lexically or through a
 * symbolic link, or does not exist.
 */
const insideBag = (bagDir: string, relative: string, what: string) =>
  Effect.tryPromise({
    try: async () => {
      const path = nodePath.resolve(bagDir, relative)
      if (!within(bagDir, path)) throw new Refused({ message: `its ${what} ${relative} is outside its bag` })
      let real: string
      try {
        real = await fs.realpath(path)
      } catch {
        throw new Refused({ message: `its ${what} ${relative} does not exist in its bag` })
      }
      if (!within(await fs.realpath(bagDir), real)) {
        throw new Refused({ message: `its ${what} ${relative} is outside its bag (through a symbolic link)` })
      }
      return { path, stat: await fs.stat(real) }
    },
    catch: (e) =>
      e instanceof Refused ? e : new Refused({ message: `its ${what} ${relative} cannot be read: ${e instanceof Error ? e.message : String(e)}` })
  })

interface Launch {
  readonly program: string
  readonly args: ReadonlyArray<string>
  /** How the program is named in an error sentence. */
  readonly name: string
}

const launchOf = (spec: ExecutionSpec, cacheDir: string): Effect.Effect<Launch, Refused> => {
  const runs = spec.runs
  if (runs.using === "process") {
    const [program, ...args] = runs.command
    if (program === undefined || program === "") return Effect.fail(new Refused({ message: "its command is empty" }))
    return Effect.succeed({ program, args, name: program })
  }
  return Effect.gen(function* () {
    const main = yield* insideBag(spec.bagDir, runs.main, "main")
    if (!main.stat.isFile()) return yield* new Refused({ message: `its main ${runs.main} is not a file` })
    if (!isTypeScript(main.path)) return { program: process.execPath, args: [main.path], name: runs.main }
    const bundled = yield* bundle(main.path, spec.bagDir, cacheDir).pipe(
      Effect.mapError((e) =>
        new Refused({ message: e.reason === "Compile" ? `its TypeScript does not compile: ${e.message}` : e.message })
      )
    )
    // The bundle's inline source map lets a stack trace name the .ts file and line.
    return { program: process.execPath, args: ["--enable-source-maps", bundled], name: runs.main }
  })
}

const cwdOf = (spec: ExecutionSpec): Effect.Effect<string, Refused> =>
  spec.workingDirectory === undefined
    ? Effect.succeed(spec.bagDir)
    : Effect.flatMap(insideBag(spec.bagDir, spec.workingDirectory, "working directory"), ({ path, stat }) =>
        stat.isDirectory()
          ? Effect.succeed(path)
          : Effect.fail(new Refused({ message: `its working directory ${spec.workingDirectory} is not a directory` }))
      )

/** The child's whole environment: a few of the service's variables, the run's names, the job's literals. */
export const childEnv = (spec: ExecutionSpec, parent: NodeJS.ProcessEnv = process.env): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of PASSED_ENV) {
    const value = parent[name]
    if (value !== undefined) env[name] = value
  }
  env["SVC_RUN_ID"] = spec.runId
  env["SVC_ATTEMPT"] = spec.attempt
  for (const literal of spec.env) {
    const equals = literal.indexOf("=")
    // The manifest accepts only KEY=VALUE; anything else is not a variable and is left out.
    if (equals > 0) env[literal.slice(0, equals)] = literal.slice(equals + 1)
  }
  return env
}

interface OutputFiles {
  readonly stdout: WriteStream
  readonly stderr: WriteStream
  /** The first write error, if any. */
  error: string | undefined
}

const openOutput = (spec: ExecutionSpec): Effect.Effect<OutputFiles, Refused> =>
  Effect.tryPromise({
    try: async () => {
      const open = async (file: string) => {
        await fs.mkdir(nodePath.dirname(file), { recursive: true })
        return fs.open(file, "a")
      }
      const stdout = await open(spec.stdoutFile)
      const stderr = await open(spec.stderrFile).catch(async (e: unknown) => {
        await stdout.close()
        throw e
      })
      const files: OutputFiles = { stdout: stdout.createWriteStream(), stderr: stderr.createWriteStream(), error: undefined }
      for (const [stream, file] of [[files.stdout, spec.stdoutFile], [files.stderr, spec.stderrFile]] as const) {
        stream.on("error", (e) => {
          files.error ??= `its output could not be written to ${file}: ${e.message}`
        })
      }
      return files
    },
    catch: (e) => new Refused({ message: `its output files cannot be opened: ${e instanceof Error ? e.message : String(e)}` })
  })

/** A child that ran to its end, with its files and whether its time ran out. */
interface Ran {
  readonly running: Running
  readonly files: OutputFiles
  readonly timedOut: boolean
}

interface Running {
  readonly child: ChildProcess
  /** The process ended (exit), or never started (spawn error). */
  readonly exited: Deferred.Deferred<void>
  /** Its pipes are closed too: all its output was read. */
  readonly closed: Deferred.Deferred<void>
  readonly stdoutTail: Tail
  readonly stderrTail: Tail
  spawnError: NodeJS.ErrnoException | undefined
}

/** The input as the one line of JSON the child reads; `undefined` is sent as `null`. */
const inputOf = (input: unknown): Effect.Effect<string, Refused> =>
  Effect.try({
    try: () => `${JSON.stringify(input ?? null)}\n`,
    catch: (e) => new Refused({ message: `its input cannot be written as JSON: ${e instanceof Error ? e.message : String(e)}` })
  })

const start = (launch: Launch, cwd: string, env: Record<string, string>, input: string, files: OutputFiles) =>
  Effect.gen(function* () {
    const exited = yield* Deferred.make<void>()
    const closed = yield* Deferred.make<void>()
    const child = yield* Effect.try({
      try: () => spawn(launch.program, launch.args, { cwd, env, stdio: ["pipe", "pipe", "pipe"], shell: false, detached: false }),
      // Thrown, not emitted: arguments Node refuses outright (a NUL byte in an argument, say).
      catch: (e) => new Refused({ message: `cannot start ${launch.name}: ${e instanceof Error ? e.message : String(e)}` })
    }).pipe(Effect.tapError(() => Effect.sync(() => [files.stdout, files.stderr].forEach((stream) => stream.destroy()))))
    const running: Running = {
      child,
      exited,
      closed,
      stdoutTail: new Tail(RESULT_TAIL_BYTES),
      stderrTail: new Tail(STDERR_TAIL_BYTES),
      spawnError: undefined
    }
    child.on("error", (e: NodeJS.ErrnoException) => {
      // Also emitted when a kill fails; only a child that never started has no pid.
      if (child.pid !== undefined) return
      running.spawnError = e
      Deferred.unsafeDone(exited, Effect.void)
    })
    child.on("exit", () => Deferred.unsafeDone(exited, Effect.void))
    child.on("close", () => Deferred.unsafeDone(closed, Effect.void))
    child.stdout!.on("data", (chunk: Buffer) => running.stdoutTail.push(chunk))
    child.stderr!.on("data", (chunk: Buffer) => running.stderrTail.push(chunk))
    child.stdout!.pipe(files.stdout)
    child.stderr!.pipe(files.stderr)
    // A child that never reads its input closes the pipe under us (EPIPE): that is its choice.
    child.stdin!.on("error", () => {})
    child.stdin!.end(input)
    return running
  })

/** Waits for `deferred`, doing `act` if it is still pending after `ms`; works uninterruptibly. */
const awaitOr = (deferred: Deferred.Deferred<void>, ms: number, act: () => void) =>
  Effect.gen(function* () {
    const timer = yield* Effect.forkDaemon(Effect.interruptible(Effect.sleep(Duration.millis(ms))).pipe(Effect.zipRight(Effect.sync(act))))
    yield* Deferred.await(deferred)
    yield* Fiber.interrupt(timer)
  })

const hasExited = (running: Running) =>
  running.spawnError !== undefined || running.child.exitCode !== null || running.child.signalCode !== null

/** SIGTERM, then SIGKILL after the grace; returns once the child has exited. */
const stop = (running: Running, graceMs: number) =>
  Effect.suspend(() => {
    if (hasExited(running)) return Deferred.await(running.exited)
    running.child.kill("SIGTERM")
    return awaitOr(running.exited, graceMs, () => running.child.kill("SIGKILL"))
  })

/** All output read (or given up on, see DRAIN_AFTER_EXIT_MS) and written to the files. */
const finishOutput = (running: Running, files: OutputFiles) =>
  Effect.gen(function* () {
    yield* awaitOr(running.closed, DRAIN_AFTER_EXIT_MS, () => {
      running.child.stdout?.destroy()
      running.child.stderr?.destroy()
    })
    yield* Effect.promise(async () => {
      for (const stream of [files.stdout, files.stderr]) {
        // A pipe ends its file when the output ends; a destroyed pipe does not.
        if (!stream.writableEnded) stream.end()
        await finished(stream).catch(() => {})
        stream.destroy()
      }
    })
  })

const cannotStart = (name: string, e: NodeJS.ErrnoException): string =>
  e.code === "ENOENT"
    ? `cannot start ${name}: not found`
    : e.code === "EACCES"
      ? `cannot start ${name}: permission denied`
      : `cannot start ${name}: ${e.message}`

type Verdict = Omit<ExecutionOutcome, "durationMs">

const failed = (error: string, exitCode: number | null = null, signal: string | null = null): Verdict => ({
  ok: false,
  result: null,
  error,
  exitCode,
  signal
})

/** A duration as Effect writes it (`250ms`, `30s`, `1m 30s`), a fraction of a millisecond too (`0.1ms`, not `100000ns`). */
const durationText = (ms: number): string => (ms < 1 ? `${Number(ms.toPrecision(2))}ms` : Duration.format(Duration.millis(Math.round(ms))))

/** Why an ended child did not end well (did not start, timed out, killed, a non-zero exit), or undefined. */
const exitFailure = ({ running, timedOut }: Ran, launch: Launch, timeoutMs: number | null): Verdict | undefined => {
  if (running.spawnError !== undefined) return failed(cannotStart(launch.name, running.spawnError))
  const exitCode = running.child.exitCode
  const signal = running.child.signalCode
  if (timedOut) return failed(`timed out after ${durationText(timeoutMs ?? 0)}`, exitCode, signal)
  if (exitCode === null) return failed(`stopped by ${signal ?? "a signal"}`, null, signal)
  if (exitCode !== 0) {
    const reason = reasonOf(running.stderrTail.lines().lines)
    return failed(`exited with code ${exitCode}${reason === undefined ? "" : `: ${reason.slice(0, STDERR_LINE_CHARS)}`}`, exitCode)
  }
  return undefined
}

/** What the ended child's exit and output mean, under the contract. */
const verdictOf = (ran: Ran, launch: Launch, timeoutMs: number | null): Verdict => {
  const failure = exitFailure(ran, launch, timeoutMs)
  if (failure !== undefined) return failure
  const { running, files } = ran
  const exitCode = running.child.exitCode
  if (files.error !== undefined) return failed(files.error, exitCode)
  const last = running.stdoutTail.lastLine()
  if (last === undefined) return { ok: true, result: null, error: null, exitCode, signal: null }
  if (!last.whole) return failed(`its last line of output is longer than ${RESULT_TAIL_BYTES / 1024} KiB`, exitCode)
  let result: unknown
  try {
    result = JSON.parse(last.line)
  } catch {
    return failed(`its last line of output is not JSON: ${last.line.slice(0, NOT_JSON_CHARS)}`, exitCode)
  }
  const tooDeep = depthProblem(result, "its result")
  return tooDeep === undefined ? { ok: true, result, error: null, exitCode, signal: null } : failed(tooDeep, exitCode)
}

/** The longest a JavaScript timer waits; Effect's clock never fires for a longer sleep. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Sleeps `ms`, in steps a timer can take: a job's `timeout: 30d` (past 24.8 days) never fired,
 * because Effect's clock does not schedule a sleep longer than a timer can wait.
 */
export const sleepFor = (ms: number): Effect.Effect<void> =>
  ms <= MAX_TIMER_MS ? Effect.sleep(Duration.millis(ms)) : Effect.zipRight(Effect.sleep(Duration.millis(MAX_TIMER_MS)), Effect.suspend(() => sleepFor(ms - MAX_TIMER_MS)))

/** A check's command as a launch: a list without a shell, a string through `/bin/sh -c`. */
const checkLaunch = (command: CheckCommand): Launch =>
  typeof command === "string" ? { program: "/bin/sh", args: ["-c", command], name: `sh -c ${JSON.stringify(command)}` } : { program: command[0] ?? "", args: command.slice(1), name: command[0] ?? "" }

/** The first of `paths` (relative to the bag) that does not exist there, or undefined. */
const firstMissing = (bagDir: string, paths: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    for (const path of paths) {
      const exists = await fs.stat(nodePath.resolve(bagDir, path)).then(() => true, () => false)
      if (!exists) return path
    }
    return undefined
  })

export const make = (options: ChildExecutorOptions = {}): ExecutorService => {
  const graceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS
  const cacheDir = options.typeScriptCacheDir ?? defaultCacheDir()

  /**
   * One child to its end (or `timeoutMs`), its output appended to the attempt's files. Meant to
   * run uninterruptibly: `restore` makes only the wait interruptible, and an interruption stops
   * the child and completes once it has exited.
   */
  const runChild = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>, launch: Launch, cwd: string, env: Record<string, string>, input: string, spec: ExecutionSpec, timeoutMs: number | null) =>
    Effect.gen(function* () {
      const files = yield* openOutput(spec)
      const running = yield* start(launch, cwd, env, input, files)
      const ended = Deferred.await(running.exited)
      const waited = yield* restore(timeoutMs === null ? Effect.asSome(ended) : Effect.raceFirst(Effect.asSome(ended), Effect.as(sleepFor(timeoutMs), Option.none()))).pipe(
        Effect.onInterrupt(() => stop(running, graceMs).pipe(Effect.zipRight(finishOutput(running, files))))
      )
      const timedOut = Option.isNone(waited)
      if (timedOut) yield* stop(running, graceMs)
      yield* finishOutput(running, files)
      return { running, files, timedOut } satisfies Ran
    })

  return Executor.of({
    run: (spec) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeMillis
        const verdict = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const launch = yield* restore(launchOf(spec, cacheDir))
            const cwd = yield* restore(cwdOf(spec))
            // A secret goes to the child's environment only, never to a message or a log.
            const env = { ...childEnv(spec), ...(yield* secretsOf(spec.secrets ?? [], options.secretsDir)) }
            // The job's probe first: when it fails, the job does not start (bag-manifest spec, "Errors").
            const preflight = spec.preflight
            if (preflight !== undefined) {
              const probe = checkLaunch(preflight.command)
              const failure = exitFailure(yield* runChild(restore, probe, cwd, env, "", spec, preflight.timeoutMs), probe, preflight.timeoutMs)
              if (failure !== undefined) {
                // The job never ran: the attempt has no exit code of its own.
                return failed(`its preflight failed, so it did not start: ${failure.error}${preflight.hint === undefined ? "" : ` (${preflight.hint})`}`)
              }
            }
            const input = yield* inputOf(spec.input)
            const verdict = verdictOf(yield* runChild(restore, launch, cwd, env, input, spec, spec.timeoutMs), launch, spec.timeoutMs)
            // Checks at its finish, once it succeeded: its files, then its command.
            const validate = spec.validate
            if (!verdict.ok || validate === undefined) return verdict
            const missing = yield* firstMissing(spec.bagDir, validate.filesExist)
            if (missing !== undefined) return failed(`its validate check failed: ${missing} does not exist`, verdict.exitCode)
            if (validate.command === undefined) return verdict
            const check = checkLaunch(validate.command)
            const failure = exitFailure(yield* runChild(restore, check, cwd, env, "", spec, validate.timeoutMs), check, validate.timeoutMs)
            return failure === undefined ? verdict : failed(`its validate command failed: ${failure.error}`, verdict.exitCode)
          })
        ).pipe(Effect.catchTag("Refused", (refused) => Effect.succeed(failed(refused.message))))
        const endedAt = yield* Clock.currentTimeMillis
        return { ...verdict, durationMs: endedAt - startedAt }
      })
  })
}

export const layerWith = (options: ChildExecutorOptions): Layer.Layer<Executor> => Layer.succeed(Executor, make(options))

export const layer: Layer.Layer<Executor> = layerWith({})
