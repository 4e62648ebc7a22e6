/** Runs the real `svc` binary (dist/cli/bin.js, built by `npm test`) in a child process. */
import { spawn, type ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const SVC_BIN = fileURLToPath(new URL("../../dist/svc.mjs", import.meta.url))

export interface SvcResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export const tempDir = (prefix = "svc-test-"): string => mkdtempSync(join(tmpdir(), prefix))

/**
 * Temporary directories made for one test file, removed together at its end (homes hold keys
 * and credentials: removed once the processes using them are gone).
 */
export const tempDirs = () => {
  const made: Array<string> = []
  return {
    make: (prefix: string): string => {
      const dir = tempDir(prefix)
      made.push(dir)
      return dir
    },
    removeAll: (): void => {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** svc calls not finished yet, with when each began: said when a test fails (test/support/on-failure.ts). */
const inFlight = new Set<{ readonly args: ReadonlyArray<string>; readonly since: number }>()
export const svcCallsInFlight = (): ReadonlyArray<{ readonly args: ReadonlyArray<string>; readonly since: number }> => [...inFlight]

/** Runs svc to completion without blocking the test worker (a blocked worker misses vitest's RPC). */
export const svc = (
  args: ReadonlyArray<string>,
  options: { cwd: string; home: string; env?: Record<string, string>; input?: string; uid?: number; gid?: number; onSpawn?: (child: ChildProcess) => void }
): Promise<SvcResult> => {
  if (!existsSync(SVC_BIN)) throw new Error(`${SVC_BIN} is missing: run npm run build (npm test builds first)`)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env["PATH"] ?? "", HOME: options.home, SVC_HOME: options.home, ...options.env },
      timeout: 30_000,
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid ?? options.uid })
    })
    options.onSpawn?.(child)
    const call = { args, since: Date.now() }
    inFlight.add(call)
    child.on("close", () => inFlight.delete(call))
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })
}
