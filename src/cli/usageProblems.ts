/**
 * Usage errors in svc's own words. @effect/cli says what it could not parse, but not where: a
 * mistyped subcommand of `svc workers` reads "Invalid subcommand for svc - use one of 'new',
 * 'bag', ...", an option given without its value reads as an unknown argument, and no message
 * names the command or where its usage is. Here the words given are walked through the command
 * tree, so the message names the command, the word at fault and what the command takes.
 */
import * as Args from "@effect/cli/Args"
import type * as Descriptor from "@effect/cli/CommandDescriptor"
import * as Options from "@effect/cli/Options"
import type * as Usage from "@effect/cli/Usage"
import * as Option from "effect/Option"

export interface OptionSpec {
  /** Its names, long first as the help shows them (`-n`, `--lines`). */
  readonly names: ReadonlyArray<string>
  /** What its value is (`text`, `integer`, `a | b`), or undefined for a flag that takes none. */
  readonly value: string | undefined
}

export interface CommandSpec {
  /** Its words from the root: `svc workers invite`. */
  readonly path: string
  readonly name: string
  readonly options: ReadonlyArray<OptionSpec>
  /** Its positional arguments as the help shows them (`<RUN>`), optional ones in brackets. */
  readonly args: ReadonlyArray<string>
  readonly commands: ReadonlyArray<CommandSpec>
}

/** Options every command takes from @effect/cli itself. */
const BUILT_IN: ReadonlyArray<OptionSpec> = [
  { names: ["-h", "--help"], value: undefined },
  { names: ["--version"], value: undefined },
  { names: ["--wizard"], value: undefined },
  { names: ["--completions"], value: "sh | bash | fish | zsh" },
  { names: ["--log-level"], value: "all | trace | debug | info | warning | error | fatal | none" }
]

const optionsOf = (usage: Usage.Usage): Array<OptionSpec> => {
  switch (usage._tag) {
    case "Named":
      return [{ names: usage.names, value: Option.getOrUndefined(usage.acceptedValues) }]
    case "Optional":
    case "Repeated":
      return optionsOf(usage.usage)
    case "Concat":
    case "Alternation":
      return [...optionsOf(usage.left), ...optionsOf(usage.right)]
    case "Empty":
    case "Mixed":
      return []
  }
}

const argsOf = (usage: Usage.Usage, optional = false): Array<string> => {
  switch (usage._tag) {
    case "Named":
      return usage.names.map((name) => (optional ? `[${name}]` : name))
    case "Optional":
      return argsOf(usage.usage, true)
    case "Repeated":
      return argsOf(usage.usage, optional).map((name) => `${name}...`)
    case "Concat":
    case "Alternation":
      return [...argsOf(usage.left, optional), ...argsOf(usage.right, optional)]
    case "Empty":
    case "Mixed":
      return []
  }
}

/**
 * The shape of a command descriptor as @effect/cli 0.x builds it (its internal instructions:
 * Standard, Map, Subcommands, GetUserInput). Read here and nowhere else; the tests walk svc's
 * whole tree, so a release that changes it fails them rather than svc's messages.
 */
type Instruction =
  | { readonly _tag: "Standard"; readonly name: string; readonly options: Options.Options<unknown>; readonly args: Args.Args<unknown> }
  | { readonly _tag: "GetUserInput"; readonly name: string }
  | { readonly _tag: "Map"; readonly command: Instruction }
  | { readonly _tag: "Subcommands"; readonly parent: Instruction; readonly children: ReadonlyArray<Instruction> }

const specOf = (instruction: Instruction, parentPath: string): CommandSpec => {
  switch (instruction._tag) {
    case "Standard": {
      const path = parentPath === "" ? instruction.name : `${parentPath} ${instruction.name}`
      return {
        path,
        name: instruction.name,
        options: optionsOf(Options.getUsage(instruction.options)),
        args: argsOf(Args.getUsage(instruction.args)),
        commands: []
      }
    }
    case "GetUserInput": {
      const path = parentPath === "" ? instruction.name : `${parentPath} ${instruction.name}`
      return { path, name: instruction.name, options: [], args: [], commands: [] }
    }
    case "Map":
      return specOf(instruction.command, parentPath)
    case "Subcommands": {
      const parent = specOf(instruction.parent, parentPath)
      return { ...parent, commands: instruction.children.map((child) => specOf(child, parent.path)) }
    }
  }
}

