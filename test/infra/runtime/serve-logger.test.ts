/** svc serve's log lines: the runtime's prefix, the time, the level, the message; a cause after it. */
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { serveLogLine } from "../../../src/infra/runtime/ServeLogger.js"

const at = new Date("2026-11-24T20:38:53.684Z")

describe("svc serve's log lines", () => {
  it("say the time, the level and the message, as the runtime's own lines begin", () => {
    expect(serveLogLine({ logLevel: LogLevel.Warning, message: ["the owner at https://owner cannot be reached: connect ECONNREFUSED"], cause: Cause.empty, date: at })).toBe(
      "svc serve: 2026-11-24T20:38:53.684Z WARN the owner at https://owner cannot be reached: connect ECONNREFUSED"
    )
    expect(serveLogLine({ logLevel: LogLevel.Info, message: ["linked", "again"], cause: Cause.empty, date: at })).toBe("svc serve: 2026-11-24T20:38:53.684Z INFO linked again")
  })

  it.effect("put a logged cause on the lines after the message, and take what Effect's log functions give", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const capture = Logger.make((entry) => void lines.push(serveLogLine({ ...entry, date: at })))
      yield* Effect.logError("the run scheduler failed a round", Cause.fail(new Error("disk full"))).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
      expect(lines).toHaveLength(1)
      const [first, ...rest] = lines[0]!.split("\n")
      expect(first).toBe("svc serve: 2026-11-24T20:38:53.684Z ERROR the run scheduler failed a round")
      expect(rest.join("\n")).toContain("Error: disk full")
    })
  )

  it("cut a secret a message or its cause quotes (an operator's mistyped credential in a refusal, at DEBUG), as every CLI message is", () => {
    const credential = `svc_wk_${"A1b2C3".repeat(6)}abcdef`
    const line = serveLogLine({ logLevel: LogLevel.Debug, message: [`no worker "x${credential}" is linked to this owner`], cause: Cause.fail(new Error(`Refusal: ${credential}`)), date: at })
    expect(line).not.toContain(credential.slice(7))
    expect(line.split("\n")[0]).toBe('svc serve: 2026-11-24T20:38:53.684Z DEBUG no worker "xsvc_wk_…" is linked to this owner')
    expect(line).toContain("Refusal: svc_wk_…")
  })
})
