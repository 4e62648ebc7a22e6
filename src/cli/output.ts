/** Printing: one JSON document for `--json`, plain lines otherwise. */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

export const printLines = (lines: ReadonlyArray<string>) => Effect.forEach(lines, (line) => Console.log(line), { discard: true })

/** Left-aligned columns for listings. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(header), ...rows.map(line)]
}