/** The command tree of `descriptor` (a `Command`'s `.descriptor`). */
export const commandTree = (descriptor: Descriptor.Command<unknown>): CommandSpec =>
  specOf(descriptor as unknown as Instruction, "")

const findOption = (command: CommandSpec, name: string): OptionSpec | undefined =>
  [...command.options, ...BUILT_IN].find((option) => option.names.includes(name))

const looksLikeOption = (word: string): boolean => /^--?[A-Za-z]/.test(word)

const optionList = (command: CommandSpec): string =>
  command.options.length === 0
    ? "it takes no options"
    : `its options: ${command.options.map((o) => (o.value === undefined ? o.names.join("/") : `${o.names.join("/")} VALUE`)).join(", ")}`

const quote = (word: string) => JSON.stringify(word)

/**
 * The command `args` (the words after `svc`) names, and where its own words start: each leading
 * word that names a subcommand steps into it.
 */
export const commandOf = (root: CommandSpec, args: ReadonlyArray<string>): { readonly command: CommandSpec; readonly rest: number } => {
  let command = root
  let at = 0
  for (;;) {
    // @effect/cli's own options may come before a command's name (`svc --log-level debug runs list`).
    let skip = at
    for (;;) {
      const word = args[skip]
      if (word === undefined || !word.startsWith("-")) break
      const [name, inline] = splitInline(word)
      const builtIn = BUILT_IN.find((o) => o.names.includes(name))
      if (builtIn === undefined) break
      skip += builtIn.value === undefined || inline !== undefined ? 1 : 2
    }
    const word = args[skip]
    const next = word === undefined || command.commands.length === 0 ? undefined : command.commands.find((c) => c.name === word)
    if (next === undefined) return { command, rest: at }
    command = next
    at = skip + 1
  }
}

/**
 * Whether the command the words name was given the flag `name` (`--json`) among its options: a
 * word in the place of another option's value (`--input --json`) is that value, not the flag.
 */
export const flagGiven = (root: CommandSpec, args: ReadonlyArray<string>, name: string): boolean => {
  const { command, rest } = commandOf(root, args)
  if (findOption(command, name) === undefined) return false
  const end = endOfOptions(args)
  for (let i = rest; i < end; i++) {
    const [word, inline] = splitInline(args[i]!)
    if (word === name) return true
    const option = looksLikeOption(word) ? findOption(command, word) : undefined
    if (option?.value !== undefined && inline === undefined) i++
  }
  return false
}

/** Whether the option `name` of the command the words name takes a value (an unknown one is taken to). */
export const takesValue = (root: CommandSpec, args: ReadonlyArray<string>, name: string): boolean => {
  const option = findOption(commandOf(root, args).command, name)
  return option === undefined || option.value !== undefined
}

/** Where the words that may be options end: at `--`, or the last word. */
const endOfOptions = (args: ReadonlyArray<string>): number => {
  const at = args.indexOf("--")
  return at < 0 ? args.length : at
}

/**
 * `args` with a short option's value given in the same word (`-n1`, as `head` and `tail` take it,
 * or `-n=1`, as `--lines=1`) split into two (`-n 1`), which is how @effect/cli reads it: it
 * refused `-n1` as an unknown option. Only a short option of the command that takes a value.
 * Pure: no I/O.
 */
export const withShortValuesApart = (root: CommandSpec, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const { command, rest } = commandOf(root, args)
  const end = endOfOptions(args)
  const out: Array<string> = [...args.slice(0, rest)]
  for (let i = rest; i < args.length; i++) {
    const word = args[i]!
    const m = i < end ? /^(-[A-Za-z])(.+)$/.exec(word) : null
    const option = m === null ? undefined : findOption(command, m[1]!)
    // `-n=3` as `--lines=3` reads (it was refused as "takes no arguments").
    if (m !== null && option !== undefined && option.value !== undefined) out.push(m[1]!, m[2]!.startsWith("=") ? m[2]!.slice(1) : m[2]!)
    else out.push(word)
  }
  return out
}

/**
 * `args` with a lone `-` (read it from stdin: `svc workers join -`) moved after the command's
 * options: @effect/cli stops looking for options at a word that starts with `-` and names none,
 * and refused `svc workers join - --name lab-1` as "unexpected argument --name". A `-` given as
 * an option's value stays where it is. Words after `--` are left alone. Pure: no I/O.
 */
