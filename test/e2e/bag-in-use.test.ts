/**
 * A bag's installed copy that jobs run from is neither replaced nor removed under them: `svc bag
 * install` of another version and `svc bag remove` are refused while the runtime runs a job from
 * it (a replacing install swapped the code of a running job: its result came from the new
 * version, recorded under the old digest). Real svc processes: an owner running its own job.
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

const writeBag = (dir: string, version: string) => {
  mkdirSync(join(dir, "jobs"), { recursive: true })
  writeFileSync(
    join(dir, "bag.yaml"),
    `name: nap\ndescription: sleeps\nversion: ${version}\njobs:\n  nap:\n    description: sleeps ms milliseconds\n    version: ${version}\n    runs: { using: node, main: jobs/nap.mjs }\n    timeout: 60s\n`
  )
  writeFileSync(
    join(dir, "jobs", "nap.mjs"),
    `let input = ""\nfor await (const chunk of process.stdin) input += chunk\nconst { ms } = JSON.parse(input)\nawait new Promise((r) => setTimeout(r, ms))\nconsole.log(JSON.stringify({ v: "${version}" }))\n`
  )
}

describe("a bag that jobs run from", () => {
  it("is not replaced nor removed while they run; once they ended, it is", async () => {
    const home = temps.make("svc-in-use-")
    const src = temps.make("svc-in-use-src-")
    writeBag(join(src, "one"), "1.0.0")
    writeBag(join(src, "two"), "2.0.0")
    const svc = (...args: Array<string>) => svcIn(transcript, home, args, src)
    expect((await svc("bag", "install", "one")).code).toBe(0)
    await startServe("owner", home, transcript)
    const submitted = JSON.parse((await svc("run", "nap:nap@1.0.0", "--input", '{"ms":8000}', "--json")).stdout) as { id: string }
    await waitFor("the job running", async () => JSON.parse((await svc("runs", "show", submitted.id, "--json")).stdout) as { state: string }, (r) => r.state === "running", { timeoutMs: 20_000, everyMs: 100 })
    const replaced = await svc("bag", "install", "two")
    expect(replaced.code).toBe(1)
    expect(replaced.stderr).toMatch(
      /^svc: 1 job runs on this machine from the installed copy of nap \([0-9a-f]{12}\): replacing it now would change their code as they run \(.*\); wait until it ends \(svc workers status, svc runs list\), then run this again\n$/
    )
    const removed = await svc("bag", "remove", "nap", "--json")
    expect(removed.code).toBe(1)
    expect(JSON.parse(removed.stdout)).toMatchObject({ error: { message: expect.stringMatching(/from the installed copy of nap .*: removing it now would fail them;/) } })
    // The same content again changes nothing: taken.
    expect((await svc("bag", "install", "one")).code).toBe(0)
    const done = await waitFor("the run's end", async () => JSON.parse((await svc("runs", "show", submitted.id, "--json")).stdout) as { state: string; result: unknown }, (r) => r.state !== "running" && r.state !== "pending", { timeoutMs: 30_000, everyMs: 200 })
    expect(done.value).toMatchObject({ state: "succeeded", result: { v: "1.0.0" } })
    expect((await svc("bag", "install", "two")).code).toBe(0)
    expect((await svc("bag", "remove", "nap")).code).toBe(0)
  }, 90_000)
})
