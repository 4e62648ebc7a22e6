/**
 * The admin socket does not carry out a request whose caller gave up before the runtime read it
 * (the runtime was stopped with SIGSTOP; the CLI gives up after 60 s): here the runtime's event
 * loop is held while a real client process sends a request and closes, as a stopped process's is.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { adminCall, serveAdmin } from "../../../src/infra/http/AdminApi.js"
import { tempDir } from "../../support/svc.js"

const closing: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of closing.splice(0)) await close()
})

const serving = async () => {
  const home = tempDir("svc-admin-api-")
  const handled: Array<unknown> = []
  const server = await serveAdmin(home, [{ method: "POST", path: "/runs/submit", handle: async (body) => (handled.push(body), [200, { id: "r1" }] as const) }])
  closing.push(() => new Promise((resolve) => server.close(() => resolve())))
  return { home, handled }
}

describe("the admin socket", () => {
  it("carries out a request whose caller waits for the answer", async () => {
    const { home, handled } = await serving()
    expect(await adminCall(home, "POST", "/runs/submit", { n: 1 })).toEqual({ status: 200, body: { id: "r1" } })
    expect(handled).toEqual([{ n: 1 }])
  })

  it("does not carry out a request whose caller closed before the runtime read it (its loop held, as a stopped process's)", async () => {
    const { home, handled } = await serving()
    const socket = join(home, "admin.sock")
    // While this process's loop is held by spawnSync, a client sends a whole request and closes.
    const client = `const s=require("net").connect(${JSON.stringify(socket)},()=>{const b='{"n":2}';s.end("POST /runs/submit HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\ncontent-length: "+b.length+"\\r\\n\\r\\n"+b,()=>s.destroy())})`
    const ran = spawnSync(process.execPath, ["-e", client], { timeout: 10_000 })
    expect(ran.status).toBe(0)
    // Let the runtime read what was sent, and answer a caller that waits, to know it has.
    expect(await adminCall(home, "POST", "/runs/submit", { n: 3 })).toMatchObject({ status: 200 })
    expect(handled).toEqual([{ n: 3 }])
  })
})
