import { describe, expect, it } from "vitest"
import { svc } from "../../src/cli/main.js"
import { failureJson } from "../../src/cli/CliFailure.js"
import { commandOf, commandTree, flagGiven, parseProblem, takesValue, tidyHelp, wordsProblem, withShortValuesApart, withStdinArgumentLast } from "../../src/cli/usageProblems.js"

// svc's own command tree, read from @effect/cli's descriptor: a release that changes its shape
// fails here.
const tree = commandTree(svc.descriptor)

describe("the command tree", () => {
  it("has every command with its options and arguments", () => {
    expect(tree.commands.map((c) => c.name)).toEqual(["new", "bag", "serve", "workers", "run", "runs", "journal", "audit"])
    const invite = commandOf(tree, ["workers", "invite"]).command
    expect(invite.path).toBe("svc workers invite")
    expect(invite.options).toEqual([
      { names: ["--scope"], value: "text" },
      { names: ["--expires"], value: "text" },
      { names: ["--name"], value: "text" },
      { names: ["--json"], value: undefined }
    ])
    const tail = commandOf(tree, ["journal", "tail", "-n", "3"])
    expect(tail.command.options).toContainEqual({ names: ["-n", "--lines"], value: "integer" })
    expect(tail.command.options).toContainEqual({ names: ["-f", "--follow"], value: undefined })
    expect(tail.rest).toBe(2)
    expect(commandOf(tree, ["runs", "show", "r1"]).command.args).toEqual(["<RUN>"])
    expect(commandOf(tree, ["bag", "check"]).command.args).toEqual(["[<DIR>]"])
  })

  it("finds the command past @effect/cli's own options given before its name", () => {
    expect(commandOf(tree, ["--log-level", "debug", "runs", "list", "--json"])).toMatchObject({ command: { path: "svc runs list" }, rest: 4 })
    expect(commandOf(tree, ["--log-level=debug", "runs", "--log-level", "info", "list"])).toMatchObject({ command: { path: "svc runs list" }, rest: 5 })
    expect(wordsProblem(tree, ["--log-level", "debug", "runs", "list", "--json", "--limit", "1"])).toBeUndefined()
    expect(wordsProblem(tree, ["--log-level", "debug", "run", "a:b@1.0.0", "--input", "{}"])).toBeUndefined()
    // Still a problem where there is one.
    expect(wordsProblem(tree, ["--log-level", "debug", "runs", "list", "--bogus"])).toBe(
      "svc runs list: unknown option --bogus; its options: --json, --state VALUE, --limit VALUE (svc runs list --help)"
    )
  })
})

describe("usage problems found in the words", () => {
  it("takes what the commands take", () => {
    for (const args of [
      [],
      ["workers"],
      ["--help"],
      ["workers", "--help"],
      ["workers", "invite", "--scope", "hasher:checksum@1.0.0", "--scope", "a:b@1", "--name", "lab-1"],
      ["journal", "tail", "-n", "-1", "-f"],
      ["journal", "tail", "--lines=5", "--json"],
      ["runs", "list", "--state", "running", "--limit", "3"],
      ["run", "hasher:checksum@1.0.0", "--input", "{\"a\":1}", "--prefer", "zone=lab", "--wait"],
      ["serve", "--log-level", "debug"],
      ["runs", "list", "--json=true"]
    ]) {
      expect(wordsProblem(tree, args), args.join(" ")).toBeUndefined()
    }
  })

  it("names a word that is not a command, with the commands there are", () => {
    expect(wordsProblem(tree, ["workers", "frob"])).toBe(
      'svc workers: "frob" is not a command; its commands: invite, join, rotate, revoke, release, status, leave (svc workers --help)'
    )
    expect(wordsProblem(tree, ["frob"])).toBe('svc: "frob" is not a command; its commands: new, bag, serve, workers, run, runs, journal, audit (svc --help)')
  })

  it("names an unknown option with the options the command takes, or that it takes none", () => {
    expect(wordsProblem(tree, ["runs", "list", "--bogus"])).toBe(
      "svc runs list: unknown option --bogus; its options: --json, --state VALUE, --limit VALUE (svc runs list --help)"
    )
    expect(wordsProblem(tree, ["journal", "export", "--json"])).toBe("svc journal export: unknown option --json; it takes no options (svc journal export --help)")
    expect(wordsProblem(tree, ["workers", "--invite"])).toBe(
      "svc workers: unknown option --invite (did you mean the command svc workers invite?); it takes no options (svc workers --help)"
    )
  })

  it("refuses an option without its value, at the end or before another option", () => {
    // @effect/cli would take `--scope` at the end as no --scope at all: an every-job invite.
    expect(wordsProblem(tree, ["workers", "invite", "--scope"])).toBe("svc workers invite: --scope needs a value (text) (svc workers invite --help)")
    expect(wordsProblem(tree, ["workers", "invite", "--name", "--scope", "a:b@1"])).toBe(
      "svc workers invite: --name needs a value (text) (svc workers invite --help)"
    )
    expect(wordsProblem(tree, ["journal", "tail", "-n"])).toBe("svc journal tail: -n needs a value (integer) (svc journal tail --help)")
  })

  it("refuses a value given to a flag", () => {
    expect(wordsProblem(tree, ["runs", "list", "--json=1"])).toBe('svc runs list: --json takes no value, and was given "1" (svc runs list --help)')
  })

  it("stops at --", () => {
    expect(wordsProblem(tree, ["run", "--", "--wat"])).toBeUndefined()
  })
})

