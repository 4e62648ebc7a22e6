/**
 * The bag commands as a new user meets them: the real `svc` binary in child processes, with a
 * real $SVC_HOME and real bag directories.
 */
import { spawnSync } from "node:child_process"
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Ajv } from "ajv"
import { parse } from "yaml"
import { beforeEach, describe, expect, it } from "vitest"
import { svc as svcCommand } from "../../src/cli/main.js"
import { commandTree, type CommandSpec } from "../../src/cli/usageProblems.js"
import { svc, tempDir } from "../support/svc.js"

let cwd: string
let home: string
const run = (...args: Array<string>) => svc(args, { cwd, home })

beforeEach(() => {
  cwd = tempDir("svc-cwd-")
  home = tempDir("svc-home-")
})

describe("svc new and svc bag check", () => {
  it("creates a starter bag that check accepts, with a job that really runs and honours its output_schema", async () => {
    const created = await run("new", "hasher")
    expect(created.code).toBe(0)
    expect(created.stdout).toContain(join(cwd, "hasher"))

    const checked = await run("bag", "check", "hasher")
    expect(checked.code).toBe(0)
    expect(checked.stdout).toContain("bag.yaml is valid")

    const manifest = parse(readFileSync(join(cwd, "hasher", "bag.yaml"), "utf8"))
    const job = manifest.jobs.checksum
    const input = { text: "hello" }
    expect(new Ajv().validate(job.input_schema, input)).toBe(true)
    const ran = spawnSync(process.execPath, [join(cwd, "hasher", job.runs.main)], { input: JSON.stringify(input), encoding: "utf8" })
    expect(ran.status).toBe(0)
    const lines = ran.stdout.trim().split("\n")
    const result = JSON.parse(lines[lines.length - 1]!)
    expect(result).toEqual({ sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", length: 5 })
    expect(new Ajv().validate(job.output_schema, result)).toBe(true)
  })

  it("takes a path whose last part is the name; refuses an invalid name and an existing directory (exit 1, one sentence on stderr)", async () => {
    const pathed = await run("new", "bags/deep/pathed", "--json")
    expect(pathed.code, pathed.stderr).toBe(0)
    expect(JSON.parse(pathed.stdout)).toEqual({ name: "pathed", dir: join(cwd, "bags", "deep", "pathed") })
    expect((await run("bag", "check", "bags/deep/pathed")).code).toBe(0)
    const bad = await run("new", "no/sl@shes")
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe('svc: "sl@shes" is not a bag name: use letters, digits, dots, underscores and hyphens, starting with a letter or digit\n')
    // A credential pasted as the name is not printed back, nor made a directory.
    const secretName = `svc_wk_${"A".repeat(30)}123456`
    for (const given of [secretName, `${secretName}/tools`]) {
      const pasted = await run("new", given)
      expect({ code: pasted.code, stdout: pasted.stdout }).toEqual({ code: 1, stdout: "" })
      expect(pasted.stderr).toMatch(/^svc: the (bag name|path) given holds what is shaped as an svc secret \(svc_wk_…, svc_jt_…, svc_jk_…\): refused, so that no secret is recorded or shown\n$/)
    }
    expect(existsSync(join(cwd, secretName))).toBe(false)
    expect((await run("new", "twice")).code).toBe(0)
    const again = await run("new", "twice")
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/already exists/)
  })

  it("refuses a secret's shape anywhere in a manifest (a job's version, a label, a key), never printing it", async () => {
    expect((await run("new", "leaky")).code).toBe(0)
    const secret = `svc_wk_${"Q".repeat(30)}123456`
    const manifest = join(cwd, "leaky", "bag.yaml")
    writeFileSync(manifest, readFileSync(manifest, "utf8").replace(/version: 1\.0\.0/, `version: 1.0.0-${secret}`) + `constants:\n  ${secret}: 1\n`)
    for (const args of [["bag", "check", "leaky"], ["bag", "check", "leaky", "--json"], ["bag", "install", "leaky"]]) {
      const r = await run(...args)
      expect(r.code, args.join(" ")).toBe(1)
      expect(r.stdout + r.stderr).not.toContain(secret)
      expect(r.stdout + r.stderr).toContain("holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…)")
    }
    const lines = (await run("bag", "check", "leaky")).stdout.trim().split("\n")
    expect(lines).toEqual([expect.stringMatching(/^bag\.yaml:\d+:\d+: jobs\.checksum\.version: holds what/), expect.stringMatching(/^bag\.yaml:\d+:3: constants\.svc_wk_…: holds what/)])
  })

  it("prints every problem as bag.yaml:LINE:COL: key.path: message and exits 1", async () => {
    mkdirSync(join(cwd, "bad"))
    writeFileSync(
      join(cwd, "bad", "bag.yaml"),
      ["name: bad", "description: broken on purpose", "jobs:", "  build:", "    runs:", "      using: nodejs", "  fetch:", "    runs: {using: node, main: missing.mjs}", "colour: blue", ""].join("\n")
    )
    const checked = await run("bag", "check", "bad")
    expect(checked.code).toBe(1)
    expect(checked.stdout.trim().split("\n")).toEqual([
      'bag.yaml:6:14: jobs.build.runs.using: must be one of node, process, action, not the string "nodejs"',
      "bag.yaml:8:31: jobs.fetch.runs.main: missing.mjs does not exist in the bag",
      'bag.yaml:9:1: colour: unknown key "colour"'
    ])
  })

  it("gives { valid, problems } with --json", async () => {
    mkdirSync(join(cwd, "bad"))
    writeFileSync(join(cwd, "bad", "bag.yaml"), "name: bad\n")
    const checked = await run("bag", "check", "bad", "--json")
    expect(checked.code).toBe(1)
    const doc = JSON.parse(checked.stdout)
    expect(doc.valid).toBe(false)
    expect(doc.problems).toEqual([{ path: "description", line: 1, column: 1, message: "is required", severity: "error" }])
    await run("new", "good")
    const ok = JSON.parse((await run("bag", "check", "good", "--json")).stdout)
    expect(ok).toEqual({ valid: true, problems: [] })
  })

  it("checks the current directory by default, and says a missing directory is a usage error (exit 2)", async () => {
    await run("new", "here")
    expect((await svc(["bag", "check"], { cwd: join(cwd, "here"), home })).code).toBe(0)
    const missing = await run("bag", "check", "nowhere")
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/nowhere does not exist/)
    mkdirSync(join(cwd, "empty"))
    const noManifest = await run("bag", "check", "empty")
    // One problem line as every other (it was "svc: empty has no bag.yaml" on stderr).
    expect(noManifest).toMatchObject({ code: 1, stdout: "bag.yaml:1:1: (root): empty has no bag.yaml\n", stderr: "" })
    // With --json, still the one document the contract promises.
    const asJson = await run("bag", "check", "empty", "--json")
    expect(asJson.code).toBe(1)
    expect(JSON.parse(asJson.stdout)).toEqual({ valid: false, problems: [{ path: "(root)", line: 1, column: 1, message: "empty has no bag.yaml", severity: "error" }] })
    // A bag.yaml that is not a regular file: a FIFO was read for ever, a directory said EISDIR of the bag.
    mkdirSync(join(cwd, "piped"))
    spawnSync("mkfifo", [join(cwd, "piped", "bag.yaml")])
    expect(await run("bag", "check", "piped")).toMatchObject({ code: 1, stdout: `bag.yaml:1:1: (root): ${join("piped", "bag.yaml")} is not a regular file (a FIFO)\n` })
    mkdirSync(join(cwd, "dirred", "bag.yaml"), { recursive: true })
    expect(await run("bag", "check", "dirred")).toMatchObject({ code: 1, stdout: `bag.yaml:1:1: (root): ${join("dirred", "bag.yaml")} is not a regular file (a directory)\n` })
  })

  it("answers a usage error with exit 2 and lists every command in --help, without colour in a pipe", async () => {
    expect((await run("bag", "frobnicate")).code).toBe(2)
    const help = await run("--help")
    expect(help.code).toBe(0)
    for (const command of ["new", "bag check", "bag install", "bag list", "bag show", "bag doctor", "bag remove"]) {
      expect(help.stdout).toContain(command)
    }
    // A command's help names it from svc, and a repeatable option reads as optional.
    const invite = await run("workers", "invite", "--help")
    expect(invite.code).toBe(0)
    expect(invite.stdout).toContain("$ svc workers invite [--scope text]... [--expires text] [--name text] [--json]\n")
    expect(invite.stdout).not.toContain("A user-defined piece of text.")
    // A group named alone answers with its help.
    const group = await run("workers")
    expect({ code: group.code, usage: group.stdout.includes("$ svc workers\n") }).toEqual({ code: 0, usage: true })
    // Into a pipe (as here), plain text: no colour escapes in the help or a usage message.
    expect(help.stdout).not.toContain("\u001b[")
    expect((await run("bag", "frobnicate")).stderr).not.toContain("\u001b[")
  })

  it("describes every argument of every command in its help, in svc's words", async () => {
    const withArgs: Array<CommandSpec> = []
    const walk = (c: CommandSpec): void => {
      if (c.args.length > 0) withArgs.push(c)
      c.commands.forEach(walk)
    }
    walk(commandTree(svcCommand.descriptor))
    expect(withArgs.length).toBeGreaterThanOrEqual(10)
    const undescribed: Array<string> = []
    for (const command of withArgs) {
      const help = await run(...command.path.split(" ").slice(1), "--help")
      expect(help.code).toBe(0)
      const section = help.stdout.slice(help.stdout.indexOf("\nARGUMENTS\n"), help.stdout.indexOf("\nOPTIONS\n"))
      // Each argument: its header line, then what it is (not only that it may be left out).
      for (const block of section.split(/\n(?=<)/).slice(1)) {
        const [header, ...rest] = block.split("\n")
        const said = rest.map((l) => l.trim()).filter((l) => l !== "" && l !== "This setting is optional.")
        if (said.length === 0) undescribed.push(`${command.path} ${header}`)
        // @effect/cli's restatement of the type goes (tidyHelp).
        expect(said).not.toContain("A directory.")
        expect(said).not.toContain("A user-defined piece of text.")
      }
    }
    expect(undescribed).toEqual([])
  })
})

