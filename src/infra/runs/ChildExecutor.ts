/**
 * The executor on this machine: each job attempt is one child process, run alike on the owner
 * and on a worker, so where placement sends a job does not change what it sees. The contract
 * (input on stdin, result on the last line of stdout, what the child's environment holds, how it
 * is stopped) is docs/executors.md; this file enforces it.
 *
 * The child gets none of the service's environment (it may hold secrets), only a few harmless
 * variables, the run's names, the job's own literals and the secrets it declares (from this
 * machine's secret files). A job is never started through a shell (a check given as a string is:
 * `/bin/sh -c`). Its process, output files and stopping are Child.ts.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Executor, type CheckCommand, type ExecutionOutcome, type ExecutionSpec, type ExecutorService } from "../../app/runs/Executor.js"
import { VARIABLE_NAME } from "../../domain/manifest/Formats.js"
import { depthProblem } from "../../domain/runs/Values.js"
import { DEFAULT_OUTPUT_LIMIT } from "../../domain/runs/OutputLimit.js"
import { cannotStart, Refused, RESULT_TAIL_BYTES, runChild, type Launch, type Ran } from "./Child.js"
import { modeText } from "../PrivateFiles.js"
import { notesIn } from "./Leftovers.js"
import { bundle, defaultCacheDir, isTypeScript } from "./TypeScriptMain.js"

export interface ChildExecutorOptions {
  /** Where bundled TypeScript mains are kept; default `os.tmpdir()/svc-ts-cache-<uid>`. */
  readonly typeScriptCacheDir?: string
  /** Between SIGTERM and SIGKILL when a child is stopped; default 5 s. */
  readonly stopGraceMs?: number
  /** Where a job's secrets are kept, one file per name (`$SVC_HOME/secrets`); none: a job that declares one does not start. */
  readonly secretsDir?: string
  /** Where each running child is noted (`$SVC_HOME/children`), for the next runtime to stop if this one is killed (Leftovers.ts). */
  readonly childrenDir?: string
  /** The most bytes of each stream of an attempt kept in its files (SVC_WORKFLOW_OUTPUT_LIMIT); default 16 MiB. */
  readonly outputLimit?: number
}

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
        if (!VARIABLE_NAME.test(name)) throw new Refused({ message: `its secret name ${JSON.stringify(name)} is not an environment variable name` })
        if (dir === undefined) throw new Refused({ message: `it needs the secret ${name}, and this machine keeps no secrets` })
        const file = nodePath.join(dir, name)
        const stat = await fs.stat(file).catch((e: NodeJS.ErrnoException) => {
          throw new Refused({
            message:
              e.code === "ENOENT"
                ? `it needs the secret ${name}, which is not set on this machine: write its value to ${file} (readable by svc alone: chmod 600)`
                : `its secret ${name} cannot be read from ${file}: ${e.code ?? e.message}`
          })
        })
        if (!stat.isFile()) throw new Refused({ message: `its secret ${name} must be a file holding its value, and ${file} is not one` })
        // A secret others can read is not one: said rather than used (a link's target is what counts).
        if ((stat.mode & 0o077) !== 0) {
          throw new Refused({ message: `its secret ${name} is readable by other users (${file} has mode ${modeText(stat.mode & 0o777)}): chmod 600 ${file}` })
        }
        const value = await fs.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => {
          throw new Refused({ message: `its secret ${name} cannot be read from ${file}: ${e.code ?? e.message}` })
        })
        // An environment variable cannot hold a NUL byte; said without the value (Node's own refusal quoted it).
        if (value.includes("\0")) throw new Refused({ message: `its secret ${name} holds a NUL byte, which an environment variable cannot: rewrite ${file}` })
        values[name] = value.replace(/\r?\n$/, "")
      }
      return values
    },
    catch: (e) => (e instanceof Refused ? e : new Refused({ message: `its secrets cannot be read: ${e instanceof Error ? e.message : String(e)}` }))
  })

/** Variables of the service's environment a child may see; nothing else is passed on. */
export const PASSED_ENV = ["PATH", "HOME", "TMPDIR", "LANG", "TZ"] as const

const DEFAULT_STOP_GRACE_MS = 5_000
const STDERR_LINE_CHARS = 200
const NOT_JSON_CHARS = 80
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

/** The input as the one line of JSON the child reads; `undefined` is sent as `null`. */
const inputOf = (input: unknown): Effect.Effect<string, Refused> =>
  Effect.try({
    try: () => `${JSON.stringify(input ?? null)}\n`,
    catch: (e) => new Refused({ message: `its input cannot be written as JSON: ${e instanceof Error ? e.message : String(e)}` })
  })

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
  const notes = options.childrenDir === undefined ? undefined : notesIn(options.childrenDir)
  const machineLimit = options.outputLimit ?? DEFAULT_OUTPUT_LIMIT

  return Executor.of({
    run: (spec) =>
      Effect.gen(function* () {
        // How long it ran, by the monotonic clock: a step of the wall clock meanwhile is no run time.
        const startedAt = yield* Clock.currentTimeNanos
        const outputLimit = Math.min(machineLimit, spec.outputLimit ?? machineLimit)
        const verdict = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const launch = yield* restore(launchOf(spec, cacheDir))
            const cwd = yield* restore(cwdOf(spec))
            // A secret goes to the child's environment only, never to a message or a log.
            const env = { ...childEnv(spec), ...(yield* restore(secretsOf(spec.secrets ?? [], options.secretsDir))) }
            // The job's probe first: when it fails, the job does not start (bag-manifest spec, "Errors").
            const preflight = spec.preflight
            if (preflight !== undefined) {
              const probe = checkLaunch(preflight.command)
              const failure = exitFailure(yield* runChild(restore, probe, cwd, env, "", spec, preflight.timeoutMs, graceMs, outputLimit, notes), probe, preflight.timeoutMs)
              if (failure !== undefined) {
                // The job never ran: the attempt has no exit code of its own.
                return failed(`its preflight failed, so it did not start: ${failure.error}${preflight.hint === undefined ? "" : ` (${preflight.hint})`}`)
              }
            }
            const input = yield* inputOf(spec.input)
            const verdict = verdictOf(yield* runChild(restore, launch, cwd, env, input, spec, spec.timeoutMs, graceMs, outputLimit, notes), launch, spec.timeoutMs)
            // Checks at its finish, once it succeeded: its files, then its command.
            const validate = spec.validate
            if (!verdict.ok || validate === undefined) return verdict
            const missing = yield* firstMissing(spec.bagDir, validate.filesExist)
            if (missing !== undefined) return failed(`its validate check failed: ${missing} does not exist`, verdict.exitCode)
            if (validate.command === undefined) return verdict
            const check = checkLaunch(validate.command)
            const failure = exitFailure(yield* runChild(restore, check, cwd, env, "", spec, validate.timeoutMs, graceMs, outputLimit, notes), check, validate.timeoutMs)
            return failure === undefined ? verdict : failed(`its validate command failed: ${failure.error}`, verdict.exitCode)
          })
        ).pipe(Effect.catchTag("Refused", (refused) => Effect.succeed(failed(refused.message))))
        const endedAt = yield* Clock.currentTimeNanos
        return { ...verdict, durationMs: Number((endedAt - startedAt) / 1_000_000n) }
      })
  })
}

export const layerWith = (options: ChildExecutorOptions): Layer.Layer<Executor> => Layer.succeed(Executor, make(options))

export const layer: Layer.Layer<Executor> = layerWith({})