describe("@effect/cli's parse problems reworded", () => {
  it("names the option a wrong value was given to, and what it takes", () => {
    expect(parseProblem(tree, ["journal", "tail", "-n", "abc"], "'abc' is not a integer\n")).toBe(
      'svc journal tail: -n takes an integer, not "abc" (svc journal tail --help)'
    )
    expect(parseProblem(tree, ["runs", "list", "--limit=x"], "'x' is not a integer")).toBe('svc runs list: --limit takes an integer, not "x" (svc runs list --help)')
    expect(parseProblem(tree, ["runs", "list", "--state", "bogus"], "Expected one of the following cases: pending, assigned, running, succeeded, failed, stopped\n")).toBe(
      'svc runs list: expected one of pending, assigned, running, succeeded, failed, stopped for --state, not "bogus" (svc runs list --help)'
    )
  })

  it("names a missing argument and one too many", () => {
    expect(parseProblem(tree, ["runs", "show"], "Missing argument <RUN>\n")).toBe("svc runs show: <RUN> is missing (svc runs show --help)")
    expect(parseProblem(tree, ["runs", "show", "a", "b"], "Received unknown argument: 'b'")).toBe(
      'svc runs show: unexpected argument "b"; it takes <RUN> (svc runs show --help)'
    )
    expect(parseProblem(tree, ["audit", "x"], "Received unknown argument: 'x'")).toBe('svc audit: unexpected argument "x"; it takes no arguments (svc audit --help)')
  })

  it("says a path is not a directory in plain words", () => {
    expect(parseProblem(tree, ["bag", "check", "/etc/passwd"], "Expected path '/etc/passwd' to be a directory")).toBe(
      "svc bag check: /etc/passwd is not a directory (svc bag check --help)"
    )
  })

  it("keeps any other text, naming the command", () => {
    expect(parseProblem(tree, ["serve"], "something else\n")).toBe("svc serve: something else (svc serve --help)")
  })
})

describe("help, tidied", () => {
  // What @effect/cli prints for `svc runs list --help` (abridged).
  const printed = [
    "svc",
    "",
    "svc 0.1.0",
    "",
    "USAGE",
    "",
    "$ list [--json] --state pending | assigned | stopped... [--limit integer] --tag text...",
    "",
    "OPTIONS",
    "",
    "--json",
    "",
    "  A true or false value.",
    "",
    "  print one JSON document on stdout",
    "",
    "--limit integer",
    "",
    "  An integer.",
    "",
    "  how many",
    "",
    "--name text",
    "",
    "  A user-defined piece of text.",
    "",
    "  the name",
    ""
  ].join("\n")

  it("names the command from svc in its usage, shows repeatable options as optional, and drops lines that restate a type", () => {
    expect(tidyHelp(printed, "svc runs list").split("\n")).toEqual([
      "svc",
      "",
      "svc 0.1.0",
      "",
      "USAGE",
      "",
      "$ svc runs list [--json] [--state pending | assigned | stopped]... [--limit integer] [--tag text]...",
      "",
      "OPTIONS",
      "",
      "--json",
      "",
      "  print one JSON document on stdout",
      "",
      "--limit integer",
      "",
      "  how many",
      "",
      "--name text",
      "",
      "  the name",
      ""
    ])
  })

  it("leaves @effect/cli's own options to svc --help, and shows repeatable options as optional in a group's list", () => {
    const help = ["USAGE", "", "$ invite --scope text...", "", "OPTIONS", "", "--name text", "", "  the name", "", "--completions sh | bash", "", "  Generate.", "", "(-h, --help)", "", "  Show the help.", "", "--wizard", "", "  Start wizard mode.", "", "--version", "", "  Show the version.", "", "COMMANDS", "", "  - invite --scope text... [--name text]  Print a token", ""].join("\n")
    expect(tidyHelp(help, "svc workers invite").split("\n")).toEqual([
      "USAGE",
      "",
      "$ svc workers invite [--scope text]...",
      "",
      "OPTIONS",
      "",
      "--name text",
      "",
      "  the name",
      "",
      "(-h, --help)",
      "",
      "  Show the help.",
      "",
      "COMMANDS",
      "",
      "  - invite [--scope text]... [--name text]  Print a token",
      ""
    ])
    expect(tidyHelp(help, "svc")).toContain("--completions sh | bash")
  })

  it("leaves a text without a usage line as it is, but for the type lines", () => {
    expect(tidyHelp("no usage here\n", "svc")).toBe("no usage here\n")
  })
})

