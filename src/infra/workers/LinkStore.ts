/**
 * Links to the owners this machine works for: one file each in `$SVC_HOME/links/`, mode 0600,
 * holding the owner's address, its pinned certificate, the worker id and the credential.
 * Written to a temporary file and renamed, so a crash leaves the old or the new credential.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import { forgetSession } from "./SessionMemory.js"

export interface StoredLink {
  readonly url: string
  readonly fingerprint: string
  /** The owner's certificate, PEM, fetched at join and checked against the fingerprint. */
  readonly certificate: string
  readonly workerId: string
  readonly name: string
  readonly credential: string
  readonly joinedAt: string
  /** The invite whose token made this link (links written before it was kept have none). */
  readonly inviteId?: string
}

export const linksDir = (home: string) => nodePath.join(home, "links")

/** A stable key per owner (its URL and certificate): the file name. */
export const linkKey = (url: string, fingerprint: string) => createHash("sha256").update(`${url}\n${fingerprint}`).digest("hex").slice(0, 16)

/**
 * Writes the link's file (0600, in a directory private to this user: PrivateFiles.ts); answers
 * its key. A link keeps the key it was made with (`key`), its pin followed to another certificate
 * or not: the file, its session and its work directory are named by it.
 */
export const writeLink = async (home: string, link: StoredLink, key = linkKey(link.url, link.fingerprint)): Promise<string> => {
  const dir = linksDir(home)
  await makePrivateDir(dir)
  await writePrivateFile(nodePath.join(dir, `${key}.json`), JSON.stringify(link, null, 2) + "\n")
  return key
}

/**
 * Changes a link's file in place (`change` of what it holds now), only while it is there and
 * still the identity `workerId`: a link removed meanwhile (`svc workers leave`) stays removed, and
 * one a join again gave a new identity keeps it. A runtime wrote its copy of a link it had read
 * earlier, and so brought back, credential and all, a link left a moment before. Answers false
 * when the link is gone or another identity's.
 */
export const rewriteLink = async (home: string, key: string, workerId: string, change: (link: StoredLink) => StoredLink): Promise<boolean> => {
  const file = nodePath.join(linksDir(home), `${key}.json`)
  let now: StoredLink
  try {
    now = JSON.parse(await fs.readFile(file, "utf8")) as StoredLink
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false
    throw e
  }
  if (now.workerId !== workerId) return false
  await writeLink(home, change(now), key)
  return true
}

/** The keys of the link files there are, readable or not (a link being rewritten is renamed into place, never absent). */
export const linkKeys = async (home: string): Promise<ReadonlyArray<string>> =>
  (await fs.readdir(linksDir(home)).catch(() => [] as Array<string>)).filter((n) => n.endsWith(".json")).map((n) => n.slice(0, -5))

/** A link file that cannot be used: its key, its path and what is wrong with it (never what it holds: a credential). */
export interface UnreadableLink {
  readonly key: string
  readonly file: string
  readonly problem: string
}

const FIELDS = ["url", "fingerprint", "certificate", "workerId", "name", "credential"] as const

/** What is wrong with a link file's parsed content, or undefined. */
const linkProblem = (value: unknown): string | undefined => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it does not hold a JSON object"
  const o = value as Record<string, unknown>
  const missing = FIELDS.filter((f) => typeof o[f] !== "string" || o[f] === "")
  if (missing.length > 0) return `it lacks ${missing.join(", ")} (each a text)`
  let url: URL | undefined
  try {
    url = new URL(o["url"] as string)
  } catch {
    url = undefined
  }
  if (url === undefined || url.protocol !== "https:") return `its url, ${JSON.stringify((o["url"] as string).slice(0, 100))}, is not an https:// address`
  if (!/^[0-9a-f]{64}$/.test(o["fingerprint"] as string)) return "its fingerprint is not a SHA-256 (64 hex digits)"
  return undefined
}

/**
 * Every link file: those that can be used, and those that cannot (not JSON, a field missing or
 * wrong), each with what is wrong. An unreadable file was skipped without a word: the machine
 * silently stopped working for that owner.
 */
export const readLinkFiles = async (home: string): Promise<{ readonly links: ReadonlyArray<{ readonly key: string; readonly link: StoredLink }>; readonly unreadable: ReadonlyArray<UnreadableLink> }> => {
  const dir = linksDir(home)
  const names = await fs.readdir(dir).catch(() => [] as Array<string>)
  const links: Array<{ key: string; link: StoredLink }> = []
  const unreadable: Array<UnreadableLink> = []
  for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
    const key = name.slice(0, -5)
    const file = nodePath.join(dir, name)
    let text: string
    try {
      text = await fs.readFile(file, "utf8")
    } catch (e) {
      // Removed between the listing and the read (svc workers leave): not a problem.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue
      unreadable.push({ key, file, problem: `it cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})` })
      continue
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      // Not JSON.parse's message: it quotes the text, which holds the credential.
      unreadable.push({ key, file, problem: text.trim() === "" ? "it is empty" : `it is not valid JSON (${Buffer.byteLength(text)} bytes: cut short or overwritten?)` })
      continue
    }
    const problem = linkProblem(parsed)
    if (problem !== undefined) unreadable.push({ key, file, problem })
    else links.push({ key, link: parsed as StoredLink })
  }
  return { links, unreadable }
}

/** The link files that can be used (readLinkFiles says what is wrong with the others). */
export const readLinks = async (home: string): Promise<ReadonlyArray<{ readonly key: string; readonly link: StoredLink }>> => (await readLinkFiles(home)).links

/** What an operator is told of a link file that cannot be used. */
export const unreadableLinkText = (u: UnreadableLink): string =>
  `${u.file} cannot be used: ${u.problem}; this machine does not work for that owner until the file is mended, or removed and the machine joined again (svc workers join TOKEN)`

/** Removes a link's file: a running `svc serve` ends that link within 2 s (docs/protocol.md, "Leaving an owner"). */
export const removeLink = async (home: string, key: string): Promise<void> => {
  await fs.rm(nodePath.join(linksDir(home), `${key}.json`), { force: true })
  // The session it held goes with it (SessionMemory.ts), best effort: the link is gone (a leave
  // goes on to tell the owner), and a note left behind resumes nothing without its link. A
  // failure here was said as the link not removed, "nothing changed", when it had been.
  await forgetSession(home, key).catch(() => undefined)
}
