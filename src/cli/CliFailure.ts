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
}> {}

export const refused = (message: string) => new CliFailure({ exitCode: 1, message })
export const usage = (message: string) => new CliFailure({ exitCode: 2, message })
/** Exit 2: the runtime or owner asked did not answer at all; a caller may try again. */
export const unreachable = (message: string) => new CliFailure({ exitCode: 2, message, unreachable: true })
/** Exit 2, but not the words given: the environment svc runs in cannot serve the command. */
export const setupProblem = (message: string) => new CliFailure({ exitCode: 2, message, setup: true })
export const exitQuietly = (exitCode: 1 | 2 | 129 | 130 | 143) => new CliFailure({ exitCode, message: "", silent: true })
