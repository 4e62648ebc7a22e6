/**
 * The child-process executor against real child processes (no mocks): the job contract of
 * docs/executors.md, each rule once. The jobs are in test/fixtures/executor/bag; a job that must
 * not type-check (the TypeScript error) is written to a temporary bag instead, since tsc checks
 * every .ts file under test/. `it.live`: timeouts and the stop grace use the real clock.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Clock from "effect/Clock"
import { Executor, type ExecutionSpec } from "../../../src/app/runs/Executor.js"
import { sleepFor } from "../../../src/infra/runs/Child.js"
import { processStat } from "../../../src/infra/runs/Processes.js"
import { layerWith } from "../../../src/infra/runs/ChildExecutor.js"

const bagDir = fileURLToPath(new URL("../../fixtures/executor/bag", import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), "svc-executor-"))
const ExecutorLive = layerWith({ typeScriptCacheDir: join(scratch, "ts-cache"), stopGraceMs: 300 })

let runs = 0
const spec = (over: Partial<ExecutionSpec>): ExecutionSpec => {
  const n = ++runs
  return {
    attempt: `attempt-${n}`,
    runId: `run-${n}`,
    bagDir,
    runs: { using: "node", main: "jobs/echo.mjs" },
    env: [],
    workingDirectory: undefined,
    input: null,
    timeoutMs: null,
    stdoutFile: join(scratch, `${n}`, "stdout.log"),
    stderrFile: join(scratch, `${n}`, "stderr.log"),
    ...over
  }
}

const run = (s: ExecutionSpec) => Effect.flatMap(Executor, (executor) => executor.run(s))

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe("ESRCH")
    return false
  }
}

/** The pid a sleeping job names on stderr, once it has. */
const pidOf = (s: ExecutionSpec) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      const match = existsSync(s.stderrFile) ? /pid (\d+)/.exec(readFileSync(s.stderrFile, "utf8")) : null
      if (match !== null) return Number(match[1])
      yield* Effect.sleep(Duration.millis(20))
    }
    return yield* Effect.dieMessage("the job never named its pid")
  })