export const withStdinArgumentLast = (root: CommandSpec, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const { command, rest } = commandOf(root, args)
  const end = endOfOptions(args)
  const moved: Array<number> = []
  for (let i = rest; i < end; i++) {
    if (args[i] !== "-") continue
    const before = i > rest ? args[i - 1]! : undefined
    const option = before !== undefined && looksLikeOption(before) && splitInline(before)[1] === undefined ? findOption(command, before) : undefined
    if (option?.value === undefined) moved.push(i)
  }
  if (moved.length === 0) return args
  const kept = args.slice(0, end).filter((_, i) => !moved.includes(i))
  return [...kept, ...moved.map(() => "-"), ...args.slice(end)]
}

/**
 * What is wrong with the words themselves, before any parsing: a word where a command is
 * expected that names none, an option the command does not take, an option without its value
 * (@effect/cli reads `--scope` at the end as no --scope at all, and for `svc workers invite` that
 * means every job), a value given to a flag. One sentence that starts with the command's words
 * (`svc workers invite: ...`) and ends with where its usage is; undefined when none of these.
 * Pure: no I/O.
 */
export const wordsProblem = (root: CommandSpec, args: ReadonlyArray<string>): string | undefined => {
  const { command, rest } = commandOf(root, args)
  const words = args.slice(rest)
  const help = `${command.path} --help`
  if (command.commands.length > 0 && command.args.length === 0 && words[0] !== undefined && !looksLikeOption(words[0])) {
    return `${command.path}: ${quote(words[0])} is not a command; its commands: ${command.commands.map((c) => c.name).join(", ")} (${help})`
  }
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (word === "--") break
    if (!looksLikeOption(word)) continue
    const [name, inline] = splitInline(word)
    const option = findOption(command, name)
    if (option === undefined) {
      const commandNamed = command.commands.find((c) => c.name === name.replace(/^-+/, ""))
      const hint = commandNamed !== undefined ? ` (did you mean the command ${commandNamed.path}?)` : ""
      return `${command.path}: unknown option ${name}${hint}; ${optionList(command)} (${help})`
    }
    if (option.value === undefined) {
      if (inline !== undefined && inline !== "true" && inline !== "false") {
        return `${command.path}: ${name} takes no value, and was given ${quote(inline)} (${help})`
      }
      continue
    }
    if (inline !== undefined) continue
    const value = words[i + 1]
    if (value === undefined || (looksLikeOption(value) && findOption(command, splitInline(value)[0]) !== undefined)) {
      return `${command.path}: ${name} needs a value (${option.value}) (${help})`
    }
    i++
  }
  return undefined
}

/**
 * @effect/cli's account of a usage problem (`cliText`) reworded for the command `args` name:
 * which option a value of the wrong type was given to, which argument is missing, which word is
 * one too many. Pure: no I/O.
 */
export const parseProblem = (root: CommandSpec, args: ReadonlyArray<string>, cliText: string): string => {
  const { command, rest } = commandOf(root, args)
  const words = args.slice(rest)
  const help = `${command.path} --help`
  const text = cliText.trim()
  if (/^Invalid subcommand for .* - use one of /.test(text) && command.commands.length > 0) {
    return `${command.path} needs one of its commands: ${command.commands.map((c) => c.name).join(", ")} (${help})`
  }
  const unknown = /^Received unknown argument: '(.*)'$/s.exec(text)
  if (unknown !== null) {
    const takes = command.args.length === 0 ? "it takes no arguments" : `it takes ${command.args.join(" ")}`
    return `${command.path}: unexpected argument ${quote(unknown[1]!)}; ${takes} (${help})`
  }
  const missing = /^Missing argument (<.*>)$/s.exec(text)
  if (missing !== null) return `${command.path}: ${missing[1]} is missing (${help})`
  const badValue = /^'(.*)' is not an? (.*)$/s.exec(text)
  if (badValue !== null) {
    const option = optionGiven(command, words, badValue[1]!)
    return `${command.path}: ${option === undefined ? "" : `${option} takes `}${article(badValue[2]!)} ${badValue[2]!}, not ${quote(badValue[1]!)} (${help})`
  }
  const notDirectory = /^Expected path '(.*)' to be a directory$/s.exec(text)
  if (notDirectory !== null) return `${command.path}: ${notDirectory[1]} is not a directory (${help})`
  const cases = /^Expected one of the following cases: (.*)$/s.exec(text)
  if (cases !== null) {
    return `${command.path}: expected one of ${cases[1]!.trim()}${suffixOf(command, words, cases[1]!)} (${help})`
  }
  return `${command.path}: ${text} (${help})`
}

