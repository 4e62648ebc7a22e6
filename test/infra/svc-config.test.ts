/** svc.yaml's runtime settings and the environment, which wins: what is unset, and where a setting was set. */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { runtimeEnv, sayWhereSet } from "../../src/infra/SvcConfig.js"

const homeWith = (yaml: string) => {
  const home = mkdtempSync(join(tmpdir(), "svc-config-"))
  writeFileSync(join(home, "svc.yaml"), yaml)
  return home
}
const env = (lines: ReadonlyArray<string>) => `services:\n  workflows:\n    runtime:\n      env:\n${lines.map((l) => `        ${l}\n`).join("")}`

describe("runtimeEnv", () => {
  it("takes the environment over the file, but an empty or blank variable is unset: the file's value stands", async () => {
    const home = homeWith(env(["SVC_WORKFLOW_OUTPUT_LIMIT: 2KiB", "SVC_WORKFLOW_CAPACITY: 3"]))
    expect(await runtimeEnv(home, { SVC_WORKFLOW_CAPACITY: "5" })).toEqual({ SVC_WORKFLOW_OUTPUT_LIMIT: "2KiB", SVC_WORKFLOW_CAPACITY: "5" })
    expect(await runtimeEnv(home, { SVC_WORKFLOW_OUTPUT_LIMIT: "", SVC_WORKFLOW_CAPACITY: "  " })).toEqual({ SVC_WORKFLOW_OUTPUT_LIMIT: "2KiB", SVC_WORKFLOW_CAPACITY: "3" })
  })

  it("reads a key of the file with nothing after it as unset (it read as the text null)", async () => {
    const home = homeWith(env(["SVC_WORKFLOW_OUTPUT_LIMIT:", "SVC_WORKFLOW_CAPACITY: 3"]))
    expect(await runtimeEnv(home, {})).toEqual({ SVC_WORKFLOW_CAPACITY: "3" })
  })
})

describe("sayWhereSet", () => {
  it("adds where a setting the message names was set, and leaves other messages alone", () => {
    expect(sayWhereSet("/h", "SVC_WORKFLOW_CAPACITY must be ...", { SVC_WORKFLOW_CAPACITY: "500" })).toBe("SVC_WORKFLOW_CAPACITY must be ... (set in the environment)")
    expect(sayWhereSet("/h", "SVC_WORKFLOW_CAPACITY must be ...", { SVC_WORKFLOW_CAPACITY: " " })).toBe("SVC_WORKFLOW_CAPACITY must be ... (set in /h/svc.yaml: services.workflows.runtime.env)")
    expect(sayWhereSet("/h", "something else", {})).toBe("something else")
  })
})
