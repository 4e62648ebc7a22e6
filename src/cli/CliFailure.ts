/**
 * How a command ends when it does not succeed (design.md, CLI contract): exit 1 when the thing
 * checked is invalid or the request was refused, 2 for a usage error or an unreachable
 * runtime (130 when Ctrl-C stopped a wait, as a shell reports an interrupted command). The
 * message is one sentence for stderr; it never carries a secret.
 */
import * as Data from "effect/Data"

export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly exitCode: 1 | 2 | 130
  readonly message: string
  /** Already printed (e.g. a check's problems): exit with the code, print nothing more. */
  readonly silent?: boolean
  /** The runtime did not answer at all (not running, or the connection failed): a caller may try again. */
  readonly unreachable?: boolean
}> {}

export const refused = (message: string) => new CliFailure({ exitCode: 1, message })
export const usage = (message: string) => new CliFailure({ exitCode: 2, message })
export const exitQuietly = (exitCode: 1 | 2 | 130) => new CliFailure({ exitCode, message: "", silent: true })
