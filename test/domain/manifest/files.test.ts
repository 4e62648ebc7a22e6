/** Files and directories the manifest names must exist in the bag (svc bag check with a listing). */
import { describe, expect, it } from "vitest"
import { check, listing } from "../../support/manifest.js"
import { fails, valid } from "./cases.js"

const MANIFEST = [
  "name: demo", // 1
  "description: names every kind of file", // 2
  "prompts: {entry: src/prompt.ts}", // 3
  "slash-commands:", // 4
  "  entry: src/slash.ts", // 5
  "  commands: [{name: go, description: go}]", // 6
  "hooks:", // 7
  "  agent: [{event: stop, run: hooks/stop.sh}]", // 8
  "  barry: [{event: event-created, run: hooks/record.sh}]", // 9
  "store: {owned_by: node, engine: sqlite, migrations: db/migrations}", // 10
  "snapshots: {default: {entry: db/snap.js}}", // 11
  "restores: {default: {entry: db/restore.mjs}}", // 12
  "services:", // 13
  "  web: {description: d, entry: src/web.ts, working-directory: var/web}", // 14
  "scripts:", // 15
  "  seed: {description: d, entry: scripts/seed.ts, working-directory: var/seed}", // 16
  "jobs:", // 17
  "  render:", // 18
  "    runs: {using: node, main: jobs/render.js, working-directory: var/render}", // 19
  "schedules:", // 20
  "  tick: {every: 1m, entry: scripts/tick.js}", // 21
  "tools:", // 22
  "  - search: deferred", // 23
  "infra: {provider: terraform, root: infra}", // 24
  "dependencies: Brewfile" // 25
].join("\n") + "\n"

const FILES = [
  "src/prompt.ts",
  "src/slash.ts",
  "hooks/stop.sh",
  "hooks/record.sh",
  "db/migrations/0001.sql",
  "db/snap.js",
  "db/restore.mjs",
  "src/web.ts",
  "scripts/seed.ts",
  "jobs/render.js",
  "scripts/tick.js",
  "tools.ts",
  "infra/main.tf",
  "Brewfile"
]
const DIRS = ["var/web", "var/seed", "var/render"]

describe("file existence", () => {
  it("accepts a bag that has every file the manifest names", () => {
    valid(MANIFEST, listing(FILES, DIRS))
  })

  it("judges no file when no listing is given", () => {
    expect(check(MANIFEST).lines).toEqual([])
  })

  it.each([
    ["src/prompt.ts", "prompts.entry", 3],
    ["src/slash.ts", "slash-commands.entry", 5],
    ["hooks/stop.sh", "hooks.agent[0].run", 8],
    ["hooks/record.sh", "hooks.barry[0].run", 9],
    ["db/snap.js", "snapshots.default.entry", 11],
    ["db/restore.mjs", "restores.default.entry", 12],
    ["src/web.ts", "services.web.entry", 14],
    ["scripts/seed.ts", "scripts.seed.entry", 16],
    ["jobs/render.js", "jobs.render.runs.main", 19],
    ["scripts/tick.js", "schedules.tick.entry", 21],
    ["Brewfile", "dependencies", 25]
  ])("refuses a missing file %s at %s", (file, path, line) => {
    fails(MANIFEST, { path, line, message: `${file} does not exist in the bag` }, { listing: listing(FILES.filter((f) => f !== file), DIRS) })
  })

  it.each([
    ["var/web", "services.web.working-directory", 14],
    ["var/seed", "scripts.seed.working-directory", 16],
    ["var/render", "jobs.render.runs.working-directory", 19]
  ])("refuses a missing directory %s at %s", (dir, path, line) => {
    fails(MANIFEST, { path, line, message: `${dir} does not exist in the bag` }, { listing: listing(FILES, DIRS.filter((d) => d !== dir)) })
  })

  it("refuses a symbolic link, at the key that names it or at the root, as install would", () => {
    const withLinks = { ...listing(FILES, DIRS), symlinks: new Set(["jobs/render.js", "docs/readme.md"]) }
    const r = check(MANIFEST, withLinks)
    expect(r.errors.map((e) => [e.path, e.message])).toEqual([
      ["jobs.render.runs.main", "jobs/render.js is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead"],
      ["(root)", "docs/readme.md is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead"]
    ])
  })

  it("says a file reached through a link to a directory is reached through it, not that it is missing", () => {
    const files = FILES.filter((f) => !f.startsWith("jobs/"))
    const withLink = { ...listing(files, DIRS.filter((d) => d !== "jobs")), symlinks: new Set(["jobs"]) }
    const r = check(MANIFEST, withLink)
    expect(r.errors.find((e) => e.path === "jobs.render.runs.main")?.message).toBe(
      "jobs/render.js is reached through jobs, which is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead"
    )
    // Said at the key that names a path through it, not again at the root.
    expect(r.errors.filter((e) => e.path === "(root)" && e.message.startsWith("jobs "))).toEqual([])
  })

  it("refuses missing migrations and infra directories", () => {
    const files = FILES.filter((f) => f !== "db/migrations/0001.sql" && f !== "infra/main.tf")
    fails(
      MANIFEST,
      [
        { path: "store.migrations", line: 10, message: "db/migrations does not exist in the bag" },
        { path: "infra.root", line: 24, message: "infra does not exist in the bag" }
      ],
      { listing: listing(files, DIRS) }
    )
  })

  it("refuses tool overrides when tools.ts is missing", () => {
    fails(MANIFEST, { path: "tools", line: 23, message: "no tools.ts or src/tools.ts" }, { listing: listing(FILES.filter((f) => f !== "tools.ts"), DIRS) })
  })

  it("reports every missing file of an empty bag, each once", () => {
    const r = check(MANIFEST, listing([]))
    expect(r.errors).toHaveLength(17)
    expect(new Set(r.errors.map((e) => e.path)).size).toBe(17)
    expect(r.manifest).toBeUndefined()
  })

  it("normalises ./ and inner .. before looking a path up", () => {
    valid("name: demo\ndescription: d\nscripts:\n  go: {description: d, entry: ./scripts/../bin/go.js, working-directory: ./out/}\n", listing(["bin/go.js"], ["out"]))
  })

  it("tells a directory named as a file apart from a missing file", () => {
    fails("name: demo\ndescription: d\nscripts:\n  go: {description: d, entry: bin}\n", { path: "scripts.go.entry", line: 4, message: "bin is a directory, not a file" }, {
      listing: listing(["bin/go.js"])
    })
  })

  it("does not look up a path that already failed the inside-the-bag rule", () => {
    fails("name: demo\ndescription: d\nscripts:\n  go: {description: d, entry: ../go.js}\n", { path: "scripts.go.entry", line: 4, message: "must be a relative path inside the bag" }, {
      listing: listing([])
    })
  })

  it("does not check the main of a process job as a file", () => {
    valid("name: demo\ndescription: d\njobs:\n  build:\n    runs: {using: process, command: [make]}\n", listing([]))
  })
})
