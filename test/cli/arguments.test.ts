import { describe, expect, it } from "vitest"
import { argumentsProblem, withGlobalOptionsFirst } from "../../src/cli/arguments.js"

describe("arguments no command takes", () => {
  it("takes arguments without an empty one", () => {
    expect(argumentsProblem(["workers", "invite", "--scope", "hasher:checksum@1.0.0"])).toBeUndefined()
    expect(argumentsProblem([])).toBeUndefined()
  })

  it("refuses an option given an empty value (an unset variable), naming the option", () => {
    expect(argumentsProblem(["workers", "invite", "--scope", ""])).toBe("--scope was given an empty value (an unset shell variable?): give it one, or leave --scope out")
  })

  it("refuses an empty argument that follows no option, saying after what", () => {
    expect(argumentsProblem(["workers", "join", ""])).toBe("an empty argument was given after join (an unset shell variable?): no svc command takes one")
    expect(argumentsProblem([""])).toBe("an empty argument was given (an unset shell variable?): no svc command takes one")
    // After a flag, which takes no value: not the flag's (script audit: `svc new --json ""` blamed --json).
    expect(argumentsProblem(["new", "--json", ""], (option) => option !== "--json")).toBe("an empty argument was given after --json (an unset shell variable?): no svc command takes one")
  })
})

describe("svc's own options", () => {
  it("are taken after a command too, moved to where the parser reads them; words after -- are left alone", () => {
    expect(withGlobalOptionsFirst(["serve", "--listen", "127.0.0.1:7443", "--log-level", "debug"])).toEqual(["--log-level", "debug", "serve", "--listen", "127.0.0.1:7443"])
    expect(withGlobalOptionsFirst(["journal", "tail", "--log-level=error", "-n", "3"])).toEqual(["--log-level=error", "journal", "tail", "-n", "3"])
    expect(withGlobalOptionsFirst(["--log-level", "info", "serve"])).toEqual(["--log-level", "info", "serve"])
    expect(withGlobalOptionsFirst(["run", "a:b@1", "--", "--log-level", "x"])).toEqual(["run", "a:b@1", "--", "--log-level", "x"])
    // Its value missing: left for the parser to say so.
    expect(withGlobalOptionsFirst(["serve", "--log-level"])).toEqual(["serve", "--log-level"])
  })
})

describe("--log-level", () => {
  it("takes a known level, and says which it takes otherwise (the parser said 'Invalid subcommand')", () => {
    expect(argumentsProblem(["--log-level", "debug", "serve"])).toBeUndefined()
    expect(argumentsProblem(["--log-level=error", "serve"])).toBeUndefined()
    expect(argumentsProblem(["--log-level", "nope", "serve"])).toBe('--log-level takes one of all, trace, debug, info, warning, error, fatal, none, not "nope"')
    expect(argumentsProblem(["serve", "--log-level"])).toBe("--log-level takes one of all, trace, debug, info, warning, error, fatal, none")
    expect(argumentsProblem(["run", "a:b@1", "--", "--log-level", "nope"])).toBeUndefined()
  })
})
