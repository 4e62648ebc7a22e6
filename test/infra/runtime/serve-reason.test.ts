/** How svc serve says why its start failed: with the cause when it says more. */
import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it } from "vitest"
import { reasonText } from "../../../src/app/FailureText.js"

describe("the reason a start failed", () => {
  it("adds what caused it when that says more (a full disk hid behind 'Failed to execute statement')", () => {
    const full = new SqlError({ message: "Failed to execute statement", cause: Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" }) })
    expect(reasonText(full)).toBe("Failed to execute statement: database or disk is full")
  })

  it("says a message once, and takes what has no message", () => {
    expect(reasonText(new Error("an event at sequence 2 cannot be read"))).toBe("an event at sequence 2 cannot be read")
    expect(reasonText(Object.assign(new Error("cannot open: disk is full"), { cause: new Error("disk is full") }))).toBe("cannot open: disk is full")
    expect(reasonText({ message: "plain" })).toBe("plain")
    expect(reasonText("a string")).toBe("a string")
  })
})