describe("ChildExecutor", () => {
  describe("node", () => {
    it.live("runs a .js job: input on stdin, the result from the last line, every line in the stdout file", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/echo.js" }, input: { text: "hi" } })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: true, result: { got: { text: "hi" }, runner: "js" }, error: null, exitCode: 0, signal: null })
        expect(outcome.durationMs).toBeGreaterThan(0)
        expect(readFileSync(s.stdoutFile, "utf8")).toBe(`a log line before the result\n${JSON.stringify(outcome.result)}\n`)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("runs a .mjs job, appending to output files that already hold lines", () =>
      Effect.gen(function* () {
        const s = spec({ input: [1, 2] })
        mkdirSync(join(s.stdoutFile, ".."), { recursive: true })
        writeFileSync(s.stdoutFile, "an earlier attempt\n")
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: true, result: { got: [1, 2], runner: "mjs" } })
        expect(readFileSync(s.stdoutFile, "utf8")).toBe(`an earlier attempt\n${JSON.stringify(outcome.result)}\n`)
        expect(readFileSync(s.stderrFile, "utf8")).toBe("")
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("runs a .ts job with types, a relative TS import, a package and its own files; the second run uses the cache", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/typed.ts" }, input: { name: "ada" } })
        const first = yield* run(s)
        expect(first).toMatchObject({
          ok: true,
          result: { text: "hello, ada", answer: 42, dirname: join(bagDir, "jobs") }
        })
        const second = yield* run(spec({ runs: { using: "node", main: "jobs/typed.ts" }, input: { name: "bob" } }))
        expect(second).toMatchObject({ ok: true, result: { text: "hello, bob" } })
        expect(readdirSync(join(scratch, "ts-cache")).filter((f) => f.endsWith(".mjs"))).toHaveLength(1)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("runs a .cts job as CommonJS, as it runs where it lies: require, a package, __filename and __dirname its own (it ran as an ES module: require was 'not supported')", () =>
      Effect.gen(function* () {
        const outcome = yield* run(spec({ runs: { using: "node", main: "jobs/common.cts" }, input: { name: "ada" } }))
        expect(outcome).toMatchObject({
          ok: true,
          result: { text: "hello, ada", answer: 42, filename: join(bagDir, "jobs", "common.cts"), dirname: join(bagDir, "jobs"), commonJs: true }
        })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("runs a .ts job importing a .cts helper that requires a built-in and a package, as Node runs it where it lies (require was 'not supported')", () =>
      Effect.gen(function* () {
        const outcome = yield* run(spec({ runs: { using: "node", main: "jobs/mixed.ts" }, input: { name: "ada" } }))
        expect(outcome).toMatchObject({ ok: true, result: { yaml: "name: ada", dir: "lib" } })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a TypeScript syntax error is an outcome naming the file and line", () =>
      Effect.gen(function* () {
        const bag = mkdtempSync(join(scratch, "bag-"))
        mkdirSync(join(bag, "jobs"))
        writeFileSync(join(bag, "jobs", "broken.ts"), "const fine: number = 1\nconst broken: number = (fine +\nexport {}\n")
        const outcome = yield* run(spec({ bagDir: bag, runs: { using: "node", main: "jobs/broken.ts" } }))
        expect(outcome).toMatchObject({ ok: false, result: null, exitCode: null })
        expect(outcome.error).toMatch(/^its TypeScript does not compile: jobs\/broken\.ts:3:\d+: /)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("refuses a main outside the bag, lexically or through a symbolic link, and a missing one", () =>
      Effect.gen(function* () {
        const escaping = yield* run(spec({ runs: { using: "node", main: "../../executor.test.ts" } }))
        expect(escaping).toMatchObject({ ok: false, error: "its main ../../executor.test.ts is outside its bag" })
        const bag = mkdtempSync(join(scratch, "bag-"))
        writeFileSync(join(scratch, "outside.mjs"), "console.log(1)\n")
        symlinkSync(join(scratch, "outside.mjs"), join(bag, "link.mjs"))
        const linked = yield* run(spec({ bagDir: bag, runs: { using: "node", main: "link.mjs" } }))
        expect(linked).toMatchObject({ ok: false, error: "its main link.mjs is outside its bag (through a symbolic link)" })
        const missing = yield* run(spec({ runs: { using: "node", main: "jobs/nope.mjs" } }))
        expect(missing).toMatchObject({ ok: false, error: "its main jobs/nope.mjs does not exist in its bag" })
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("process", () => {
    it.live("spawns the command without a shell, in the bag, with the input on stdin", () =>
      Effect.gen(function* () {
        const script = "let t='';process.stdin.on('data',c=>t+=c).on('end',()=>console.log(JSON.stringify({args:process.argv.slice(1),cwd:process.cwd(),input:JSON.parse(t)})))"
        const outcome = yield* run(spec({ runs: { using: "process", command: [process.execPath, "-e", script, "$HOME", "a b"] }, input: "in" }))
        expect(outcome).toMatchObject({ ok: true, result: { args: ["$HOME", "a b"], cwd: bagDir, input: "in" } })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a program that does not exist, or an input JSON cannot hold, is an outcome, not a crash", () =>
      Effect.gen(function* () {
        const outcome = yield* run(spec({ runs: { using: "process", command: ["svc-no-such-program", "x"] } }))
        expect(outcome).toMatchObject({ ok: false, result: null, error: "cannot start svc-no-such-program: not found", exitCode: null, signal: null })
        const bigint = yield* run(spec({ input: { n: 1n } }))
        expect(bigint).toMatchObject({ ok: false, result: null, exitCode: null })
        expect(bigint.error).toMatch(/^its input cannot be written as JSON: /)
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("outcomes", () => {
    it.live("a non-zero exit names the code and the last stderr line", () =>
      Effect.gen(function* () {
        const outcome = yield* run(spec({ runs: { using: "node", main: "jobs/fail.mjs" } }))
        expect(outcome).toMatchObject({ ok: false, result: null, error: "exited with code 3: the disk is full", exitCode: 3, signal: null })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("an uncaught error is named by its own line, and its stack by the TypeScript file and line", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/throws.ts" } })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: false, error: "exited with code 1: Error: the config is missing", exitCode: 1 })
        expect(readFileSync(s.stderrFile, "utf8")).toContain(`${join(bagDir, "jobs", "throws.ts")}:3:`)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a last line that is not JSON, a last line too long to keep (but not one nearly as long), and no output at all", () =>
      Effect.gen(function* () {
        const notJson = yield* run(spec({ runs: { using: "node", main: "jobs/not-json.mjs" } }))
        expect(notJson).toMatchObject({ ok: false, result: null, error: "its last line of output is not JSON: done!", exitCode: 0 })
        const huge = yield* run(spec({ runs: { using: "node", main: "jobs/huge-line.mjs" } }))
        expect(huge).toMatchObject({ ok: false, error: "its last line of output is longer than 64 KiB" })
        const script = "process.stdout.write('log\\n'.repeat(50000) + JSON.stringify('y'.repeat(65000)) + '\\n')"
        const nearlyAsLong = yield* run(spec({ runs: { using: "process", command: [process.execPath, "-e", script] } }))
        expect(nearlyAsLong).toMatchObject({ ok: true, result: "y".repeat(65_000) })
        // Never reads its input: a megabyte of it meets a closed pipe (EPIPE), which is no error.
        const silent = yield* run(spec({ runs: { using: "node", main: "jobs/silent.mjs" }, input: "z".repeat(1 << 20) }))
        expect(silent).toMatchObject({ ok: true, result: null, error: null, exitCode: 0 })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a result nested too deep to be taken fails the attempt saying so (it left the run running forever)", () =>
      Effect.gen(function* () {
        const script = "process.stdout.write('['.repeat(30000) + ']'.repeat(30000) + '\\n')"
        const deep = yield* run(spec({ runs: { using: "process", command: [process.execPath, "-e", script] } }))
        expect(deep).toMatchObject({
          ok: false,
          result: null,
          error: "its result nests more than 512 levels deep (arrays and objects within each other); at most 512 are taken",
          exitCode: 0
        })
        const justSo = "process.stdout.write('['.repeat(512) + ']'.repeat(512) + '\\n')"
        expect(yield* run(spec({ runs: { using: "process", command: [process.execPath, "-e", justSo] } }))).toMatchObject({ ok: true })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("5 MB of output: the result is its last line, and the file holds every byte", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/large.mjs" } })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: true, result: { lines: 50_000 } })
        expect(statSync(s.stdoutFile).size).toBe(50_000 * 100 + JSON.stringify({ lines: 50_000 }).length + 1)
        // Readable by svc alone, whatever the umask (they were 0644 on the owner).
        expect([statSync(s.stdoutFile).mode & 0o777, statSync(s.stderrFile).mode & 0o777]).toEqual([0o600, 0o600])
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("the output limit (SVC_WORKFLOW_OUTPUT_LIMIT)", () => {
    const limited = layerWith({ typeScriptCacheDir: join(scratch, "ts-cache"), stopGraceMs: 300, outputLimit: 64 * 1024 })
    const notice = (atLineStart: boolean) => `${atLineStart ? "" : "\n"}[svc: output past the first 64 KiB of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n`

    it.live("each stream keeps its first 64 KiB and says the rest was not kept; the job runs on to its result", () =>
      Effect.gen(function* () {
        // 5 MB on stdout, 1 MB on stderr, in writes that split "é" and lines anywhere; the result last.
        const script = [
          "const line = 'a' + 'é'.repeat(33) + '\\n'",
          "for (let i = 0; i < 75000; i++) process.stdout.write(line)",
          "process.stderr.write('w'.repeat(1 << 20))",
          "process.stdout.write(JSON.stringify({ done: true }) + '\\n')"
        ].join(";")
        const s = spec({ runs: { using: "process", command: [process.execPath, "-e", script] } })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: true, result: { done: true } })
        const stdout = readFileSync(s.stdoutFile, "utf8")
        // 65,536 bytes hold 963 whole lines of 68 bytes and 52 of the next: "a", 25 "é" and half of one, not kept.
        expect(stdout).toBe(`${("a" + "é".repeat(33) + "\n").repeat(963)}a${"é".repeat(25)}${notice(false)}`)
        expect(readFileSync(s.stderrFile, "utf8")).toBe(`${"w".repeat(64 * 1024)}${notice(false)}`)
      }).pipe(Effect.provide(limited))
    )

    it.live("counts what the attempt's earlier children wrote: a preflight's output and the job's share the limit, and one notice ends it", () =>
      Effect.gen(function* () {
        const s = spec({
          runs: { using: "process", command: [process.execPath, "-e", "process.stdout.write('j\\n'.repeat(40000)); console.log('{}')"] },
          preflight: { command: [process.execPath, "-e", "process.stdout.write('p\\n'.repeat(20000))"], timeoutMs: 10_000, hint: undefined }
        })
        expect(yield* run(s)).toMatchObject({ ok: true, result: {} })
        // 40,000 bytes of the preflight, then 25,536 of the job's: a whole line's end.
        expect(readFileSync(s.stdoutFile, "utf8")).toBe(`${"p\n".repeat(20000)}${"j\n".repeat(12768)}${notice(true)}`)
        // Run again into the same files (a second attempt's children would not, but a check after it does): nothing more, no second notice.
        const again = yield* run({ ...s, preflight: undefined })
        expect(again).toMatchObject({ ok: true })
        expect(statSync(s.stdoutFile).size).toBe(40_000 + 25_536 + notice(true).length)
      }).pipe(Effect.provide(limited))
    )

    it.live("an owner's limit given with the work holds when it is the smaller of the two, and not when it is the larger", () =>
      Effect.gen(function* () {
        const script = "process.stdout.write('z'.repeat(200000) + '\\n'); console.log('{}')"
        const smaller = spec({ runs: { using: "process", command: [process.execPath, "-e", script] }, outputLimit: 2048 })
        expect(yield* run(smaller)).toMatchObject({ ok: true, result: {} })
        expect(readFileSync(smaller.stdoutFile, "utf8")).toBe(`${"z".repeat(2048)}\n[svc: output past the first 2 KiB of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n`)
        const larger = spec({ runs: { using: "process", command: [process.execPath, "-e", script] }, outputLimit: 1024 * 1024 })
        yield* run(larger)
        expect(readFileSync(larger.stdoutFile, "utf8")).toBe(`${"z".repeat(64 * 1024)}${notice(false)}`)
      }).pipe(Effect.provide(limited))
    )

    it.live("output under the limit is kept whole, and output of exactly the limit has no notice", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "process", command: [process.execPath, "-e", "process.stdout.write('x'.repeat(65535) + '\\n')"] } })
        yield* run(s)
        expect(readFileSync(s.stdoutFile, "utf8")).toBe(`${"x".repeat(65535)}\n`)
      }).pipe(Effect.provide(limited))
    )
  })

  describe("stopping", () => {
    it.live("a timeout stops the child and names the duration", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/sleep.mjs" }, timeoutMs: 300 })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: false, result: null, error: "timed out after 300ms", exitCode: null, signal: "SIGTERM" })
        expect(outcome.durationMs).toBeLessThan(5_000)
        expect(alive(yield* pidOf(s))).toBe(false)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("interrupting the run stops the child, and completes only once it is gone", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/sleep.mjs" } })
        const fiber = yield* Effect.fork(run(s))
        const pid = yield* pidOf(s)
        expect(alive(pid)).toBe(true)
        yield* Fiber.interrupt(fiber)
        expect(alive(pid)).toBe(false)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("notes each child while it runs (for a runtime started after this one is killed), and removes the note when it ends", () =>
      Effect.gen(function* () {
        const childrenDir = join(scratch, "children")
        const s = spec({ runs: { using: "node", main: "jobs/sleep.mjs" } })
        const fiber = yield* Effect.fork(run(s).pipe(Effect.provide(layerWith({ typeScriptCacheDir: join(scratch, "ts-cache"), stopGraceMs: 300, childrenDir }))))
        const pid = yield* pidOf(s)
        expect(JSON.parse(readFileSync(join(childrenDir, String(pid)), "utf8"))).toMatchObject({ pid, name: expect.any(String) })
        yield* Fiber.interrupt(fiber)
        expect(readdirSync(childrenDir)).toEqual([])
      })
    )

    it.live("a child that ignores SIGTERM gets SIGKILL after the grace", () =>
      Effect.gen(function* () {
        const s = spec({ runs: { using: "node", main: "jobs/stubborn.mjs" }, timeoutMs: 300 })
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: false, error: "timed out after 300ms", signal: "SIGKILL" })
        expect(readFileSync(s.stderrFile, "utf8")).toContain("ignoring SIGTERM")
        expect(alive(yield* pidOf(s))).toBe(false)
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("checks: preflight before, validate after", () => {
    const node = (script: string): ExecutionSpec["runs"] => ({ using: "process", command: [process.execPath, "-e", script] })
    /** A job that leaves a mark where it is told, then answers. */
    const marking = (mark: string) => node(`require("fs").writeFileSync(${JSON.stringify(mark)}, "ran"); console.log(JSON.stringify({ done: true }))`)

    it.live("a preflight that passes lets the job run; one that fails keeps it from starting, with the reason and the hint", () =>
      Effect.gen(function* () {
        const passed = yield* run(spec({ runs: marking(join(scratch, "pf-ok")), preflight: { command: ["true"], timeoutMs: 10_000, hint: undefined } }))
        expect(passed).toMatchObject({ ok: true, result: { done: true } })
        expect(existsSync(join(scratch, "pf-ok"))).toBe(true)

        const s = spec({
          runs: marking(join(scratch, "pf-no")),
          preflight: { command: [process.execPath, "-e", "console.log('probing'); console.error('config.json is missing'); process.exit(3)"], timeoutMs: 10_000, hint: "create config.json first" }
        })
        const refused = yield* run(s)
        expect(refused).toMatchObject({
          ok: false,
          result: null,
          error: "its preflight failed, so it did not start: exited with code 3: config.json is missing (create config.json first)",
          exitCode: null
        })
        expect(existsSync(join(scratch, "pf-no"))).toBe(false)
        // Its output is the attempt's, as the job's would be.
        expect(readFileSync(s.stdoutFile, "utf8")).toBe("probing\n")
        expect(readFileSync(s.stderrFile, "utf8")).toBe("config.json is missing\n")
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a preflight given as a string runs through sh; one that cannot start or runs out of time is said so", () =>
      Effect.gen(function* () {
        const viaShell = yield* run(spec({ runs: marking(join(scratch, "pf-sh")), preflight: { command: "test -d / && exit 4", timeoutMs: 10_000, hint: undefined } }))
        expect(viaShell).toMatchObject({ ok: false, error: 'its preflight failed, so it did not start: exited with code 4' })
        const missing = yield* run(spec({ runs: marking(join(scratch, "pf-none")), preflight: { command: ["no-such-program-svc"], timeoutMs: 10_000, hint: undefined } }))
        expect(missing).toMatchObject({ ok: false, error: "its preflight failed, so it did not start: cannot start no-such-program-svc: not found" })
        const slow = yield* run(spec({ runs: marking(join(scratch, "pf-slow")), preflight: { command: ["sleep", "5"], timeoutMs: 200, hint: undefined } }))
        expect(slow).toMatchObject({ ok: false, error: "its preflight failed, so it did not start: timed out after 200ms" })
        expect([existsSync(join(scratch, "pf-sh")), existsSync(join(scratch, "pf-none")), existsSync(join(scratch, "pf-slow"))]).toEqual([false, false, false])
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("validate checks a job that succeeded: the files it names, then its command; a failed job is not checked", () =>
      Effect.gen(function* () {
        const ok = { ok: true, result: { done: true } }
        const present = yield* run(spec({ runs: marking(join(scratch, "v-1")), validate: { filesExist: ["jobs/echo.mjs"], command: ["true"], timeoutMs: 10_000 } }))
        expect(present).toMatchObject(ok)
        const absent = yield* run(spec({ runs: marking(join(scratch, "v-2")), validate: { filesExist: ["jobs/echo.mjs", "out/report.html"], command: undefined, timeoutMs: 10_000 } }))
        expect(absent).toMatchObject({ ok: false, result: null, error: "its validate check failed: out/report.html does not exist", exitCode: 0 })
        const command = yield* run(
          spec({ runs: marking(join(scratch, "v-3")), validate: { filesExist: [], command: [process.execPath, "-e", "console.error('2 rows, expected 3'); process.exit(1)"], timeoutMs: 10_000 } })
        )
        expect(command).toMatchObject({ ok: false, error: "its validate command failed: exited with code 1: 2 rows, expected 3", exitCode: 0 })
        const failing = yield* run(spec({ runs: node("process.exit(2)"), validate: { filesExist: ["nowhere"], command: ["false"], timeoutMs: 10_000 } }))
        expect(failing).toMatchObject({ ok: false, error: "exited with code 2", exitCode: 2 })
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a check through sh that times out, or a job that is stopped, takes what it started with it (its process group)", () =>
      Effect.gen(function* () {
        const pidFile = (name: string) => join(scratch, `${name}.pid`)
        const background = (name: string) => `sleep 30 & echo $! > ${pidFile(name)}; wait`
        const check = yield* run(spec({ runs: marking(join(scratch, "pg-check")), preflight: { command: background("pg-check"), timeoutMs: 500, hint: undefined } }))
        expect(check).toMatchObject({ ok: false, error: "its preflight failed, so it did not start: timed out after 500ms" })
        const job = yield* run(spec({ runs: { using: "process", command: ["sh", "-c", background("pg-job")] }, timeoutMs: 500 }))
        expect(job).toMatchObject({ ok: false, error: "timed out after 500ms" })
        // The sleeps the shells started were stopped with them (they outlived a stop before). An
        // orphan killed is a zombie until this machine's init reaps it: dead all the same.
        const running = (pid: number) => processStat(pid) !== null
        for (const name of ["pg-check", "pg-job"]) {
          const pid = Number(readFileSync(pidFile(name), "utf8"))
          expect(pid).toBeGreaterThan(0)
          expect(running(pid), `${name}'s sleep (pid ${pid})`).toBe(false)
        }
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a stopped job takes with it what it started that left its process group (setsid), and what that started", () =>
      Effect.gen(function* () {
        const executor = yield* Executor
        const own = join(scratch, "stray-own.pid")
        const inner = join(scratch, "stray-inner.pid")
        // A sleep in a session of its own, and a shell in another that starts a sleep of its own group.
        const script = `setsid sleep 30 & echo $! > ${own}.tmp; mv ${own}.tmp ${own}; setsid sh -c 'sleep 30 & echo $! > ${inner}.tmp; mv ${inner}.tmp ${inner}; wait' & wait`
        const fiber = yield* Effect.fork(executor.run(spec({ runs: { using: "process", command: ["sh", "-c", script] } })))
        for (let i = 0; i < 500 && !(existsSync(own) && existsSync(inner)); i++) yield* Effect.sleep(Duration.millis(20))
        const pids = [own, inner].map((file) => Number(readFileSync(file, "utf8")))
        // Each left the job's group: signalling the group alone left them running (they did before).
        const job = processStat(pids[0]!)!.parent
        expect(processStat(job)!.group).toBe(job)
        for (const pid of pids) expect(processStat(pid)!.group).not.toBe(job)
        yield* Fiber.interrupt(fiber)
        // Killed orphans are zombies until this machine's init reaps them: dead all the same.
        const running = (pid: number) => processStat(pid) !== null
        for (const pid of pids) expect(running(pid), `sleep ${pid}`).toBe(false)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("a job whose output cannot be written (a full disk) runs to its end and fails saying so: it does not block on its output", () =>
      Effect.gen(function* () {
        // /dev/full takes no byte (ENOSPC); the job writes more than a pipe holds.
        const s = spec({ runs: { using: "process", command: [process.execPath, "-e", "process.stdout.write('x'.repeat(1 << 20)); console.log(JSON.stringify({ done: true }))"] }, stdoutFile: "/dev/full", timeoutMs: 20_000 })
        const started = Date.now()
        const outcome = yield* run(s)
        expect(outcome).toMatchObject({ ok: false, result: null, exitCode: 0 })
        expect(outcome.error).toMatch(/^its output could not be written to \/dev\/full: ENOSPC/)
        expect(Date.now() - started).toBeLessThan(15_000)
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("stopping during a preflight stops it, and the job never starts", () =>
      Effect.gen(function* () {
        const executor = yield* Executor
        const s = spec({ runs: marking(join(scratch, "pf-stop")), preflight: { command: ["sleep", "30"], timeoutMs: 60_000, hint: undefined } })
        const fiber = yield* Effect.fork(executor.run(s))
        yield* Effect.sleep(Duration.millis(300))
        const started = Date.now()
        yield* Fiber.interrupt(fiber)
        expect(Date.now() - started).toBeLessThan(5_000)
        expect(existsSync(join(scratch, "pf-stop"))).toBe(false)
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("secrets", () => {
    const secretsDir = join(scratch, "secrets")
    const WithSecrets = layerWith({ typeScriptCacheDir: join(scratch, "ts-cache"), stopGraceMs: 300, secretsDir })
    const printsEnv = (name: string): ExecutionSpec["runs"] => ({ using: "process", command: [process.execPath, "-e", `console.log(JSON.stringify(process.env[${JSON.stringify(name)}] ?? null))`] })

    it.live("a declared secret is in the job's environment, from its file; one not set keeps the job from starting, naming the file", () =>
      Effect.gen(function* () {
        mkdirSync(secretsDir, { recursive: true })
        writeFileSync(join(secretsDir, "API_TOKEN"), "s3cr3t-value\n", { mode: 0o600 })
        const s = spec({ runs: printsEnv("API_TOKEN"), secrets: ["API_TOKEN"] })
        expect(yield* run(s)).toMatchObject({ ok: true, result: "s3cr3t-value" })
        const missing = yield* run(spec({ runs: printsEnv("OTHER"), secrets: ["API_TOKEN", "OTHER"] }))
        expect(missing).toMatchObject({
          ok: false,
          error: `it needs the secret OTHER, which is not set on this machine: write its value to ${join(secretsDir, "OTHER")} (readable by svc alone: chmod 600)`
        })
        // Never in a message: only names and paths are.
        expect(JSON.stringify(missing)).not.toContain("s3cr3t-value")
        // A value no environment variable can hold is refused without being quoted (Node's refusal quoted it).
        writeFileSync(join(secretsDir, "BINARY"), "ab\0cd-SECRETPART", { mode: 0o600 })
        const binary = yield* run(spec({ runs: printsEnv("BINARY"), secrets: ["BINARY"] }))
        expect(binary).toMatchObject({ ok: false, error: `its secret BINARY holds a NUL byte, which an environment variable cannot: rewrite ${join(secretsDir, "BINARY")}` })
        // Nor does Node's own refusal of an environment value reach a message.
        const literal = yield* run(spec({ runs: printsEnv("X"), env: ["X=a\0SECRETPART"] }))
        expect(literal).toMatchObject({ ok: false, error: "cannot start " + process.execPath + ": the value of its environment variable X cannot be passed to a process (a NUL byte?)" })
        expect(JSON.stringify([binary, literal])).not.toContain("SECRETPART")
        // One others can read, or a directory, is refused saying what to do.
        writeFileSync(join(secretsDir, "OPEN"), "v", { mode: 0o644 })
        chmodSync(join(secretsDir, "OPEN"), 0o644)
        expect(yield* run(spec({ runs: printsEnv("OPEN"), secrets: ["OPEN"] }))).toMatchObject({
          ok: false,
          error: `its secret OPEN is readable by other users (${join(secretsDir, "OPEN")} has mode 0644): chmod 600 ${join(secretsDir, "OPEN")}`
        })
        mkdirSync(join(secretsDir, "FOLDER"), { recursive: true })
        expect(yield* run(spec({ runs: printsEnv("FOLDER"), secrets: ["FOLDER"] }))).toMatchObject({
          ok: false,
          error: `its secret FOLDER must be a file holding its value, and ${join(secretsDir, "FOLDER")} is not one`
        })
        const badName = yield* run(spec({ runs: printsEnv("x"), secrets: ["../escape"] }))
        expect(badName).toMatchObject({ ok: false, error: 'its secret name "../escape" is not an environment variable name' })
      }).pipe(Effect.provide(WithSecrets))
    )

    it.live("a machine that keeps no secrets does not start a job that needs one", () =>
      Effect.gen(function* () {
        expect(yield* run(spec({ runs: printsEnv("API_TOKEN"), secrets: ["API_TOKEN"] }))).toMatchObject({
          ok: false,
          error: "it needs the secret API_TOKEN, and this machine keeps no secrets"
        })
      }).pipe(Effect.provide(ExecutorLive))
    )
  })

  describe("environment and working directory", () => {
    it.live("the child sees none of the service's environment but a few names, the run's names and the job's literals", () =>
      Effect.gen(function* () {
        process.env["SVC_TEST_SECRET"] = "do-not-leak"
        const s = spec({ runs: { using: "node", main: "jobs/env.mjs" }, env: ["GREETING=a=b", "SVC_ATTEMPT=overridden", "HOME=/nowhere"] })
        const outcome = yield* run(s).pipe(Effect.ensuring(Effect.sync(() => delete process.env["SVC_TEST_SECRET"])))
        const env = outcome.result as Record<string, string>
        expect(env["SVC_TEST_SECRET"]).toBeUndefined()
        expect(env["PATH"]).toBe(process.env["PATH"])
        expect(env).toMatchObject({ SVC_RUN_ID: s.runId, SVC_ATTEMPT: "overridden", GREETING: "a=b", HOME: "/nowhere" })
        const allowed = new Set(["PATH", "HOME", "TMPDIR", "LANG", "TZ", "SVC_RUN_ID", "SVC_ATTEMPT", "GREETING"])
        // Node itself may add a few of its own (none of the parent's).
        expect(Object.keys(env).filter((k) => !allowed.has(k) && process.env[k] !== undefined)).toEqual([])
      }).pipe(Effect.provide(ExecutorLive))
    )

    it.live("runs in the working directory inside the bag, and refuses one outside it or missing", () =>
      Effect.gen(function* () {
        const inside = yield* run(spec({ runs: { using: "node", main: "jobs/cwd.mjs" }, workingDirectory: "data/sub" }))
        expect(inside).toMatchObject({ ok: true, result: { cwd: join(bagDir, "data", "sub") } })
        const outside = yield* run(spec({ runs: { using: "node", main: "jobs/cwd.mjs" }, workingDirectory: "../.." }))
        expect(outside).toMatchObject({ ok: false, error: "its working directory ../.. is outside its bag" })
        const missing = yield* run(spec({ runs: { using: "node", main: "jobs/cwd.mjs" }, workingDirectory: "nowhere" }))
        expect(missing).toMatchObject({ ok: false, error: "its working directory nowhere does not exist in its bag" })
        const file = yield* run(spec({ runs: { using: "node", main: "jobs/cwd.mjs" }, workingDirectory: "data/answer.yaml" }))
        expect(file).toMatchObject({ ok: false, error: "its working directory data/answer.yaml is not a directory" })
      }).pipe(Effect.provide(ExecutorLive))
    )
  })
})


describe("a timeout longer than a timer can wait", () => {
  it.effect("still ends the wait: 30 days is slept in steps (Effect's clock never fired past 24.8 days)", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(sleepFor(30 * 24 * 3600 * 1000))
      yield* TestClock.adjust(Duration.days(29))
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.days(1))
      yield* Fiber.join(fiber)
      // Each step is one a timer can take (the live clock drops a longer one: it never fires).
      const steps: Array<number> = []
      yield* sleepFor(2 ** 31 + 5).pipe(
        Effect.withClock({ ...Clock.make(), sleep: (d) => Effect.sync(() => void steps.push(Duration.toMillis(d))) } as Clock.Clock)
      )
      expect(steps).toEqual([2 ** 31 - 1, 6])
    })
  )
})
