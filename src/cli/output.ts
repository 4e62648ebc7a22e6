/** Printing: one JSON document for `--json`, plain lines otherwise. */
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/** The `--json` option every listing and status command takes (design.md, CLI contract). */
export const json = Options.boolean("json").pipe(Options.withDescription("print one JSON document on stdout"))

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

export const printLines = (lines: ReadonlyArray<string>) => Effect.forEach(lines, (line) => Console.log(line), { discard: true })

/** Left-aligned columns for listings. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(header), ...rows.map(line)]
}

/** Colour and style escapes (SGR): what @effect/cli puts in its help and usage messages. */
const SGR = /\u001b\[[0-9;]*m/g
export const withoutColour = (text: unknown): unknown => (typeof text === "string" ? text.replace(SGR, "") : text)

/**
 * `effect` with its console's text stripped of colour: for a pipe or a file, or when NO_COLOR is
 * set (no-color.org), the help and usage messages come as plain text.
 */
export const plainText = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => mapText(effect, withoutColour)

/** `effect` with every text it prints through its console passed through `f` first. */
export const mapText = <A, E, R>(effect: Effect.Effect<A, E, R>, f: (text: unknown) => unknown): Effect.Effect<A, E, R> =>
  Console.consoleWith((c) => {
    const through = (print: (...args: ReadonlyArray<unknown>) => Effect.Effect<void>) => (...args: ReadonlyArray<unknown>) => print(...args.map(f))
    const throughUnsafe = (print: (...args: ReadonlyArray<unknown>) => void) => (...args: ReadonlyArray<unknown>) => print(...args.map(f))
    return Console.withConsole(effect, {
      ...c,
      log: through(c.log),
      error: through(c.error),
      unsafe: { ...c.unsafe, log: throughUnsafe(c.unsafe.log), error: throughUnsafe(c.unsafe.error) }
    })
  })
