/**
 * The session a worker's link holds, kept across a crash of its own `svc serve`: the fence and
 * key its welcome handed over, in `$SVC_HOME/sessions/<link key>.json` (0600), so that the
 * process a supervisor starts right after a crash (SIGKILL, out of memory) says hello resuming
 * that session, and the owner does not audit its own restart as a takeover (docs/protocol.md,
 * "Sessions and fencing").
 *
 * A copy must still take the session over, so the note is bound to this very home on this very
 * boot: the SHA-256 of the kernel's boot id, the home's real path, its device and its inode. A
 * home copied to another machine, or to another directory, or to another file system mounted at
 * the same path (two containers' overlays of one image), or read after a reboot, does not match,
 * and its process says hello as a new one. Where the boot id cannot be read (no /proc), nothing is kept.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import type { SessionMemory } from "../../app/workers/Link.js"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import { identityOf, identityText, type HomeIdentity } from "../SvcHome.js"

export const sessionsDir = (home: string) => nodePath.join(home, "sessions")

/** The binding of a home on a boot: every part counts (a copy differs in one of them). */
export const bindingFrom = (bootId: string, home: HomeIdentity): string => createHash("sha256").update(`${bootId}\n${identityText(home)}`).digest("hex")

/** What binds a note to this home on this boot (SvcHome.identityOf); undefined where the boot cannot be told apart. */
export const bindingOf = async (home: string, bootIdFile = "/proc/sys/kernel/random/boot_id"): Promise<string | undefined> => {
  try {
    const bootId = (await fs.readFile(bootIdFile, "utf8")).trim()
    const identity = identityOf(home)
    return bootId === "" || identity === undefined ? undefined : bindingFrom(bootId, identity)
  } catch {
    return undefined
  }
}

export const sessionMemoryAt = (home: string, linkKey: string, bootIdFile?: string): SessionMemory => {
  const file = nodePath.join(sessionsDir(home), `${linkKey}.json`)
  return {
    load: Effect.promise(async () => {
      const binding = await bindingOf(home, bootIdFile)
      if (binding === undefined) return undefined
      try {
        const note = JSON.parse(await fs.readFile(file, "utf8")) as { fence?: unknown; key?: unknown; binding?: unknown }
        if (note.binding !== binding || typeof note.fence !== "number" || !Number.isInteger(note.fence) || typeof note.key !== "string") return undefined
        return { fence: note.fence, key: note.key }
      } catch {
        return undefined
      }
    }),
    save: (session) =>
      Effect.promise(async () => {
        const binding = await bindingOf(home, bootIdFile)
        if (binding === undefined) return
        try {
          await makePrivateDir(sessionsDir(home))
          await writePrivateFile(file, JSON.stringify({ fence: session.fence, key: session.key, binding }))
        } catch {
          // The link goes on: only a crash right after would be audited as a takeover.
        }
      })
  }
}

/** A link's note goes with the link (`svc workers leave`, a link file removed). */
export const forgetSession = (home: string, linkKey: string): Promise<void> => fs.rm(nodePath.join(sessionsDir(home), `${linkKey}.json`), { force: true })
