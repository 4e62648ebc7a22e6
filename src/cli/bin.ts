#!/usr/bin/env node
/**
 * The `svc` binary. Runs the command tree and turns its outcome into the exit codes of the CLI
 * contract: 0 success, 1 invalid or refused, 2 usage error or runtime not reachable.
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { withoutSecrets } from "../domain/workers/Secrets.js"
import { argumentsProblem, withGlobalOptionsFirst } from "./arguments.js"
import { CliFailure, failureJson } from "./CliFailure.js"
import { mapText, plainText, withoutColour } from "./output.js"
import { cli, MainLayer, svc } from "./main.js"
import { commandOf, commandTree, flagGiven, parseProblem, takesValue, tidyHelp, withShortValuesApart, withStdinArgumentLast, wordsProblem } from "./usageProblems.js"

/**
 * `command`: the path of the command that ran (`svc runs list`): a usage problem it finds is said
 * as the parser's are, naming the command and where its help is (README, "usage error").
 */
const exitCodeOf = (exit: Exit.Exit<unknown, unknown>, command: string, json: boolean): number => {
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof CliFailure) {
      const said = withoutSecrets(error.message)
      if (error.silent !== true) {
        const isUsage = error.exitCode === 2 && error.unreachable !== true && error.setup !== true && command !== "svc"
        process.stderr.write(isUsage ? `${command}: ${said} (${command} --help)\n` : `svc: ${said}\n`)
        // A failure that printed no document of its own: one for a script reading stdout.
        if (json) printFailure({ ...error, message: said })
      }
      return error.exitCode
    }
    // A usage problem found once the command runs (parsing found none): @effect/cli printed it.
    if (ValidationError.isValidationError(error)) return ValidationError.isHelpRequested(error) ? 0 : 2
    const said = withoutSecrets(error instanceof Error ? error.message : String(error))
    process.stderr.write(`svc: ${said}\n`)
    if (json) printFailure({ exitCode: 1, message: said })
    return 1
  }
  if (Cause.isInterruptedOnly(exit.cause)) return 130
  process.stderr.write(`svc: internal error: ${withoutSecrets(Cause.pretty(exit.cause))}\n`)
  if (json) printFailure({ exitCode: 70, message: "internal error (its cause is on stderr)" })
  return 70
}

/**
 * With `--json`, a failure that printed nothing on stdout prints one JSON document there
 * (CliFailure.ts, `failureJson`); one that printed its own (a run that failed, a check's problems,
 * lines of a stream) adds none, so stdout stays what the command makes of it.
 */
const printFailure = (f: Parameters<typeof failureJson>[0]) => {
  if (!stdoutUsed) process.stdout.write(`${JSON.stringify(failureJson(f), null, 2)}\n`)
}
let stdoutUsed = false
const writeOut = process.stdout.write.bind(process.stdout)
process.stdout.write = ((...args: Parameters<typeof process.stdout.write>) => {
  stdoutUsed = true
  return writeOut(...args)
}) as typeof process.stdout.write

const tree = commandTree(svc.descriptor)

/**
 * The words checked against the command tree (wordsProblem), then parsed as @effect/cli will
 * parse them, before anything runs: a usage problem is said here in svc's words
 * (usageProblems.ts), and @effect/cli, which would print its own, is not started. A help request
 * goes on to @effect/cli, its text tidied (`help`: the command's path).
 */
const check = (args: ReadonlyArray<string>): Effect.Effect<{ readonly problem?: string; readonly help?: string }> => {
  const problem = argumentsProblem(args, (option) => takesValue(tree, args, option)) ?? wordsProblem(tree, args)
  if (problem !== undefined) return Effect.succeed({ problem })
  return Descriptor.parse(svc.descriptor, ["svc", ...args], CliConfig.defaultConfig).pipe(
    Effect.map((directive) => {
      const { command } = commandOf(tree, args)
      if (directive._tag === "BuiltIn") return directive.option._tag === "ShowHelp" ? { help: command.path } : {}
      if (directive.leftover.length > 0) return { problem: parseProblem(tree, args, `Received unknown argument: '${directive.leftover[0]}'`) }
      // A group named without one of its commands (`svc workers`) answers with its help.
      return command.commands.length > 0 ? { help: command.path } : {}
    }),
    Effect.catchAll((error) =>
      Effect.succeed(ValidationError.isHelpRequested(error) ? {} : { problem: parseProblem(tree, args, String(withoutColour(HelpDoc.toAnsiText(error.error)))) })
    ),
    Effect.provide(NodeContext.layer)
  )
}

const main = async (args: ReadonlyArray<string>): Promise<number> => {
  const { problem, help } = await Effect.runPromise(check(args))
  const json = flagGiven(tree, args, "--json")
  if (problem !== undefined) {
    // A usage problem quotes the words given: a token pasted in the wrong place is not repeated.
    const said = withoutSecrets(problem)
    const command = commandOf(tree, args).command.path
    process.stderr.write(said.startsWith("svc") ? `${said}\n` : command === "svc" ? `svc: ${said}\n` : `${command}: ${said} (${command} --help)\n`)
    if (json) printFailure({ exitCode: 2, message: said })
    return 2
  }
  const program = cli([...process.argv.slice(0, 2), ...args]).pipe(Effect.provide(MainLayer))
  // Colour only for a terminal, and not when NO_COLOR is set (no-color.org); help is plain text,
  // tidied (usageProblems.ts, tidyHelp).
  const plain = !process.stdout.isTTY || (process.env["NO_COLOR"] ?? "") !== ""
  const shown = help !== undefined ? mapText(program, (text) => (typeof text === "string" ? tidyHelp(String(withoutColour(text)), help) : text)) : plain ? plainText(program) : program
  return exitCodeOf(await Effect.runPromiseExit(shown), commandOf(tree, args).command.path, json)
}

// A reader that went away (`svc journal tail --follow | head`): stop quietly, as a pipe's writer
// does, instead of an unhandled EPIPE and its stack trace.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(0)
  throw e
})

main(withStdinArgumentLast(tree, withShortValuesApart(tree, withGlobalOptionsFirst(process.argv.slice(2))))).then((code) => {
  process.exitCode = code
})
