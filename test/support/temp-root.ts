/**
 * vitest's global setup: every temporary file or directory a test run makes goes under one
 * directory of its own (`$TMPDIR/svc-tests-XXXXXX`, given to the test workers as `TMPDIR`,
 * which `os.tmpdir()` reads), removed when the run ends. Tests make homes, journals and keys
 * by the hundred; without it each full run left them all in /tmp.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), "svc-tests-"))
  const before = process.env["TMPDIR"]
  process.env["TMPDIR"] = root
  return () => {
    if (before === undefined) delete process.env["TMPDIR"]
    else process.env["TMPDIR"] = before
    rmSync(root, { recursive: true, force: true, maxRetries: 3 })
  }
}