describe("a lone - (read from stdin)", () => {
  it("is moved after the command's options, which @effect/cli would not look for past it; an option's value - stays", () => {
    expect(withStdinArgumentLast(tree, ["workers", "join", "-", "--name", "lab-1", "--json"])).toEqual(["workers", "join", "--name", "lab-1", "--json", "-"])
    expect(withStdinArgumentLast(tree, ["workers", "join", "--json", "-", "--name", "lab-1"])).toEqual(["workers", "join", "--json", "--name", "lab-1", "-"])
    expect(withStdinArgumentLast(tree, ["workers", "join", "--name", "-", "TOKEN"])).toEqual(["workers", "join", "--name", "-", "TOKEN"])
    expect(withStdinArgumentLast(tree, ["workers", "join", "TOKEN", "--name", "x"])).toEqual(["workers", "join", "TOKEN", "--name", "x"])
    expect(withStdinArgumentLast(tree, ["workers", "join", "-", "--", "--name"])).toEqual(["workers", "join", "-", "--", "--name"])
  })
})

describe("a short option's value in the same word", () => {
  it("is split from it (-n1, as head and tail take it), for a short option that takes a value only", () => {
    expect(withShortValuesApart(tree, ["journal", "tail", "-n1"])).toEqual(["journal", "tail", "-n", "1"])
    expect(withShortValuesApart(tree, ["journal", "tail", "-n20", "-f"])).toEqual(["journal", "tail", "-n", "20", "-f"])
    expect(withShortValuesApart(tree, ["journal", "tail", "-n=3"])).toEqual(["journal", "tail", "-n", "3"])
    // -f takes no value: -fx is not -f x.
    expect(withShortValuesApart(tree, ["journal", "tail", "-fx"])).toEqual(["journal", "tail", "-fx"])
    expect(withShortValuesApart(tree, ["journal", "tail", "--lines", "3"])).toEqual(["journal", "tail", "--lines", "3"])
    expect(withShortValuesApart(tree, ["journal", "tail", "--", "-n1"])).toEqual(["journal", "tail", "--", "-n1"])
  })
})

describe("--json given, for a failure's document (bin.ts)", () => {
  it("is found among the command's own options, not in another option's value, past --, or for a command that has none", () => {
    expect(flagGiven(tree, ["runs", "list", "--json"], "--json")).toBe(true)
    expect(flagGiven(tree, ["--log-level", "debug", "runs", "stop", "r1", "--json"], "--json")).toBe(true)
    expect(flagGiven(tree, ["run", "a:b@1.0.0", "--input", "--json"], "--json")).toBe(false)
    expect(flagGiven(tree, ["run", "a:b@1.0.0", "--input=--json", "--json"], "--json")).toBe(true)
    expect(flagGiven(tree, ["runs", "show", "--", "--json"], "--json")).toBe(false)
    expect(flagGiven(tree, ["serve", "--json"], "--json")).toBe(false)
    expect(flagGiven(tree, ["runs", "list"], "--json")).toBe(false)
  })

  it("tells an option that takes a value from a flag (an empty word after a flag is not its value)", () => {
    expect(takesValue(tree, ["new", "--json", ""], "--json")).toBe(false)
    expect(takesValue(tree, ["workers", "invite", "--scope", ""], "--scope")).toBe(true)
    expect(takesValue(tree, ["journal", "tail", "-n", ""], "-n")).toBe(true)
  })

  it("says what failed: the refusal's own code, or the kind of failure by its exit code", () => {
    expect(failureJson({ exitCode: 1, message: "m", code: "unknown-run" })).toEqual({ error: { code: "unknown-run", message: "m", exitCode: 1 } })
    expect(failureJson({ exitCode: 1, message: "m" }).error.code).toBe("refused")
    expect(failureJson({ exitCode: 2, message: "m" }).error.code).toBe("usage")
    expect(failureJson({ exitCode: 2, message: "m", unreachable: true }).error.code).toBe("unreachable")
    expect(failureJson({ exitCode: 2, message: "m", setup: true }).error.code).toBe("setup")
    expect(failureJson({ exitCode: 143, message: "m" }).error.code).toBe("interrupted")
    expect(failureJson({ exitCode: 70, message: "m" }).error.code).toBe("internal")
  })
})
