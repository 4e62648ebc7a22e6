/**
 * A job started when svc has no file descriptors left for its pipes (`ulimit -n`): a real process
 * under a low limit (test/fixtures/emfile/run-at-limit.ts) runs the real executor. The attempt
 * ended as an internal error ("Cannot read properties of undefined (reading 'on')").
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const script = fileURLToPath(new URL("../../fixtures/emfile/run-at-limit.ts", import.meta.url))
const viteNode = fileURLToPath(new URL("../../../node_modules/.bin/vite-node", import.meta.url))

describe("a job svc cannot start for want of file descriptors", () => {
  it("fails saying so, naming the limit", () => {
    const ran = spawnSync("sh", ["-c", `ulimit -n 256 && exec "${viteNode}" "${script}"`], { encoding: "utf8", timeout: 60_000 })
    expect(ran.status, ran.stderr).toBe(0)
    const outcome = JSON.parse(ran.stdout.trim().split("\n").at(-1)!)
    expect(outcome).toMatchObject({ ok: false, result: null, error: "cannot start true: svc has too many files open (EMFILE; its limit: ulimit -n)", exitCode: null })
  }, 90_000)
})
