/** Constants substitution (spec, rule 6 and "constants"). */
import { describe, expect, it } from "vitest"
import { check } from "../../support/manifest.js"
import { doc, fails, valid } from "./cases.js"

describe("constants", () => {
  it("replaces a whole value with the constant's value", () => {
    const m = valid("name: demo\ndescription: {constant: DESC}\nconstants:\n  DESC: From a constant\n")
    expect(m.description).toBe("From a constant")
  })

  it("names the constant a problem inside its value came from (the key at fault is in constants, not on the reference's line)", () => {
    fails(
      doc("constants:", "  RUNS: {using: node, main: a.mjs, extra: 1}", "jobs:", "  build:", "    description: b", "    runs: {constant: RUNS}"),
      { path: "jobs.build.runs.extra", line: 8, message: 'unknown key "extra" (in the value of constant "RUNS")' }
    )
    // A value of the wrong kind at the reference itself, too.
    fails(doc("constants:", "  D: {a: 1}", "services:", "  web: {description: {constant: D}, command: echo}"), {
      path: "services.web.description",
      line: 6,
      message: '(in the value of constant "D")'
    })
  })

  it("substitutes inside lists, item by item", () => {
    const m = valid(
      doc(
        "constants:",
        "  ARG: --verbose",
        "jobs:",
        "  build:",
        "    runs:",
        "      using: process",
        "      command: [make, {constant: ARG}, all]"
      )
    )
    expect(m.jobs?.["build"]?.runs).toMatchObject({ using: "process", command: ["make", "--verbose", "all"] })
  })

  it("substitutes a list or a map as a whole value", () => {
    const m = valid(
      doc(
        "constants:",
        "  DENY: [rm, dd]",
        "  RUNS: {using: node, main: job.js}",
        "bounds:",
        "  safe:",
        "    description: no destruction",
        "    bound:",
        "      bash: {denyPrograms: {constant: DENY}}",
        "jobs:",
        "  tidy:",
        "    runs: {constant: RUNS}"
      )
    )
    expect(m.bounds?.["safe"]?.bound.bash?.denyPrograms).toEqual(["rm", "dd"])
    expect(m.jobs?.["tidy"]?.runs).toEqual({ using: "node", main: "job.js" })
  })

  it("resolves a constant qualified with the bag's own name", () => {
    expect(valid("name: demo\ndescription: {constant: 'demo:D'}\nconstants:\n  D: own\n").description).toBe("own")
  })

  it("leaves ${VAR} strings alone", () => {
    const m = valid(doc("scripts:", "  go:", "    description: ${API_KEY}", "    command: run", "    env: ['TOKEN=${API_KEY}']"))
    expect(m.scripts?.["go"]).toMatchObject({ description: "${API_KEY}", env: ["TOKEN=${API_KEY}"] })
  })

  it("does not substitute inside the constants themselves", () => {
    const m = valid(doc("constants:", "  A: {constant: NOWHERE}"))
    expect(m.constants).toEqual({ A: { constant: "NOWHERE" } })
  })

  it("treats a map with constant and another key as an ordinary map", () => {
    fails(doc("cli: {alias: {constant: A, other: 1}}", "constants: {A: x}"), {
      path: "cli.alias",
      line: 3,
      message: "must be a string, not a map"
    })
  })

  it("refuses an undefined constant at the reference, with a suggestion", () => {
    fails(doc("constants:", "  ALIAS: dm", "cli:", "  alias: {constant: ALIAZ}"), {
      path: "cli.alias",
      line: 6,
      message: 'constant "ALIAZ" is not defined under constants; did you mean "ALIAS"?'
    })
  })

  it("refuses an undefined constant inside a list, once, without a type error as well", () => {
    fails(doc("scripts:", "  go:", "    description: d", "    command: run", "    args: [a, {constant: MISSING}]"), {
      path: "scripts.go.args[1]",
      line: 7,
      message: 'constant "MISSING" is not defined'
    })
  })

  it("refuses an undefined constant when there are no constants at all", () => {
    fails(doc("cli: {alias: {constant: X}}"), { path: "cli.alias", line: 3, message: 'constant "X" is not defined under constants' })
  })

  it.each([
    ["a number", "5"],
    ["an empty string", "''"],
    ["a list", "[A]"]
  ])("refuses a reference naming %s", (_what, ref) => {
    fails(doc(`cli: {alias: {constant: ${ref}}}`), { path: "cli.alias", line: 3, message: "a constant reference must name a constant" })
  })

  it("checks the substituted value at the place of use", () => {
    fails(doc("constants:", "  N: 5", "cli:", "  alias: {constant: N}"), {
      path: "cli.alias",
      line: 6,
      message: "must be a string, not the number 5"
    })
  })

  it("refuses another bag's constant when that bag is neither composed nor required", () => {
    fails(doc("cli:", "  alias: {constant: 'other:ALIAS'}"), {
      path: "cli.alias",
      line: 4,
      message: 'uses constant "ALIAS" of bag "other", which this bag neither composes (bags) nor requires (requires)'
    })
  })

  it.each([
    ["composed as a list", "bags: [other]"],
    ["composed as a map", "bags:\n  other:"],
    ["required", "requires:\n  other: {reason: calls it}"]
  ])("accepts another bag's constant when that bag is %s, and records it", (_what, relation) => {
    const r = check(doc(relation, "cli:", "  alias: {constant: 'other:ALIAS'}"))
    expect(r.lines).toEqual([])
    expect(r.externalConstants).toEqual([{ path: ["cli", "alias"], bag: "other", name: "ALIAS" }])
  })

  it("does not validate the place another bag's constant stands", () => {
    const r = check(doc("bags: [other]", "jobs:", "  build:", "    runs: {using: process, command: [a, {constant: 'other:X'}]}"))
    expect(r.errors).toEqual([])
    // The value is unknown here, so no typed manifest is produced either (only `svc bag show` resolves it).
    expect(r.manifest).toBeUndefined()
    expect(r.externalConstants).toEqual([{ path: ["jobs", "build", "runs", "command", 1], bag: "other", name: "X" }])
  })
})
