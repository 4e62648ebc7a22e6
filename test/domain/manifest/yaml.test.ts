/** YAML traps: each is a positioned problem, never a throw (issue: duplicate keys, alias bombs, documents, syntax). */
import { describe, expect, it } from "vitest"
import { check } from "../../support/manifest.js"
import { doc, valid } from "./cases.js"

/** One problem, with its path, line and a message fragment; nothing decoded. */
const oneProblem = (text: string, path: string, line: number, message: string) => {
  const r = check(text)
  expect(r.lines, r.lines.join("\n")).toHaveLength(1)
  expect(r.errors[0]).toMatchObject({ path, line })
  expect(r.errors[0]!.message).toContain(message)
  expect(r.manifest).toBeUndefined()
  return r
}

describe("YAML documents", () => {
  it.each([
    ["an empty file", "", "it is empty"],
    ["only a comment", "# nothing here\n", "it is empty"],
    ["a null document", "~\n", "it is empty"],
    ["a top-level list", "- name: demo\n- description: d\n", "it is a list"],
    ["a bare string", "just words\n", "it is a string"],
    ["a number", "42\n", "it is a number"],
    ["a boolean", "true\n", "it is a boolean"]
  ])("refuses %s with one problem at line 1", (_what, text, message) => {
    oneProblem(text, "(root)", 1, `must be a map of keys (name, description, ...), but ${message}`)
  })

  it("refuses several documents in one file, at the second document", () => {
    oneProblem("name: demo\ndescription: d\n---\nname: other\n", "(root)", 3, "must hold a single YAML document")
  })

  it("accepts a leading document marker", () => {
    valid("---\nname: demo\ndescription: d\n")
  })
})

describe("duplicate keys", () => {
  it("refuses a duplicate top-level key, naming it at its second occurrence", () => {
    oneProblem("name: demo\ndescription: d\nname: again\n", "name", 3, "duplicate key")
  })

  it("refuses a duplicate nested key with its full key path", () => {
    oneProblem(
      doc("jobs:", "  build:", "    runs:", "      using: node", "      main: a.js", "      main: b.js"),
      "jobs.build.runs.main",
      8,
      "duplicate key"
    )
  })

  it("refuses a duplicate key inside a flow map", () => {
    oneProblem(doc("cli: {alias: a, alias: b}"), "cli.alias", 3, "duplicate key")
  })

  it("refuses a duplicate key in a map inside a list", () => {
    oneProblem(
      doc("permissions:", "  - kind: accessibility", "    reason: r", "    reason: again"),
      "permissions[0].reason",
      6,
      "duplicate key"
    )
  })
})

describe("YAML 1.2, whatever the file says", () => {
  it("refuses a %YAML 1.1 directive, which read 010 as 8, 1:30 as 90 and off as false, and took merge keys", () => {
    const text = `%YAML 1.1\n---\n${doc("jobs:", "  echo:", "    version: 010", "    runs: {using: process, command: [x]}")}`
    oneProblem(text, "(root)", 1, "YAML syntax: a %YAML 1.1 directive: bag.yaml is read as YAML 1.2 (its merge keys, yes/no/on/off booleans, octal 010 and 1:30 as a number are not taken); remove the directive")
    // Saying 1.2 changes nothing.
    expect(check(`%YAML 1.2\n---\n${doc("jobs:", "  echo:", "    version: '010'", "    runs: {using: process, command: [x]}")}`).errors).toEqual([])
  })

  it("refuses a tag it does not know, at its key (it was dropped without a word), and takes the core schema's", () => {
    const r = check(doc("jobs:", "  echo:", "    description: !!js/function 'x'", "    runs: {using: process, command: [!foo x]}"))
    expect(r.errors).toEqual([
      { path: "jobs.echo.description", line: 5, column: 18, message: "YAML tag !!js/function is not one bag.yaml takes (it holds plain values: leave the tag out)" },
      { path: "jobs.echo.runs.command[0]", line: 6, column: 38, message: "YAML tag !foo is not one bag.yaml takes (it holds plain values: leave the tag out)" }
    ])
    expect(check(doc("jobs:", "  echo:", "    version: !!str 1.0", "    runs: {using: process, command: [x]}")).errors).toEqual([])
  })
})

