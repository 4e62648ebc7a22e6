/**
 * A worker's link file that cannot be used (cut short, emptied, edited by hand) is said, by
 * `svc workers status` and in `svc serve`'s log, instead of skipped without a word: the machine
 * silently stopped working for that owner. Real svc processes.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startServe, stopAllServes, svcIn, Transcript, waitFor } from "../support/serve.js"
import { tempDirs } from "../support/svc.js"

const temps = tempDirs()
const transcript = new Transcript()
afterAll(async () => {
  await stopAllServes()
  temps.removeAll()
})

describe("a link file that cannot be used", () => {
  it("is named with what is wrong, by workers status with the runtime stopped or running, and once in the runtime's log", async () => {
    const home = temps.make("svc-link-files-")
    mkdirSync(join(home, "links"), { recursive: true })
    const file = join(home, "links", "0123456789abcdef.json")
    writeFileSync(file, `{"url": "https://owner.test:7443", "fingerprint": "${"ab".repeat(32)}", "credential": "svc_wk_${"Q".repeat(20)}`)
    const said = `link file ${file} cannot be used: it is not valid JSON (`
    const stopped = await svcIn(transcript, home, ["workers", "status"])
    expect(stopped.code).toBe(2)
    expect(stopped.stdout).toContain(said)
    expect(stopped.stderr).toContain("the links below are read from $SVC_HOME")
    const json = await svcIn(transcript, home, ["workers", "status", "--json"])
    expect(JSON.parse(json.stdout)).toMatchObject({ owners: [], unreadableLinks: [{ key: "0123456789abcdef", file, problem: expect.stringMatching(/^it is not valid JSON/) }] })
    const serve = await startServe("worker", home, transcript)
    await waitFor("the warning", async () => serve.output(), (out) => out.includes("cannot be used"), { timeoutMs: 10_000, everyMs: 100 })
    const running = await svcIn(transcript, home, ["workers", "status"])
    expect(running.code).toBe(0)
    expect(running.stdout).toContain(said)
    // Said once, not at every look for new links (every 2 s): the runtime looks again meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 4_500))
    expect(serve.output().match(/WARN .*cannot be used: it is not valid JSON/g)).toHaveLength(1)
    for (const text of [stopped.stdout, json.stdout, running.stdout, serve.output()]) expect(text).not.toContain("QQQQ")
    await serve.stop()
  }, 60_000)
})