describe("the bag store", () => {
  it("installs, lists, shows and removes a bag", async () => {
    await run("new", "hasher")
    const installed = await run("bag", "install", "hasher", "--json")
    expect(installed.code).toBe(0)
    const record = JSON.parse(installed.stdout)
    expect(record.status).toBe("installed")
    expect(record.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(record.jobs).toEqual([{ name: "checksum", address: "hasher:checksum@1.0.0" }])

    const listed = JSON.parse((await run("bag", "list", "--json")).stdout)
    expect(listed.bags.map((b: { name: string }) => b.name)).toEqual(["hasher"])

    const shown = JSON.parse((await run("bag", "show", "hasher", "--json")).stdout)
    expect(shown.jobs).toEqual([
      expect.objectContaining({ name: "checksum", address: "hasher:checksum@1.0.0", digest: record.digest, remote: { eligible: true } })
    ])
    expect((await run("bag", "show", "hasher")).stdout).toMatch(/checksum\s+hasher:checksum@1\.0\.0\s+node\s+-\s+remote-eligible/)

    expect((await run("bag", "install", "hasher", "--json")).stdout).toContain('"status": "unchanged"')
    expect((await run("bag", "remove", "hasher")).code).toBe(0)
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags).toEqual([])
    const gone = await run("bag", "show", "hasher")
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/no bag named "hasher" is installed/)
    // A store that cannot be made is said with the file system's words and the path (it said "ENOTDIR" alone).
    rmSync(join(home, "bags"), { recursive: true })
    writeFileSync(join(home, "bags"), "")
    const blocked = await run("bag", "install", "hasher")
    expect({ code: blocked.code, stderr: blocked.stderr }).toEqual({ code: 1, stderr: `svc: making the bag store: EEXIST: file already exists, mkdir '${join(home, "bags")}'\n` })
  })

  it("gives the same digest for the same content anywhere, and another for changed content or mode", async () => {
    await run("new", "a")
    const first = JSON.parse((await run("bag", "install", "a", "--json")).stdout).digest
    const otherCwd = tempDir("svc-cwd2-")
    const otherHome = tempDir("svc-home2-")
    await svc(["new", "a"], { cwd: otherCwd, home: otherHome })
    expect(JSON.parse((await svc(["bag", "install", "a", "--json"], { cwd: otherCwd, home: otherHome })).stdout).digest).toBe(first)

    chmodSync(join(otherCwd, "a", "jobs", "checksum.mjs"), 0o755)
    const third = tempDir("svc-home3-")
    expect(JSON.parse((await svc(["bag", "install", "a", "--json"], { cwd: otherCwd, home: third })).stdout).digest).not.toBe(first)
  })

  it("installs of one bag at the same moment take turns: one installs, the other is refused as changing an address (both said they had installed it)", async () => {
    await run("new", "hasher")
    // The same bag with other content: another digest for hasher:checksum@1.0.0.
    const other = tempDir("svc-cwd-other-")
    await svc(["new", "hasher"], { cwd: other, home })
    appendFileSync(join(other, "hasher", "jobs", "checksum.mjs"), "// changed\n")
    for (let round = 0; round < 3; round++) {
      if (round > 0) expect((await run("bag", "remove", "hasher")).code).toBe(0)
      const [a, b] = await Promise.all([run("bag", "install", "hasher", "--json"), svc(["bag", "install", join(other, "hasher"), "--json"], { cwd, home })])
      const answers = [a, b]
      expect(answers.map((r) => r.code).sort(), `${a.stderr}${b.stderr}`).toEqual([0, 1])
      const won = answers.find((r) => r.code === 0)!
      const lost = answers.find((r) => r.code === 1)!
      expect(JSON.parse(lost.stdout)).toMatchObject({ error: { message: expect.stringMatching(/^hasher:checksum@1\.0\.0 is already installed with digest/) } })
      // What the one that said it installed installed is what is installed.
      expect(JSON.parse((await run("bag", "show", "hasher", "--json")).stdout).digest).toBe(JSON.parse(won.stdout).digest)
    }
  })

  it("refuses to change what an installed BAG:JOB@VERSION means, and accepts a bumped version", async () => {
    await run("new", "hasher")
    expect((await run("bag", "install", "hasher")).code).toBe(0)
    appendFileSync(join(cwd, "hasher", "jobs", "checksum.mjs"), "// changed\n")
    const refused = await run("bag", "install", "hasher")
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(
      /^svc: hasher:checksum@1\.0\.0 is already installed with digest [0-9a-f]{12}, and this bag's content \([0-9a-f]{12}\) differs \(the digest covers the whole bag, not one job\): a versioned job address never changes meaning, so give this job a new version; or, to replace the copy installed here anyway \(runs already recorded name the old digest\), svc bag remove hasher first\n$/
    )
    const manifest = readFileSync(join(cwd, "hasher", "bag.yaml"), "utf8").replace("version: 1.0.0", "version: 1.1.0")
    writeFileSync(join(cwd, "hasher", "bag.yaml"), manifest)
    const bumped = await run("bag", "install", "hasher", "--json")
    expect(bumped.code).toBe(0)
    expect(JSON.parse(bumped.stdout)).toMatchObject({ status: "replaced", jobs: [{ address: "hasher:checksum@1.1.0" }] })
  })

  it("refuses to install an invalid bag, printing its problems", async () => {
    mkdirSync(join(cwd, "bad"))
    writeFileSync(join(cwd, "bad", "bag.yaml"), "name: bad\ndescription: x\nstore: {owned_by: node, engine: sqlite, migrations: m}\n")
    const out = await run("bag", "install", "bad")
    expect(out.code).toBe(1)
    expect(out.stdout).toContain("bag.yaml:3:53: store.migrations: m does not exist in the bag")
    expect(out.stderr).toMatch(/bad: bag.yaml has 1 problem; run svc bag check bad/)
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags).toEqual([])
  })
})

