/** `mkdir -p` that says why it failed (Node's recursive mkdir says ENOENT for any failure). */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeDirectory } from "../../src/infra/MakeDirectory.js"

const root = mkdtempSync(join(tmpdir(), "svc-mkdir-"))

/** A read-only view of a new directory (a bind mount remounted read-only), where this machine allows it (root). */
const readOnlyDir = (): string | undefined => {
  const dir = mkdtempSync(join(tmpdir(), "svc-mkdir-ro-"))
  const bind = spawnSync("mount", ["--bind", dir, dir])
  if (bind.status !== 0) return undefined
  if (spawnSync("mount", ["-o", "remount,bind,ro", dir]).status !== 0) {
    spawnSync("umount", [dir])
    return undefined
  }
  return dir
}
const ro = process.getuid?.() === 0 ? readOnlyDir() : undefined

afterAll(() => {
  if (ro !== undefined) {
    spawnSync("umount", [ro])
    rmSync(ro, { recursive: true, force: true })
  }
  rmSync(root, { recursive: true, force: true })
})

describe("makeDirectory", () => {
  it("makes the directory and those above it that are missing, with the mode given, answering the first one made", async () => {
    const deep = join(root, "a", "b", "c")
    expect(await makeDirectory(deep, 0o700)).toBe(join(root, "a"))
    expect(statSync(deep).mode & 0o777).toBe(0o700)
    // There already: nothing made, nothing said.
    expect(await makeDirectory(deep, 0o700)).toBeUndefined()
  })

  it("a file in the way is said as the file system says it", async () => {
    const file = join(root, "file")
    await import("node:fs/promises").then((fs) => fs.writeFile(file, ""))
    await expect(makeDirectory(join(file, "x", "y"))).rejects.toMatchObject({ code: "ENOTDIR" })
  })

  it.skipIf(ro === undefined)("on a read-only file system it says so, naming the directory it could not make (recursive mkdir said ENOENT) (needs root, to mount)", async () => {
    const dir = ro!
    await expect(makeDirectory(join(dir, "bags"), 0o700)).rejects.toMatchObject({ code: "EROFS", message: `EROFS: read-only file system, mkdir '${join(dir, "bags")}'` })
    await expect(makeDirectory(join(dir, "a", "b", "c"))).rejects.toMatchObject({ code: "EROFS", message: `EROFS: read-only file system, mkdir '${join(dir, "a")}'` })
    expect(existsSync(join(dir, "a"))).toBe(false)
  })
})
