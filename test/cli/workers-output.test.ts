/** What `svc workers invite` notes about the address its token carries. */
import { describe, expect, it } from "vitest"
import { onlyThisMachine } from "../../src/cli/commands/workers.js"

describe("svc workers invite", () => {
  it.each([
    ["https://127.0.0.1:7443", true],
    ["https://127.8.9.10:7443", true],
    ["https://localhost:7443", true],
    ["https://[::1]:7443", true],
    ["https://10.0.0.5:7443", false],
    ["https://owner.lan:7443", false],
    ["https://127.example.com:7443", false],
    ["https://[fe80::1]:7443", false]
  ])("%s reaches only this machine: %s", (url, only) => {
    expect(onlyThisMachine(url)).toBe(only)
  })
})