const splitInline = (word: string): readonly [string, string | undefined] => {
  const eq = word.indexOf("=")
  return eq < 0 ? [word, undefined] : [word.slice(0, eq), word.slice(eq + 1)]
}

const article = (noun: string) => (/^[aeiou]/i.test(noun) ? "an" : "a")

/** The option among `words` whose value is `value`, as given (`-n`, `--limit`). */
const optionGiven = (command: CommandSpec, words: ReadonlyArray<string>, value: string): string | undefined => {
  for (let i = 0; i < words.length; i++) {
    const [name, inline] = splitInline(words[i]!)
    if (findOption(command, name)?.value === undefined) continue
    if (inline === value || (inline === undefined && words[i + 1] === value)) return name
  }
  return undefined
}

/** `, not "x" for --state` when one of the command's options with these choices was given "x". */
const suffixOf = (command: CommandSpec, words: ReadonlyArray<string>, cases: string): string => {
  const choices = cases.split(",").map((c) => c.trim())
  for (let i = 0; i < words.length; i++) {
    const [name, inline] = splitInline(words[i]!)
    const option = findOption(command, name)
    if (option?.value === undefined) continue
    const value = inline ?? words[i + 1]
    if (value !== undefined && !choices.includes(value)) return ` for ${name}, not ${quote(value)}`
  }
  return ""
}

/**
 * @effect/cli's help for the command `path` (`svc workers invite`), tidied: its usage line names
 * the command from `svc` (it showed `$ invite`), a repeatable option reads as optional there
 * (`[--scope text]...`: zero or more), and the lines that only restate an option's type
 * ("A user-defined piece of text.", "A true or false value.", "An integer.", "A directory.") go,
 * the type being on the option's own line or in the argument's description. Pure: text in, text out.
 */
export const tidyHelp = (text: string, path: string): string => {
  const usageAt = text.indexOf("\n$ ")
  let tidy = text
  if (usageAt >= 0) {
    const end = tidy.indexOf("\n", usageAt + 1)
    const line = tidy.slice(usageAt + 1, end < 0 ? undefined : end)
    const rest = line.slice(2).replace(/^\S+/, "")
    tidy = tidy.slice(0, usageAt + 1) + optionalRepeats(`$ ${path}${rest}`) + (end < 0 ? "" : tidy.slice(end))
  }
  // The commands a group lists, each with its usage: the same for their repeatable options.
  tidy = tidy.replace(/^( {2}- .*)$/gm, (line) => optionalRepeats(line))
  tidy = tidy.replace(/\n {2}(A user-defined piece of text|A true or false value|An integer|A directory)\.\n\n/g, "\n")
  // @effect/cli's own options, in every command's help: said once, in svc --help.
  return path === "svc" ? tidy : withoutBlocks(tidy, BUILT_IN_BLOCKS)
}

/** `--scope text...` as `[--scope text]...`: a repeatable option may be given no times at all. */
const optionalRepeats = (line: string): string =>
  line.replace(/(?<!\[)(--[A-Za-z][\w-]*(?: [^\s[\]()|]+(?: \| [^\s[\]()|]+)*)?)\.\.\./g, "[$1]...")

/** @effect/cli's own options but --help, by their long names: the blocks each command's help repeats. */
const BUILT_IN_BLOCKS = BUILT_IN.flatMap((o) => o.names.filter((n) => n.startsWith("--") && n !== "--help"))

/** The help without the option blocks (a header line, then its indented lines) whose header starts with one of `names`. */
const withoutBlocks = (text: string, names: ReadonlyArray<string>): string => {
  const out: Array<string> = []
  let skipping = false
  for (const line of text.split("\n")) {
    const header = line !== "" && !line.startsWith(" ")
    if (header) skipping = names.some((name) => line === name || line.startsWith(`${name} `))
    if (!skipping) out.push(line)
  }
  return out.join("\n")
}
