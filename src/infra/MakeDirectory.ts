/**
 * `mkdir -p` that says why it failed. Node's recursive `fs.mkdir` answers ENOENT (`no such file or
 * directory, mkdir '<the first one missing>'`) for any failure to make a directory, on a
 * read-only file system and where permission is denied too (Node 20 on Linux): the commands that
 * made a directory there said `installing bag hello: ENOENT`, which reads as a missing path.
 * Here that ENOENT is checked: the first directory missing is made alone, whose failure says
 * what the file system said (EROFS, EACCES, ENOSPC), with its path; a real ENOENT stays one.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"

/** Makes `dir` and the directories above it that are missing; answers the first one made, as `fs.mkdir` does. */
export const makeDirectory = async (dir: string, mode?: number): Promise<string | undefined> => {
  const options = mode === undefined ? { recursive: true as const } : { recursive: true as const, mode }
  try {
    return await fs.mkdir(dir, options)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e
    // The deepest directory there, and the one below it that could not be made.
    let missing = nodePath.resolve(dir)
    for (;;) {
      const parent = nodePath.dirname(missing)
      if (parent === missing) throw e
      const there = await fs.stat(parent).then(
        (s) => s.isDirectory(),
        () => false
      )
      if (there) break
      missing = parent
    }
    // Made alone: its own failure is the true one (EROFS, EACCES). Made after all (another
    // process made it meanwhile, or it was a passing failure): the rest is made again.
    await fs.mkdir(missing, mode === undefined ? {} : { mode }).catch((alone: NodeJS.ErrnoException) => {
      if (alone.code !== "EEXIST") throw alone
    })
    return await fs.mkdir(dir, options)
  }
}
