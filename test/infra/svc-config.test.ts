/** svc.yaml's runtime settings and the environment, which wins: what is unset, and where a setting was set. */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { runtimeEnv, sayWhereSet, settingFor } from "../../src/infra/SvcConfig.js"

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

  it("refuses a file that is no map, and a setting that is a list or a map (taken as no settings, as \"8\", as \"[object Object]\")", async () => {
    for (const [yaml, what] of [["- a\n- b\n", "a list"], ["just words\n", "a string"], ["42\n", "a number"]] as const) {
      const home = homeWith(yaml)
      await expect(runtimeEnv(home, {})).rejects.toThrow(`${join(home, "svc.yaml")} must be a map (svc reads its settings under services.workflows.runtime.env), not ${what}`)
    }
    for (const [value, what] of [["[8]", "a list"], ["{a: 9}", "a map"]] as const) {
      const home = homeWith(env([`SVC_WORKFLOW_CAPACITY: ${value}`]))
      await expect(runtimeEnv(home, {})).rejects.toThrow(`${join(home, "svc.yaml")}: services.workflows.runtime.env.SVC_WORKFLOW_CAPACITY must be a word or a number, not ${what}`)
    }
    // An empty file, or one of comments, sets nothing.
    expect(await runtimeEnv(homeWith(""), {})).toEqual({})
    expect(await runtimeEnv(homeWith("# nothing yet\n"), {})).toEqual({})
  })

  it("reads a key of the file with nothing after it as unset (it read as the text null)", async () => {
    const home = homeWith(env(["SVC_WORKFLOW_OUTPUT_LIMIT:", "SVC_WORKFLOW_CAPACITY: 3"]))
    expect(await runtimeEnv(home, {})).toEqual({ SVC_WORKFLOW_CAPACITY: "3" })
  })
})

describe("a key on the way to the settings, misspelt", () => {
  it.each([
    ["servcies:\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_CAPACITY: 5\n", "servcies is not read by svc; did you mean services?"],
    ["services:\n  workflow:\n    runtime:\n      env:\n        SVC_WORKFLOW_CAPACITY: 5\n", "services.workflow is not read by svc; did you mean services.workflows?"],
    ["services:\n  workflows:\n    runtme:\n      env:\n        SVC_WORKFLOW_CAPACITY: 5\n", "services.workflows.runtme is not read by svc; did you mean services.workflows.runtime?"],
    ["services:\n  workflows:\n    runtime:\n      evn:\n        SVC_WORKFLOW_CAPACITY: 5\n", "services.workflows.runtime.evn is not read by svc; did you mean services.workflows.runtime.env?"],
    // The right key there with nothing in it counts as missing; a list or a word where a map belongs is refused too.
    ["services:\n  workflows:\n  workflow:\n    runtime:\n      env:\n        SVC_WORKFLOW_CAPACITY: 2\n", "services.workflow is not read by svc; did you mean services.workflows?"],
    ["services:\n  workflows:\n    runtime: null\n    runtme:\n      env: {}\n", "services.workflows.runtme is not read by svc; did you mean services.workflows.runtime?"],
    ["services:\n  - workflows:\n      runtime:\n        env:\n          SVC_WORKFLOW_CAPACITY: 2\n", "services must be a map"],
    ["services:\n  workflows:\n    runtime: yes\n", "services.workflows.runtime must be a map"]
  ])("is refused by svc serve, saying which and where svc reads its settings (they stood at their defaults without a word): %#", async (yaml, said) => {
    const home = homeWith(yaml)
    await expect(runtimeEnv(home, {})).rejects.toThrow(`${join(home, "svc.yaml")}: ${said} (svc reads its settings under services.workflows.runtime.env)`)
  })

  it("other keys are not judged (svc.yaml may hold other services' settings), nor a near one beside the right one", async () => {
    expect(await runtimeEnv(homeWith("editor: vim\nservices:\n  mail:\n    port: 25\n"), {})).toEqual({})
    expect(await runtimeEnv(homeWith(`${env(["SVC_WORKFLOW_CAPACITY: 3"])}  workflow:\n    x: 1\n`), {})).toEqual({ SVC_WORKFLOW_CAPACITY: "3" })
  })

  it("is not a reader's business: journal replay's one setting is read all the same", async () => {
    const home = homeWith("services:\n  workflow:\n    runtime: {}\n  workflows:\n    runtime:\n      env:\n        SVC_WORKFLOW_RETAINED_RUNS: 9\n")
    expect(await settingFor(home, "SVC_WORKFLOW_RETAINED_RUNS", {})).toEqual({ value: "9", from: "svc.yaml" })
    expect(await settingFor(homeWith("services:\n  workflow:\n    runtime: {}\n"), "SVC_WORKFLOW_RETAINED_RUNS", {})).toEqual({ value: undefined, from: "default" })
  })
})

describe("sayWhereSet", () => {
  it("adds where a setting the message names was set, and leaves other messages alone", () => {
    expect(sayWhereSet("/h", "SVC_WORKFLOW_CAPACITY must be ...", { SVC_WORKFLOW_CAPACITY: "500" })).toBe("SVC_WORKFLOW_CAPACITY must be ... (set in the environment)")
    expect(sayWhereSet("/h", "SVC_WORKFLOW_CAPACITY must be ...", { SVC_WORKFLOW_CAPACITY: " " })).toBe("SVC_WORKFLOW_CAPACITY must be ... (set in /h/svc.yaml: services.workflows.runtime.env)")
    expect(sayWhereSet("/h", "something else", {})).toBe("something else")
  })
})
