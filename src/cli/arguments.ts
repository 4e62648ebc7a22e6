/**
 * Arguments no svc command takes, refused before the command tree sees them. An empty
 * argument is what `--scope "$SCOPE"` gives with SCOPE unset; @effect/cli reads
 * `--scope ""` as no --scope at all, which for `svc workers invite` means every job.
 */

/** The levels `--log-level` takes (@effect/cli's built-in option). */
export const LOG_LEVELS = ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"] as const

/**
 * Why `args` (the words after `svc`) cannot be taken as given, or undefined. `takesValue` says
 * whether an option of the command takes a value: an empty word after a flag (`svc new --json ""`)
 * is not that flag's value (it was blamed on `--json`).
 */
export const argumentsProblem = (args: ReadonlyArray<string>, takesValue: (option: string) => boolean = () => true): string | undefined => {
  // The parser said an unknown level as "Invalid subcommand for svc".
  for (let i = 0; i < args.length && args[i] !== "--"; i++) {
    const word = args[i]!
    const level = word === "--log-level" ? args[i + 1] : word.startsWith("--log-level=") ? word.slice("--log-level=".length) : undefined
    if ((word === "--log-level" || level !== undefined) && !(LOG_LEVELS as ReadonlyArray<string>).includes(level ?? "")) {
      return `--log-level takes one of ${LOG_LEVELS.join(", ")}${level === undefined ? "" : `, not ${JSON.stringify(level)}`}`
    }
  }
  const at = args.indexOf("")
  if (at < 0) return undefined
  const before = at > 0 ? args[at - 1]! : undefined
  return before !== undefined && before.startsWith("-") && takesValue(before.split("=")[0]!)
    ? `${before} was given an empty value (an unset shell variable?): give it one, or leave ${before} out`
    : `an empty argument was given${before === undefined ? "" : ` after ${before}`} (an unset shell variable?): no svc command takes one`
}

/**
 * `args` with svc's own options (`--log-level LEVEL`, `--log-level=LEVEL`) moved to the front,
 * where @effect/cli takes them: after a command (`svc serve --log-level debug`, as a unit file
 * would put it) it refused them as "it takes no arguments". Words after `--` are left alone.
 */
export const withGlobalOptionsFirst = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const front: Array<string> = []
  const rest: Array<string> = []
  let i = 0
  for (; i < args.length; i++) {
    const word = args[i]!
    if (word === "--") break
    if (word === "--log-level" && i + 1 < args.length) {
      front.push(word, args[++i]!)
    } else if (word.startsWith("--log-level=")) {
      front.push(word)
    } else {
      rest.push(word)
    }
  }
  return [...front, ...rest, ...args.slice(i)]
}
