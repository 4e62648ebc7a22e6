/**
 * Port: runs one job attempt as a child process to its end. The same executor serves the owner
 * and a worker, so a job behaves alike wherever placement sends it (docs/executors.md).
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

export interface ExecutionSpec {
  /** For naming only (logs, env SVC_ATTEMPT). */
  readonly attempt: string
  readonly runId: string
  /** Absolute directory of the installed bag (the job's files are relative to it). */
  readonly bagDir: string
  readonly runs:
    | { readonly using: "node"; readonly main: string }
    | { readonly using: "process"; readonly command: ReadonlyArray<string> }
  /** `KEY=VALUE` literals from the job's runs.env. */
  readonly env: ReadonlyArray<string>
  /** Relative to bagDir (runs.working-directory); undefined: bagDir itself. */
  readonly workingDirectory: string | undefined
  readonly input: unknown
  /** The job's timeout; null: none. */
  readonly timeoutMs: number | null
  /** Files the child's stdout and stderr are appended to as they arrive (created if missing). */
  readonly stdoutFile: string
  readonly stderrFile: string
}

export interface ExecutionOutcome {
  readonly ok: boolean
  /** The parsed result when ok, else null. */
  readonly result: unknown
  /** One clear sentence when not ok. */
  readonly error: string | null
  readonly exitCode: number | null
  readonly signal: string | null
  readonly durationMs: number
}

export interface ExecutorService {
  /**
   * Runs the job to its end. Never fails: every problem is an outcome with ok false.
   * Interrupting the effect stops the child (SIGTERM, then SIGKILL after a grace of 5 s) and
   * completes only once the child has exited.
   */
  readonly run: (spec: ExecutionSpec) => Effect.Effect<ExecutionOutcome>
}

export class Executor extends Context.Tag("svc/Executor")<Executor, ExecutorService>() {}