describe("svc bag show and svc bag doctor judge what depends on this machine", () => {
  const writeBag = (name: string, manifest: string, files: Record<string, string> = {}) => {
    mkdirSync(join(cwd, name), { recursive: true })
    writeFileSync(join(cwd, name, "bag.yaml"), manifest)
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(cwd, name, path, ".."), { recursive: true })
      writeFileSync(join(cwd, name, path), content)
    }
  }

  it("keeps the installed copy read-only, and finds one that was written into all the same", async () => {
    await run("new", "hasher")
    expect((await run("bag", "install", "hasher")).code).toBe(0)
    const copy = join(home, "bags", "hasher", "bag")
    // Jobs run in their bag's directory: one writing there would change what the digest stands for.
    expect(statSync(copy).mode & 0o777).toBe(0o555)
    expect(statSync(join(copy, "bag.yaml")).mode & 0o222).toBe(0)
    expect((await run("bag", "doctor", "hasher")).stdout).toBe("hasher: ok\n")
    // Root is not held back by modes (nor a job run as root): doctor checks the digest again.
    chmodSync(copy, 0o755)
    writeFileSync(join(copy, "out.txt"), "written by a job\n")
    const doctor = await run("bag", "doctor", "hasher", "--json")
    expect(doctor.code).toBe(1)
    // Each bag named as bag list, show and install name it.
    expect(JSON.parse(doctor.stdout).bags[0].name).toBe("hasher")
    expect(JSON.parse(doctor.stdout).bags[0].findings[0]).toEqual({
      severity: "error",
      message: expect.stringMatching(new RegExp(`^the installed copy no longer has the digest recorded at install \\([0-9a-f]{12}, now [0-9a-f]{12}\\): something wrote into ${copy} \\(a job writing to its working directory\\?\\); install the bag again$`))
    })
    // Installing the same source again copies it anew (it said "unchanged" and left the copy as it was).
    const repaired = await run("bag", "install", "hasher", "--json")
    expect(JSON.parse(repaired.stdout)).toMatchObject({ status: "repaired" })
    expect((await run("bag", "doctor", "hasher")).stdout).toBe("hasher: ok\n")
    expect(JSON.parse((await run("bag", "install", "hasher", "--json")).stdout)).toMatchObject({ status: "unchanged" })
    // Removing goes through the read-only copy.
    expect((await run("bag", "remove", "hasher")).code).toBe(0)
    expect((await run("bag", "install", "hasher")).code).toBe(0)
  })

  it("reports missing programs with their install command, optional ones as warnings", async () => {
    writeBag(
      "tooling",
      [
        "name: tooling",
        "description: needs programs",
        "dependencies:",
        "  node: {reason: runs the jobs}",
        "  surely-not-installed-xyz: {reason: converts files, install: {linux: apt-get install xyz, macos: brew install xyz}}",
        "  also-missing-abc: {reason: nice to have, optional: true}",
        "jobs:",
        "  convert:",
        "    description: converts with a program the bag does not list among its dependencies",
        "    runs: {using: process, command: [zzz-missing-tool, --all]}",
        "    requires: {bins: [node, zzz-missing-tool], labels: [gpu=true]}",
        "  also:",
        "    description: needs it too",
        "    runs: {using: process, command: [zzz-missing-tool]}",
        "    requires: {bins: [zzz-missing-tool]}",
        ""
      ].join("\n")
    )
    const installed = await run("bag", "install", "tooling")
    expect(installed.code, installed.stderr).toBe(0)
    const doctor = await svc(["bag", "doctor", "tooling", "--json"], { cwd, home, env: { PATH: `${process.execPath.replace(/\/node$/, "")}` } })
    expect(doctor.code).toBe(1)
    const [report] = JSON.parse(doctor.stdout).bags
    const platformInstall = process.platform === "darwin" ? "brew install xyz" : "apt-get install xyz"
    expect(report.findings).toEqual([
      { severity: "error", message: `surely-not-installed-xyz is not on PATH (converts files); install it with: ${platformInstall}` },
      { severity: "warning", message: "also-missing-abc is not on PATH (nice to have); no install command is given for this platform" },
      // A job's requires.bins (once not looked at: "ok" while every run of it was blocked).
      { severity: "error", message: "zzz-missing-tool is not on PATH, and jobs convert, also require it (requires.bins): no run of them is placed on this machine" }
    ])
    // And what each job requires of a host, beside its address.
    expect((await run("bag", "show", "tooling")).stdout).toMatch(/convert\s+\(unversioned\)\s+process\s+labels gpu=true; programs node, zzz-missing-tool\s/)
    // show reports a missing dependency with its install command too (bag-manifest spec, "dependencies").
    const shown = await svc(["bag", "show", "tooling", "--json"], { cwd, home, env: { PATH: `${process.execPath.replace(/\/node$/, "")}` } })
    expect(JSON.parse(shown.stdout).findings).toEqual(report.findings.slice(0, 2))
  })

  it("drops tools for an unmet requirement with one message, and warns for an optional one", async () => {
    writeBag(
      "needy",
      ["name: needy", "description: needs others", "requires:", "  vault: {reason: reads secrets}", "  search: {optional: true}", ""].join("\n")
    )
    await run("bag", "install", "needy")
    const shown = JSON.parse((await run("bag", "show", "needy", "--json")).stdout)
    expect(shown.findings).toEqual([
      { severity: "error", message: "tools dropped: requires vault (reads secrets), not installed" },
      { severity: "warning", message: "optional requirement search is not installed; the bag loads without it" }
    ])
    writeBag("vault", "name: vault\ndescription: the vault\nconstants: {region: eu}\n")
    await run("bag", "install", "vault")
    const after = JSON.parse((await run("bag", "show", "needy", "--json")).stdout)
    expect(after.findings).toEqual([{ severity: "warning", message: "optional requirement search is not installed; the bag loads without it" }])
    // Removing what it requires says so; what it requires optionally is not said.
    writeBag("search", "name: search\ndescription: the search\n")
    await run("bag", "install", "search")
    expect((await run("bag", "remove", "search")).stderr).toBe("")
    expect((await run("bag", "remove", "vault")).stderr).toBe("note: needy requires vault, which is no longer installed: svc bag doctor needy reports it (install vault again, or remove needy)\n")
    // An extension left without its parent is named too (the attack: said of none).
    writeBag("ext", "name: ext\ndescription: an extension\nextends: needy\n")
    expect((await run("bag", "install", "ext")).code).toBe(0)
    expect((await run("bag", "remove", "needy")).stderr).toBe("note: needy/ext extends needy, which is no longer installed: remove it too (svc bag remove needy/ext), or install needy again\n")
    // And bag doctor says so of it (it said ok).
    const doctor = await run("bag", "doctor", "needy/ext")
    expect({ code: doctor.code, stdout: doctor.stdout }).toEqual({ code: 1, stdout: "needy/ext:\n  error: extends bag needy, which is not installed: install it again, or remove this extension\n" })
  })

  it("resolves another bag's constants where it is installed, and pins them at install", async () => {
    writeBag("base", "name: base\ndescription: base\nconstants: {greeting: hello, tool: echo}\n")
    writeBag(
      "user",
      ["name: user", "description: uses base", "bags: [base]", "services:", "  web:", "    description: {constant: base:greeting}", "    command: {constant: base:tool}", ""].join("\n")
    )
    // check judges the directory alone: base is composed, so its constants may be used.
    expect((await run("bag", "check", "user")).code).toBe(0)
    const early = await run("bag", "install", "user")
    expect(early.code).toBe(1)
    expect(early.stdout).toContain('bag.yaml:6:18: services.web.description: constant "greeting" of bag "base" is not available')
    expect((await run("bag", "install", "base")).code).toBe(0)
    expect((await run("bag", "install", "user")).code).toBe(0)
    expect(JSON.parse((await run("bag", "show", "user", "--json")).stdout).findings).toEqual([])

    writeBag("base", "name: base\ndescription: base\nconstants: {greeting: bonjour, tool: echo}\n")
    expect((await run("bag", "install", "base")).code).toBe(0)
    expect(JSON.parse((await run("bag", "show", "user", "--json")).stdout).findings).toEqual([
      { severity: "warning", message: "constant greeting of bag base changed since install; reinstall user to use the new value" }
    ])
    // Its removal says what it leaves broken (the docs audit removed a composed bag without a word).
    const removed = await run("bag", "remove", "base")
    expect({ code: removed.code, stdout: removed.stdout, stderr: removed.stderr }).toEqual({
      code: 0,
      stdout: "removed base\n",
      stderr: "note: user composes base, which is no longer installed: svc bag doctor user reports it (install base again, or remove user)\n"
    })
    expect((await run("bag", "install", "base")).code).toBe(0)
    expect(JSON.parse((await run("bag", "remove", "base", "--json")).stdout)).toEqual({ removed: "base", digest: expect.stringMatching(/^sha256:/), dependents: [{ bag: "user", relation: "composes" }] })
    expect(JSON.parse((await run("bag", "show", "user", "--json")).stdout).findings).toEqual([
      { severity: "error", message: "composes bag base, which is not installed" },
      { severity: "warning", message: "uses constant greeting of bag base, which is no longer installed (the value pinned at install is used)" },
      { severity: "warning", message: "uses constant tool of bag base, which is no longer installed (the value pinned at install is used)" }
    ])
  })

  it("installs the children a bag composes from a path first, with their constants; a circle, a misnamed child or a Git remote is said", async () => {
    writeBag("leaf", "name: leaf\ndescription: the grandchild\n")
    writeBag("child-c", "name: child-c\ndescription: the child\nconstants: {colour: blue}\nbags:\n  leaf: {path: ../leaf}\n")
    writeBag(
      "par",
      ["name: par", "description: the parent", "bags:", "  child-c: {path: ../child-c}", "  far: {repo: someone/far}", "services:", "  web: {description: {constant: child-c:colour}, command: echo}", ""].join("\n")
    )
    const installed = await run("bag", "install", "par")
    expect(installed.code, installed.stderr).toBe(0)
    expect(installed.stdout.split("\n").map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual(["installed leaf", "installed child-c", "installed par", ""])
    expect(installed.stderr).toBe(
      "note: par composes far from the Git remote someone/far, which svc does not fetch: install it with svc bag install DIR (svc bag doctor reports it missing until then)\n"
    )
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags.map((b: { name: string }) => b.name).sort()).toEqual(["child-c", "leaf", "par"])
    // Again: nothing changed anywhere.
    const again = JSON.parse((await run("bag", "install", "par", "--json")).stdout)
    expect(again).toMatchObject({ status: "unchanged", name: "par", children: [{ status: "unchanged", name: "child-c", children: [{ status: "unchanged", name: "leaf" }] }] })

    writeBag("ring-a", "name: ring-a\ndescription: a\nbags:\n  ring-b: {path: ../ring-b}\n")
    writeBag("ring-b", "name: ring-b\ndescription: b\nbags:\n  ring-a: {path: ../ring-a}\n")
    const ring = await run("bag", "install", "ring-a")
    expect({ code: ring.code, stderr: ring.stderr }).toEqual({ code: 1, stderr: "svc: bags compose each other in a circle: ring-a composes ring-b composes ring-a\n" })
    writeBag("misnamed", "name: misnamed\ndescription: m\nbags:\n  kid: {path: ../leaf}\n")
    const misnamed = await run("bag", "install", "misnamed")
    expect({ code: misnamed.code, stderr: misnamed.stderr }).toEqual({
      code: 1,
      stderr: "svc: misnamed composes kid from ../leaf, but the bag there is named leaf: name it kid in its bag.yaml, or compose leaf\n"
    })
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags.map((b: { name: string }) => b.name).sort()).toEqual(["child-c", "leaf", "par"])
    // A child path that leads to no bag: check says so at that key; install refuses (exit 1) naming parent and child.
    writeBag("orphan", "name: orphan\ndescription: o\nbags:\n  ghost: {path: ../ghost}\n")
    const checked = await run("bag", "check", "orphan")
    expect({ code: checked.code, stdout: checked.stdout }).toEqual({
      code: 1,
      stdout: `bag.yaml:4:17: bags.ghost.path: there is no bag at ../ghost: ${join(cwd, "ghost")} does not exist\n`
    })
    const refused = await run("bag", "install", "orphan")
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 1,
      stderr: `svc: orphan composes ghost from ../ghost, where there is no bag: ${join(cwd, "ghost")} does not exist\n`
    })
  })

  it("installs a composition all or nothing: a parent refused installs none of its children; a child composed twice is installed once", async () => {
    const names = async () => JSON.parse((await run("bag", "list", "--json")).stdout).bags.map((b: { name: string }) => b.name).sort()
    writeBag("kid", "name: kid\ndescription: the kid\nconstants: {colour: blue}\n")
    writeBag("bad-parent", "name: bad-parent\ndescription: p\nbags:\n  kid: {path: ../kid}\nservices:\n  web: {description: {constant: kid:size}, command: echo}\n")
    const refused = await run("bag", "install", "bad-parent")
    expect(refused.code).toBe(1)
    expect(refused.stdout).toContain('services.web.description: constant "size" of bag "kid" is not available')
    expect(await names()).toEqual([])
    // A grandchild refused: its lines name its own bag.yaml, and the refusal the bags composing it.
    writeBag("bad-leaf", "name: bad-leaf\ndescription: l\nservices:\n  web: {description: 7, command: echo}\n")
    writeBag("middle", "name: middle\ndescription: m\nbags:\n  bad-leaf: {path: ../bad-leaf}\n")
    writeBag("upper", "name: upper\ndescription: u\nbags:\n  middle: {path: ../middle}\n")
    const deep = await run("bag", "install", "upper")
    expect(deep.code).toBe(1)
    expect(deep.stdout).toMatch(new RegExp(`^${join(cwd, "bad-leaf")}/bag\\.yaml:4:\\d+: services\\.web\\.description: `))
    expect(deep.stderr).toBe(`svc: ${join(cwd, "bad-leaf")}: bag.yaml (composed by upper > middle) has 1 problem; run svc bag check ${join(cwd, "bad-leaf")}\n`)
    const deepJson = JSON.parse((await run("bag", "install", "upper", "--json")).stdout)
    expect({ bag: deepJson.bag, composedBy: deepJson.composedBy, valid: deepJson.valid }).toEqual({ bag: join(cwd, "bad-leaf"), composedBy: ["upper", "middle"], valid: false })
    expect(await names()).toEqual([])
    // The parent is checked with the constants its children will have: this one uses the kid's.
    writeBag("good-parent", "name: good-parent\ndescription: p\nbags:\n  kid: {path: ../kid}\nservices:\n  web: {description: {constant: kid:colour}, command: echo}\n")
    const installed = await run("bag", "install", "good-parent")
    expect(installed.code, installed.stderr).toBe(0)
    expect(await names()).toEqual(["good-parent", "kid"])
    expect(JSON.parse((await run("bag", "show", "good-parent", "--json")).stdout).findings).toEqual([])

    // A diamond: top composes left and right, both compose base.
    writeBag("base", "name: base\ndescription: b\n")
    writeBag("left", "name: left\ndescription: l\nbags:\n  base: {path: ../base}\n")
    writeBag("right", "name: right\ndescription: r\nbags:\n  base: {path: ../base}\n")
    writeBag("top", "name: top\ndescription: t\nbags:\n  left: {path: ../left}\n  right: {path: ../right}\n")
    const diamond = await run("bag", "install", "top")
    expect(diamond.code, diamond.stderr).toBe(0)
    expect(diamond.stdout.split("\n").map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual(["installed base", "installed left", "unchanged base", "installed right", "installed top", ""])
    // Two different bags of one name in one composition: refused, nothing installed.
    writeBag("other-base", "name: base\ndescription: another base\n")
    writeBag("odd", "name: odd\ndescription: o\nbags:\n  base: {path: ../other-base}\n")
    writeBag("pair", "name: pair\ndescription: p\nbags:\n  left: {path: ../left}\n  odd: {path: ../odd}\n")
    const pair = await run("bag", "install", "pair")
    expect({ code: pair.code, stderr: pair.stderr }).toEqual({
      code: 1,
      stderr: `svc: the composition holds two different bags named base: ${join(cwd, "base")} and ${join(cwd, "other-base")}\n`
    })
    expect(await names()).toEqual(["base", "good-parent", "kid", "left", "right", "top"])
  })

  it("refuses a bag holding a symbolic link to a directory, inside or outside the bag, at check and at install", async () => {
    writeBag("linked", "name: linked\ndescription: l\n", { "data/x.json": "{}" })
    symlinkSync("data", join(cwd, "linked", "alias"))
    symlinkSync("/etc", join(cwd, "linked", "outside"))
    const checked = await run("bag", "check", "linked")
    expect({ code: checked.code, stdout: checked.stdout }).toEqual({
      code: 1,
      stdout:
        "bag.yaml:1:1: (root): alias is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead\n" +
        "bag.yaml:1:1: (root): outside is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead\n"
    })
    const installed = await run("bag", "install", "linked")
    expect(installed.code).toBe(1)
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags).toEqual([])
  })

  it("check judges a composition as install would: a circle, a misnamed child, a child's own problems, two bags of one name; a sound one passes", async () => {
    const checked = async (name: string) => {
      const r = await run("bag", "check", name)
      return { code: r.code, stdout: r.stdout }
    }
    writeBag("leaf", "name: leaf\ndescription: the leaf\n")
    writeBag("sound", "name: sound\ndescription: s\nbags:\n  leaf: {path: ../leaf}\n")
    expect(await checked("sound")).toEqual({ code: 0, stdout: "sound: bag.yaml is valid\n" })
    writeBag("ring-a", "name: ring-a\ndescription: a\nbags:\n  ring-b: {path: ../ring-b}\n")
    writeBag("ring-b", "name: ring-b\ndescription: b\nbags:\n  ring-a: {path: ../ring-a}\n")
    expect(await checked("ring-a")).toEqual({ code: 1, stdout: "bag.yaml:3:1: bags: the composition cannot be installed: bags compose each other in a circle: ring-a composes ring-b composes ring-a\n" })
    writeBag("misnamed", "name: misnamed\ndescription: m\nbags:\n  kid: {path: ../leaf}\n")
    expect((await checked("misnamed")).stdout).toBe(
      "bag.yaml:3:1: bags: the composition cannot be installed: misnamed composes kid from ../leaf, but the bag there is named leaf: name it kid in its bag.yaml, or compose leaf\n"
    )
    writeBag("bad-kid", "name: bad-kid\ndescription: k\njobs:\n  j:\n    description: a job\n    runs:\n      using: nodejs\n      main: main.mjs\n", { "main.mjs": "" })
    writeBag("proud", "name: proud\ndescription: p\nbags:\n  bad-kid: {path: ../bad-kid}\n")
    const proud = await checked("proud")
    expect(proud.code).toBe(1)
    expect(proud.stdout).toMatch(new RegExp(`^bag\\.yaml:3:1: bags: the composition cannot be installed: ${join(cwd, "bad-kid")}/bag\\.yaml has problems: bag\\.yaml:7:14: jobs\\.j\\.runs\\.using: `))
    writeBag("other-leaf", "name: leaf\ndescription: another leaf\n")
    writeBag("twin", "name: twin\ndescription: t\nbags:\n  sound: {path: ../sound}\n  odd: {path: ../odd}\n")
    writeBag("odd", "name: odd\ndescription: o\nbags:\n  leaf: {path: ../other-leaf}\n")
    expect((await checked("twin")).stdout).toBe(
      `bag.yaml:3:1: bags: the composition cannot be installed: the composition holds two different bags named leaf: ${join(cwd, "leaf")} and ${join(cwd, "other-leaf")}\n`
    )
    // A parent using its child's constant: check resolves it as install will, and judges what it gives.
    writeBag("giver", "name: giver\ndescription: g\nconstants:\n  word: hi\n  script: missing.mjs\n")
    writeBag("taker", 'name: taker\ndescription: {constant: "giver:word"}\nbags:\n  giver: {path: ../giver}\n')
    expect(await checked("taker")).toEqual({ code: 0, stdout: "taker: bag.yaml is valid\n" })
    writeBag("taker-bad", 'name: taker-bad\ndescription: t\nbags:\n  giver: {path: ../giver}\njobs:\n  k:\n    description: k\n    runs: {using: node, main: {constant: "giver:script"}}\n')
    expect(await checked("taker-bad")).toEqual({ code: 1, stdout: 'bag.yaml:8:31: jobs.k.runs.main: missing.mjs does not exist in the bag (in the value of constant "giver:script")\n' })
    // Another problem of the parent's own does not hide what its child's constant brings: both are said, as install says them.
    writeBag("zero", "name: zero\ndescription: z\nconstants:\n  t: 0s\n")
    writeBag(
      "both-bad",
      "name: both-bad\ndescription: b\nbags:\n  zero: {path: ../zero}\njobs:\n  a:\n    description: a\n    runs: {using: node, main: x.mjs}\n    timeout: {constant: zero:t}\n  b:\n    description: b\n    runs: {using: node, main: {constant: other:main}}\n",
      { "x.mjs": "" }
    )
    const both = await checked("both-bad")
    expect(both.code).toBe(1)
    expect(both.stdout).toMatch(/jobs\.a\.timeout: must be more than 0 seconds .*\(in the value of constant "zero:t"\)/)
    expect(both.stdout).toMatch(/jobs\.b\.runs\.main: uses constant "main" of bag "other", which this bag neither composes/)
    // Checking installs nothing.
    expect(JSON.parse((await run("bag", "list", "--json")).stdout).bags).toEqual([])
  })

  it("shows why a job stays on the owner", async () => {
    writeBag(
      "mixed",
      [
        "name: mixed",
        "description: jobs of every kind",
        "jobs:",
        "  local-only:",
        "    version: 2",
        "    runs: {using: process, command: [echo, hi], secrets: [TOKEN]}",
        "    preflight: {command: 'true'}",
        "  unversioned:",
        "    runs: {using: node, main: job.mjs}",
        ""
      ].join("\n"),
      { "job.mjs": "console.log('{}')\n" }
    )
    expect((await run("bag", "install", "mixed")).code).toBe(0)
    const jobs = JSON.parse((await run("bag", "show", "mixed", "--json")).stdout).jobs
    expect(jobs[0]).toMatchObject({ name: "local-only", address: "mixed:local-only@2", remote: { eligible: false } })
    expect(jobs[0].remote.reasons.map((r: { code: string }) => r.code)).toEqual(["not-node", "declares-secrets", "touches-files"])
    expect(jobs[1]).toMatchObject({ name: "unversioned", remote: { eligible: false, reasons: [{ code: "unversioned" }] } })
  })
})
