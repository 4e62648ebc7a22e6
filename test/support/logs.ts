/** What code under test logs, as "LEVEL message" lines, instead of the console. */
import * as Logger from "effect/Logger"

/** A logger layer that appends each entry to `logs`. */
export const capturingLogs = (logs: Array<string>) =>
  Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => void logs.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)))
