/**
 * How `svc serve` writes what its parts log (a link losing its owner, a refused report, a
 * failed checkpoint): one line each, in the form of the runtime's own lines, with the time,
 * since a daemon's log is read after the fact. Warnings and errors go to stderr, the rest to
 * stdout; a cause follows on the lines after its message. Nothing logged should carry a secret
 * (docs/protocol.md, "Secrets never leak"); a line that would (a cause's message quoting what an
 * operator mistyped, Effect's own DEBUG lines) has it cut here, as every CLI message has.
 */
import * as Cause from "effect/Cause"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { withoutSecrets } from "../../domain/workers/Secrets.js"

const textOf = (message: unknown): string => (Array.isArray(message) ? message.map(textOf).join(" ") : typeof message === "string" ? message : String(message))

/** The line for one log entry: `svc serve: 2026-11-24T20:38:53.684Z WARN the owner at ...`. */
export const serveLogLine = (entry: { readonly logLevel: LogLevel.LogLevel; readonly message: unknown; readonly cause: Cause.Cause<unknown>; readonly date: Date }): string =>
  withoutSecrets(`svc serve: ${entry.date.toISOString()} ${entry.logLevel.label} ${textOf(entry.message)}${Cause.isEmpty(entry.cause) ? "" : `\n${Cause.pretty(entry.cause)}`}`)

export const serveLogger = Logger.make((entry) => {
  const line = serveLogLine(entry)
  if (LogLevel.greaterThanEqual(entry.logLevel, LogLevel.Warning)) console.error(line)
  else console.log(line)
})

/** The runtime's logger in place of Effect's default one. */
export const layer = Logger.replace(Logger.defaultLogger, serveLogger)
