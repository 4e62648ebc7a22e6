import { describe, expect, it } from "vitest"
import { argumentsProblem } from "../../src/cli/arguments.js"

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
  })
})
