/**
 * How a command ends when it does not succeed (design.md, CLI contract): exit 1 when the thing
 * checked is invalid or the request was refused, 2 for a usage error or an unreachable
 * runtime (128 + the signal's number when a signal stopped a wait: 130 Ctrl-C, 143 SIGTERM, 129
 * SIGHUP, as a shell reports a command a signal ended). The
 * message is one sentence for stderr; it never carries a secret.
 */
import * as Data from "effect/Data"

export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly exitCode: 1 | 2 | 129 | 130 | 143
  readonly message: string
  /** Already printed (e.g. a check's problems): exit with the code, print nothing more. */
  readonly silent?: boolean
  /** The runtime did not answer at all (not running, or the connection failed): a caller may try again. */
  readonly unreachable?: boolean
  /** Exit 2 for what is around the command, not its words (SVC_HOME, a socket path): said without the command's usage. */
  readonly setup?: boolean
  /**
   * What was refused, for a script (`--json` prints it: bin.ts, `failureJson`): the runtime's own
   * code when it refused (`unknown-run`, `run-finished`, `worker-revoked`, ...), or one of the
   * command's (`not-found`). Absent: told by the exit code alone.
   */
  readonly code?: string
}> {}

export const refused = (message: string, code?: string) => new CliFailure({ exitCode: 1, message, ...(code === undefined ? {} : { code }) })
export const usage = (message: string) => new CliFailure({ exitCode: 2, message })
/** Exit 2: the runtime or owner asked did not answer at all; a caller may try again. */
export const unreachable = (message: string) => new CliFailure({ exitCode: 2, message, unreachable: true })
/** Exit 2, but not the words given: the environment svc runs in cannot serve the command. */
export const setupProblem = (message: string) => new CliFailure({ exitCode: 2, message, setup: true })
export const exitQuietly = (exitCode: 1 | 2 | 129 | 130 | 143) => new CliFailure({ exitCode, message: "", silent: true })

/**
 * What a command given `--json` prints on stdout when it fails, beside its sentence on stderr: one
 * JSON document, so that a script reading stdout always gets one (docs/operations.md, "Scripts").
 * `code` is the refusal's own when there is one, else what kind of failure it is.
 */
export const failureJson = (f: { readonly exitCode: number; readonly message: string; readonly code?: string; readonly unreachable?: boolean; readonly setup?: boolean }) => ({
  error: {
    code:
      f.code ??
      (f.exitCode === 1
        ? "refused"
        : f.exitCode === 2
          ? f.unreachable === true
            ? "unreachable"
            : f.setup === true
              ? "setup"
              : "usage"
          : f.exitCode === 70
            ? "internal"
            : "interrupted"),
    message: f.message,
    exitCode: f.exitCode
  }
})
