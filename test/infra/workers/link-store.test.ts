/** Link files: those a runtime can use, and what is wrong with the others (they were skipped without a word). */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { readLinkFiles, unreadableLinkText, writeLink, type StoredLink } from "../../../src/infra/workers/LinkStore.js"
import { tempDir } from "../../support/svc.js"

const CREDENTIAL = `svc_wk_${"Q".repeat(36)}`
const link: StoredLink = {
  url: "https://owner.test:7443",
  fingerprint: "ab".repeat(32),
  certificate: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
  workerId: "w1",
  name: "lab-1",
  credential: CREDENTIAL,
  joinedAt: "2026-11-26T00:00:00.000Z"
}

describe("reading link files", () => {
  it("uses the whole ones, and says of each other what is wrong with it, never what it holds", async () => {
    const home = tempDir("svc-links-")
    const good = await writeLink(home, link)
    const dir = join(home, "links")
    mkdirSync(dir, { recursive: true })
    const text = JSON.stringify(link, null, 2)
    const files: Record<string, string> = {
      cut: text.slice(0, 200),
      empty: "",
      list: "[]",
      lacking: JSON.stringify({ ...link, url: undefined, workerId: 7 }),
      http: JSON.stringify({ ...link, url: "http://owner.test:7443" }),
      word: JSON.stringify({ ...link, url: "not a url" }),
      pin: JSON.stringify({ ...link, fingerprint: "AB" })
    }
    for (const [key, body] of Object.entries(files)) writeFileSync(join(dir, `${key}.json`), body)
    const { links, unreadable } = await readLinkFiles(home)
    expect(links).toEqual([{ key: good, link }])
    const problems = Object.fromEntries(unreadable.map((u) => [u.key, u.problem]))
    expect(problems).toEqual({
      cut: "it is not valid JSON (200 bytes: cut short or overwritten?)",
      empty: "it is empty",
      list: "it does not hold a JSON object",
      lacking: "it lacks url, workerId (each a text)",
      http: 'its url, "http://owner.test:7443", is not an https:// address',
      word: 'its url, "not a url", is not an https:// address',
      pin: "its fingerprint is not a SHA-256 (64 hex digits)"
    })
    const cut = unreadable.find((u) => u.key === "cut")!
    expect(unreadableLinkText(cut)).toBe(
      `${join(dir, "cut.json")} cannot be used: it is not valid JSON (200 bytes: cut short or overwritten?); this machine does not work for that owner until the file is mended, or removed and the machine joined again (svc workers join TOKEN)`
    )
    for (const u of unreadable) expect(unreadableLinkText(u)).not.toContain("QQQQ")
  })
})
