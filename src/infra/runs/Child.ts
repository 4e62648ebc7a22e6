/**
 * One child process, from its start to its end: spawned without a shell, its output appended to
 * the attempt's files as it arrives (each stream up to the output limit) with a bounded tail kept
 * in memory, waited for with a timeout of any length, and stopped with SIGTERM then SIGKILL; every
 * wait completes only once the child has exited and its output is written. What a job's child
 * means (its launch, input, result and checks) is ChildExecutor.ts.
 */
import { spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs/promises"
import type { WriteStream } from "node:fs"
import * as nodePath from "node:path"
import { Transform } from "node:stream"
import { finished } from "node:stream/promises"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type { ExecutionSpec } from "../../app/runs/Executor.js"
import { KeptOutput } from "../../domain/runs/OutputLimit.js"
import { signalGroup as signalGroupOf, type LeftoverNotes } from "./Leftovers.js"
import { descendantsOf, startTimeOf } from "./Processes.js"
import { makeDirectory } from "../MakeDirectory.js"

/** Stdout kept in memory to find the result line; the result line can be at most this long. */
export const RESULT_TAIL_BYTES = 64 * 1024
const STDERR_TAIL_BYTES = 4 * 1024
/**
 * After the child exits, its output is read until its pipes close, for at most this long: a
 * process it left behind may hold them open, and the run must still end.
 */
const DRAIN_AFTER_EXIT_MS = 2_000

/**
 * The process groups of the children of this process that have not exited yet. A child runs in a
 * group of its own, so nothing stops it when the process ends without stopping it: an `svc serve`
 * told to stop at once (a second Ctrl-C) kills them first (`killAllNow`), or a job left running
 * there would run on beside the attempt its owner places again elsewhere after the 15 s lapse.
 */
const unexited = new Set<number>()

/**
 * SIGKILL to the process group of every child still running (a group that cannot be signalled:
 * the child alone), synchronously: for a process about to end at once. Answers how many.
 */
export const killAllNow = (): number => {
  let killed = 0
  for (const pid of unexited) if (signalGroupOf(pid, "SIGKILL")) killed++
  unexited.clear()
  return killed
}

/** A run refused before anything is started; becomes an outcome with ok false. */
export class Refused extends Data.TaggedError("Refused")<{ readonly message: string }> {}

/** The last `limit` bytes of a stream (up to twice that in memory between compactions). */
export class Tail {
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


export interface Launch {
  readonly program: string
  readonly args: ReadonlyArray<string>
  /** How the program is named in an error sentence. */
  readonly name: string
}


export interface OutputFiles {
  readonly stdout: WriteStream
  readonly stderr: WriteStream
  /** What the child's pipes go into: at most the limit of each stream reaches its file (OutputLimit.ts). */
  readonly kept: { readonly stdout: Transform; readonly stderr: Transform }
  /** The first write error, if any. */
  error: string | undefined
}

/** A stream's bytes through `KeptOutput`: what passes is appended to its file. */
const keptStream = (kept: KeptOutput) =>
  new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const out = kept.write(chunk)
      done(null, out.length > 0 ? out : undefined)
    },
    flush(done) {
      const out = kept.end()
      done(null, out.length > 0 ? out : undefined)
    }
  })

/** The output files, each to take at most `limit` bytes of its stream past what it holds. */
export const openOutput = (spec: ExecutionSpec, limit: number): Effect.Effect<OutputFiles, Refused> =>
  Effect.tryPromise({
    try: async () => {
      const open = async (file: string) => {
        // Private, as the runs directory is (docs/operations.md): output may hold what a job printed of a secret.
        await makeDirectory(nodePath.dirname(file), 0o700)
        // Read too: an earlier child's output there (a preflight's) counts, and its last byte
        // tells whether a notice of the cut starts a line of its own.
        const handle = await fs.open(file, "a+", 0o600)
        try {
          const size = (await handle.stat()).size
          const last = size > 0 && size <= limit ? (await handle.read(Buffer.alloc(1), 0, 1, size - 1)).buffer[0] : undefined
          return { handle, kept: new KeptOutput(size, limit, last) }
        } catch (e) {
          await handle.close()
          throw e
        }
      }
      const stdout = await open(spec.stdoutFile)
      const stderr = await open(spec.stderrFile).catch(async (e: unknown) => {
        await stdout.handle.close()
        throw e
      })
      const files: OutputFiles = {
        stdout: stdout.handle.createWriteStream(),
        stderr: stderr.handle.createWriteStream(),
        kept: { stdout: keptStream(stdout.kept), stderr: keptStream(stderr.kept) },
        error: undefined
      }
      for (const [kept, sink, file] of [[files.kept.stdout, files.stdout, spec.stdoutFile], [files.kept.stderr, files.stderr, spec.stderrFile]] as const) {
        kept.pipe(sink)
        sink.on("error", (e) => {
          files.error ??= `its output could not be written to ${file}: ${e.message}`
        })
        // A file that fails (a full disk) takes no more: the job's output is read on and let go (the
        // run fails for it, ChildExecutor.ts), or the pipe stayed paused and the job blocked on its
        // next write until its timeout.
        sink.once("error", () => {
          kept.unpipe(sink)
          kept.resume()
        })
      }
      return files
    },
    catch: (e) => new Refused({ message: `its output files cannot be opened: ${e instanceof Error ? e.message : String(e)}` })
  })