describe("a document nested too deep for the reader", () => {
  it("is said as such, once, not as a YAML syntax error of 'Maximum call stack size exceeded'", () => {
    for (const text of [doc(`constants: {x: ${"[".repeat(3_000)}${"]".repeat(3_000)}}`), doc("constants:", ...Array.from({ length: 1_500 }, (_, i) => `${"  ".repeat(i + 1)}k${i}:`))]) {
      const r = check(text)
      expect(r.manifest).toBeUndefined()
      expect(r.errors.map((e) => e.message)).toEqual(["bag.yaml nests too deep to be read (maps and lists within each other, a thousand levels or so; a manifest nests a few)"])
    }
  })
})

describe("aliases", () => {
  it("says a merge key is not taken, naming it as YAML's", () => {
    const r = check(doc("constants: {base: &b {x: 1}}", "cli:", "  <<: *b"))
    const merge = r.errors.find((e) => e.path === 'cli["<<"]')
    expect(merge?.message).toBe('is a YAML merge key, which bag.yaml does not take: write the keys out (an anchor and alias, "&x" and "*x", may stand for a whole value)')
    expect(merge?.line).toBe(5)
  })

  const bomb = [
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]"
  ].join("\n")

  it("refuses a billion-laughs document quickly, with one problem and a line", () => {
    const started = performance.now()
    const r = oneProblem(bomb + "\n", "(root)", 1, "resource-exhaustion")
    expect(performance.now() - started).toBeLessThan(2000)
    expect(r.errors[0]!.message).toContain("aliases expand more than")
  })

  it("refuses an alias bomb hidden under a manifest key", () => {
    const text = doc("constants:", ...bomb.split("\n").map((l) => `  ${l}`))
    expect(() => check(text)).not.toThrow()
    expect(check(text).errors[0]!.message).toContain("resource-exhaustion")
  })

  it("accepts a little legitimate reuse through an anchor", () => {
    const m = valid(
      doc(
        "scripts:",
        "  a: {description: d, command: x, env: &env [MODE=fast, LEVEL=2]}",
        "  b: {description: d, command: y, env: *env}"
      )
    )
    expect(m.scripts?.["b"]?.env).toEqual(["MODE=fast", "LEVEL=2"])
  })

  it("refuses an alias with no anchor, at the alias", () => {
    oneProblem(doc("description2: *nope"), "description2", 3, "YAML alias *nope has no anchor")
  })
})

describe("syntax errors", () => {
  it.each([
    ["an unclosed flow list", "name: [demo\ndescription: d\n", 2],
    ["a tab used for indentation", "name: demo\n\tdescription: d\n", 2],
    // A more-indented `key: value` after a plain scalar is read as its continuation, which the parser flags where the scalar starts.
    ["a bad indentation", "name: demo\ndescription: d\n  extra: x\n", 2],
    // An unclosed quote is noticed where the input ends.
    ["an unclosed quote", 'name: demo\ndescription: "d\n', 3],
    ["a flow map missing its brace", "name: demo\ndescription: d\ncli: {alias: x\n", 4]
  ])("reports %s as a YAML syntax problem with a line", (_what, text, line) => {
    const r = check(text)
    expect(r.errors.length).toBeGreaterThan(0)
    expect(r.errors[0]!.message).toMatch(/^YAML syntax: /)
    expect(r.errors[0]!.line).toBe(line)
    expect(r.manifest).toBeUndefined()
  })

  it.each([
    "{",
    "]",
    ": :",
    "&a [*a]\n",
    "!!binary x\n",
    "name: !!int x\n",
    "\u0000",
    "key: 'a'b\n",
    "- - - -\n",
    "%YAML 1.2\n---\nname: x\n"
  ])("never throws on %j", (text) => {
    expect(() => check(text)).not.toThrow()
    const r = check(text)
    for (const e of r.errors) expect(e.line).toBeGreaterThanOrEqual(1)
  })
})

describe("positions", () => {
  it("points an unknown key at the key and a bad value at the value", () => {
    const r = check(doc("cli:", "  alias: 5", "  bogus: x"))
    expect(r.lines).toEqual(expect.arrayContaining(["4:10 cli.alias: must be a string, not the number 5", '5:3 cli.bogus: unknown key "bogus"']))
  })

  it("points into flow collections", () => {
    const r = check(doc("permissions: [{kind: nope, reason: r}]"))
    expect(r.lines).toEqual(["3:22 permissions[0].kind: must be one of automation, accessibility, screen-recording, full-disk-access, not the string \"nope\""])
  })
})
