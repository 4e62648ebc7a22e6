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
  /**
   * Secret names the job needs (`runs.secrets`, `requires.secrets`): each is set in its
   * environment from this machine's secret store, and a missing one keeps it from starting.
   */
  readonly secrets?: ReadonlyArray<string> | undefined
  readonly preflight?: Preflight | undefined
  readonly validate?: Validate | undefined
  /** The owner's output limit, when it is not this machine's: each stream keeps at most the smaller of the two. */
  readonly outputLimit?: number | undefined
  /** Files the child's stdout and stderr are appended to as they arrive (created if missing); a check's output too. */
  readonly stdoutFile: string
  readonly stderrFile: string
}

/** A check's command: a list of program and arguments (no shell), or a string run with `/bin/sh -c`. */
export type CheckCommand = ReadonlyArray<string> | string

/** The job's `preflight`: run before it, in its working directory; a failure means it does not start. */
export interface Preflight {
  readonly command: CheckCommand
  readonly timeoutMs: number
  /** How a person fixes a failure, said with it. */
  readonly hint: string | undefined
}

/** The job's `validate`: checks at its finish, once it succeeded; a failure fails the attempt. */
export interface Validate {
  /** Paths relative to the bag that must exist. */
  readonly filesExist: ReadonlyArray<string>
  readonly command: CheckCommand | undefined
  readonly timeoutMs: number
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
