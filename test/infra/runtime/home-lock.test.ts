/** The home's lock: one holder at a time, across processes, and none left behind by a killed one. */
import { spawn } from "node:child_process"
import { statSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { describe, expect, it } from "vitest"
import { holdHome, LOCK_FILE } from "../../../src/infra/runtime/HomeLock.js"
import { tempDir } from "../../support/svc.js"

const tryHold = (home: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const held = yield* Effect.either(Scope.extend(holdHome(home), scope))
      return { held, release: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
    })
  )

describe("the home's lock", () => {
  it("is held by one at a time, owner-only, and taken again once released", async () => {
    const home = tempDir("svc-lock-")
    const first = await tryHold(home)
    expect(first.held._tag).toBe("Right")
    expect(statSync(join(home, LOCK_FILE)).mode & 0o777).toBe(0o600)
    const second = await tryHold(home)
    expect(second.held._tag === "Left" && second.held.left).toEqual({ busy: true })
    await first.release()
    const third = await tryHold(home)
    expect(third.held._tag).toBe("Right")
    await third.release()
  })

  it("is refused while another process holds it, and free as soon as that process is killed", async () => {
    const home = tempDir("svc-lock-kill-")
    const lock = join(home, LOCK_FILE)
    const script = `const D=require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))});const db=new D(${JSON.stringify(lock)},{timeout:0});db.pragma("locking_mode = EXCLUSIVE");db.exec("BEGIN EXCLUSIVE");process.stdout.write("held\\n");setInterval(()=>{},1000)`
    const holder = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] })
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()))
    const meanwhile = await tryHold(home)
    expect(meanwhile.held._tag === "Left" && meanwhile.held.left).toEqual({ busy: true })
    const gone = new Promise((resolve) => holder.once("exit", resolve))
    holder.kill("SIGKILL")
    await gone
    const after = await tryHold(home)
    expect(after.held._tag).toBe("Right")
    await after.release()
  })

  it("taken by many processes at one moment, is held by exactly one: taken with SQLite's wait alone, none might get it", async () => {
    const child = fileURLToPath(new URL("../../support/lock-child.mjs", import.meta.url))
    for (let trial = 0; trial < 4; trial++) {
      const home = tempDir("svc-lock-race-")
      // The real holdHome, in 6 processes that start taking it at the same moment; a holder holds
      // until it is killed, so one that starts late (a loaded machine) finds it held.
      const at = Date.now() + 1_500
      const children = Array.from({ length: 6 }, () => spawn(process.execPath, [child, home, String(at)], { stdio: ["ignore", "pipe", "inherit"] }))
      const outcomes = await Promise.all(
        children.map((c) => new Promise<string>((resolve) => c.stdout.setEncoding("utf8").once("data", (d: string) => resolve(d))))
      )
      for (const c of children) c.kill("SIGKILL")
      await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((resolve) => c.once("exit", resolve)))))
      expect(outcomes.filter((o) => o === "held"), outcomes.join(", ")).toHaveLength(1)
      expect(outcomes.filter((o) => o === "busy")).toHaveLength(5)
    }
  }, 60_000)
})
