#!/usr/bin/env node
/**
 * The `svc` binary. Runs the command tree and turns its outcome into the exit codes of the CLI
 * contract: 0 success, 1 invalid or refused, 2 usage error or runtime not reachable.
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { argumentsProblem } from "./arguments.js"
import { CliFailure } from "./CliFailure.js"
import { plainText } from "./output.js"
import { cli, MainLayer } from "./main.js"

const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof CliFailure) {
      if (error.silent !== true) process.stderr.write(`svc: ${error.message}\n`)
      return error.exitCode
    }
    // @effect/cli has already printed the usage problem and the help that fits it.
    if (ValidationError.isValidationError(error)) return ValidationError.isHelpRequested(error) ? 0 : 2
    process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
  if (Cause.isInterruptedOnly(exit.cause)) return 130
  process.stderr.write(`svc: internal error: ${Cause.pretty(exit.cause)}\n`)
  return 70
}

const problem = argumentsProblem(process.argv.slice(2))
if (problem !== undefined) {
  process.stderr.write(`svc: ${problem}\n`)
  process.exitCode = 2
} else {
  const program = cli(process.argv).pipe(Effect.provide(MainLayer))
  // Colour only for a terminal, and not when NO_COLOR is set (no-color.org).
  const plain = !process.stdout.isTTY || (process.env["NO_COLOR"] ?? "") !== ""
  Effect.runPromiseExit(plain ? plainText(program) : program).then((exit) => {
    process.exitCode = exitCodeOf(exit)
  })
}