/** A child that ran to its end, with its files and whether its time ran out. */
export interface Ran {
  readonly running: Running
  readonly files: OutputFiles
  readonly timedOut: boolean
}

export interface Running {
  readonly child: ChildProcess
  /** The process ended (exit), or never started (spawn error). */
  readonly exited: Deferred.Deferred<void>
  /** Its pipes are closed too: all its output was read. */
  readonly closed: Deferred.Deferred<void>
  readonly stdoutTail: Tail
  readonly stderrTail: Tail
  spawnError: NodeJS.ErrnoException | undefined
}


/** Why Node refused to spawn, without the value it refused: its message quotes it, and it may be a secret. */
const refusedSpawn = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException | undefined)?.code
  if (typeof code === "string" && code.startsWith("ERR_INVALID_ARG")) {
    const where = /options\.env\['([^']*)'\]/.exec(e instanceof Error ? e.message : "")
    return where !== null ? `the value of its environment variable ${where[1]} cannot be passed to a process (a NUL byte?)` : "Node refused its program, arguments or environment (a NUL byte in one?)"
  }
  return e instanceof Error ? e.message : String(e)
}

export const start = (launch: Launch, cwd: string, env: Record<string, string>, input: string, files: OutputFiles, noted?: { readonly notes: LeftoverNotes; readonly name: string }) =>
  Effect.gen(function* () {
    const exited = yield* Deferred.make<void>()
    const closed = yield* Deferred.make<void>()
    const child = yield* Effect.try({
      // A process group of its own (detached), so that stopping it stops what it started too.
      try: () => spawn(launch.program, launch.args, { cwd, env, stdio: ["pipe", "pipe", "pipe"], shell: false, detached: true }),
      // Thrown, not emitted: arguments Node refuses outright (a NUL byte in an argument, say).
      // Node's message quotes the value it refused, and an environment value may be a secret.
      catch: (e) => new Refused({ message: `cannot start ${launch.name}: ${refusedSpawn(e)}` })
    }).pipe(Effect.tapError(() => Effect.sync(() => [files.kept.stdout, files.kept.stderr, files.stdout, files.stderr].forEach((stream) => stream.destroy()))))
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
    // Noted while it runs, so that a runtime started after this one was killed stops it (Leftovers.ts).
    const pid = child.pid
    if (pid !== undefined) unexited.add(pid)
    if (noted !== undefined && pid !== undefined) noted.notes.add(pid, noted.name, Date.now())
    child.on("exit", () => {
      if (pid !== undefined) unexited.delete(pid)
      if (noted !== undefined && pid !== undefined) noted.notes.remove(pid)
      Deferred.unsafeDone(exited, Effect.void)
    })
    child.on("close", () => Deferred.unsafeDone(closed, Effect.void))
    // No pipes when they could not be made (too many open files): the spawn failed, and its
    // error event says so (reading them threw, and the attempt ended as an internal error).
    const { stdin, stdout, stderr } = child
    if (stdin == null || stdout == null || stderr == null) return running
    stdout.on("data", (chunk: Buffer) => running.stdoutTail.push(chunk))
    stderr.on("data", (chunk: Buffer) => running.stderrTail.push(chunk))
    stdout.pipe(files.kept.stdout)
    stderr.pipe(files.kept.stderr)
    // A child that never reads its input closes the pipe under us (EPIPE): that is its choice.
    stdin.on("error", () => {})
    stdin.end(input)
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

/**
 * `signal` to the child's process group: the child and what it started (a check's `sh -c` and
 * its commands, a job's own helpers), the child alone if the group cannot be signalled.
 */
const signalGroup = (running: Running, signal: NodeJS.Signals) => {
  const pid = running.child.pid
  try {
    if (pid === undefined) throw new Error("no pid")
    process.kill(-pid, signal)
  } catch {
    running.child.kill(signal)
  }
}

/**
 * What the child started that left its process group since (`setsid`, a daemon's group of its
 * own), which signalling the group does not reach: found by parentage (Processes.ts) from the
 * child while it runs and from what was found before, and kept with its start time, so that a
 * pid the system gave to another process since is left alone.
 */
class Strays {
  private readonly followed = new Map<number, string>()
  constructor(private readonly running: Running) {}

  /** Looks again: what the job and what it started have started since. */
  find(): void {
    const pid = this.running.child.pid
    const roots = [...this.followed.keys()]
    // Once the child has exited, its pid may be another process's: only what was found is followed.
    if (pid !== undefined && !hasExited(this.running)) roots.push(pid)
    for (const p of descendantsOf(roots)) if (p.group !== pid) this.followed.set(p.pid, p.start)
  }

  signal(signal: NodeJS.Signals): void {
    for (const [pid, start] of this.followed) {
      if (startTimeOf(pid) !== start) {
        this.followed.delete(pid)
        continue
      }
      try {
        process.kill(pid, signal)
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

/**
 * SIGTERM to its process group, then SIGKILL after the grace; returns once the child has exited.
 * What is left of the group once it has (a helper that ignored SIGTERM) gets SIGKILL then. What
 * it started that left the group (Strays) is signalled alike.
 */
export const stop = (running: Running, graceMs: number) =>
  Effect.suspend(() => {
    if (hasExited(running)) return Deferred.await(running.exited)
    const strays = new Strays(running)
    strays.find()
    signalGroup(running, "SIGTERM")
    strays.signal("SIGTERM")
    const kill = () => {
      strays.find()
      signalGroup(running, "SIGKILL")
      strays.signal("SIGKILL")
    }
    return awaitOr(running.exited, graceMs, kill).pipe(Effect.zipRight(Effect.sync(kill)))
  })

/** All output read (or given up on, see DRAIN_AFTER_EXIT_MS) and written to the files. */
export const finishOutput = (running: Running, files: OutputFiles) =>
  Effect.gen(function* () {
    yield* awaitOr(running.closed, DRAIN_AFTER_EXIT_MS, () => {
      running.child.stdout?.destroy()
      running.child.stderr?.destroy()
    })
    yield* Effect.promise(async () => {
      for (const [kept, sink] of [[files.kept.stdout, files.stdout], [files.kept.stderr, files.stderr]] as const) {
        // A pipe ends its file when the output ends; a destroyed pipe does not: what it held goes
        // to the file, then the file ends (a file that failed is no longer piped to: ended here).
        if (!kept.writableEnded) kept.end()
        await finished(kept).catch(() => {})
        if (!sink.writableEnded) sink.end()
        await finished(sink).catch(() => {})
        sink.destroy()
      }
    })
  })

export const cannotStart = (name: string, e: NodeJS.ErrnoException): string =>
  e.code === "ENOENT"
    ? `cannot start ${name}: not found`
    : e.code === "EACCES"
      ? `cannot start ${name}: permission denied`
      : e.code === "EMFILE" || e.code === "ENFILE"
        ? `cannot start ${name}: svc has too many files open (${e.code}; its limit: ulimit -n)`
        : `cannot start ${name}: ${e.message}`


/** The longest a JavaScript timer waits; Effect's clock never fires for a longer sleep. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Sleeps `ms`, in steps a timer can take: a job's `timeout: 30d` (past 24.8 days) never fired,
 * because Effect's clock does not schedule a sleep longer than a timer can wait.
 */
export const sleepFor = (ms: number): Effect.Effect<void> =>
  ms <= MAX_TIMER_MS ? Effect.sleep(Duration.millis(ms)) : Effect.zipRight(Effect.sleep(Duration.millis(MAX_TIMER_MS)), Effect.suspend(() => sleepFor(ms - MAX_TIMER_MS)))

/**
 * One child to its end (or `timeoutMs`), its output appended to the attempt's files. Meant to
 * run uninterruptibly: `restore` makes only the wait interruptible, and an interruption stops
 * the child and completes once it has exited.
 */
export const runChild = (
restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
launch: Launch,
cwd: string,
env: Record<string, string>,
input: string,
spec: ExecutionSpec,
timeoutMs: number | null,
graceMs: number,
outputLimit: number,
notes?: LeftoverNotes
) =>
  Effect.gen(function* () {
    const files = yield* openOutput(spec, outputLimit)
    const running = yield* start(launch, cwd, env, input, files, notes === undefined ? undefined : { notes, name: `attempt ${spec.attempt} (${launch.name})` })
    const ended = Deferred.await(running.exited)
    const waited = yield* restore(timeoutMs === null ? Effect.asSome(ended) : Effect.raceFirst(Effect.asSome(ended), Effect.as(sleepFor(timeoutMs), Option.none()))).pipe(
      Effect.onInterrupt(() => stop(running, graceMs).pipe(Effect.zipRight(finishOutput(running, files))))
    )
    const timedOut = Option.isNone(waited)
    if (timedOut) yield* stop(running, graceMs)
    yield* finishOutput(running, files)
    return { running, files, timedOut } satisfies Ran
  })
