/**
 * Arguments no svc command takes, refused before the command tree sees them. An empty
 * argument is what `--scope "$SCOPE"` gives with SCOPE unset; @effect/cli reads
 * `--scope ""` as no --scope at all, which for `svc workers invite` means every job.
 */

/** Why `args` (the words after `svc`) cannot be taken as given, or undefined. */
export const argumentsProblem = (args: ReadonlyArray<string>): string | undefined => {
  const at = args.indexOf("")
  if (at < 0) return undefined
  const before = at > 0 ? args[at - 1]! : undefined
  return before !== undefined && before.startsWith("-")
    ? `${before} was given an empty value (an unset shell variable?): give it one, or leave ${before} out`
    : `an empty argument was given${before === undefined ? "" : ` after ${before}`} (an unset shell variable?): no svc command takes one`
}
