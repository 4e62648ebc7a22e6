/**
 * Reads bag.yaml text into a plain value and turns key paths back into line and column.
 * YAML traps are problems, not crashes: syntax errors, duplicate keys (`uniqueKeys`), several
 * documents in one file, and alias bombs (`maxAliasCount`) all come back with a position.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from "yaml"
import { error, type KeyPath, type Problem } from "../../domain/manifest/Problem.js"

export interface Position {
  readonly line: number
  readonly column: number
}

export interface ParsedManifest {
  /** The document as plain data; undefined when YAML itself failed. */
  readonly value: unknown
  /** YAML-level problems, already positioned. */
  readonly problems: ReadonlyArray<LocatedProblem>
  readonly locate: (path: KeyPath, at: "key" | "value") => Position
}

export interface LocatedProblem extends Problem, Position {}

/** At most this many alias expansions: a few are legitimate reuse, thousands are an attack. */
export const MAX_ALIAS_COUNT = 100

export const parseManifest = (text: string): ParsedManifest => {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: true, strict: true })
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset)
    return { line, column: col }
  }
  const locate = (path: KeyPath, where: "key" | "value") => locateIn(doc, path, where, at)
  const reported: Array<LocatedProblem> = doc.errors.map((e) => {
    const [start] = e.linePos ?? [{ line: 1, col: 1 }]
    // A duplicate key names its own key path, like every other problem.
    const path = e.code === "DUPLICATE_KEY" ? (keyPathAt(doc.contents, e.pos[0]) ?? []) : []
    return { ...error(path, yamlMessage(e.code, e.message), path.length > 0 ? "key" : "value"), line: start.line, column: start.col }
  })
  // Too deep to read: said once (the reader reported its overflow at every level it gave up at).
  const tooDeep = reported.find((p) => p.message === TOO_DEEP)
  const yamlProblems: Array<LocatedProblem> = tooDeep === undefined ? reported : [tooDeep]
  // A `%YAML 1.1` directive would read the file by YAML 1.1's rules (merge keys, `off` a boolean,
  // `010` octal, `1:30` sexagesimal): bag.yaml is YAML 1.2, whatever it says.
  const directive = doc.directives?.yaml
  if (directive !== undefined && directive.explicit === true && directive.version !== "1.2") {
    const offset = Math.max(0, text.indexOf("%YAML"))
    yamlProblems.push({ ...error([], `YAML syntax: a %YAML ${directive.version} directive: bag.yaml is read as YAML 1.2 (its merge keys, yes/no/on/off booleans, octal 010 and 1:30 as a number are not taken); remove the directive`), ...at(offset) })
  }
  // A tag the YAML 1.2 core schema does not know (`!!js/function`, `!foo`) was dropped without a word, its value kept as a string.
  for (const w of doc.warnings) {
    if (w.code !== "TAG_RESOLVE_FAILED") continue
    // The value tagged begins after the tag and the spaces that follow it.
    let value = w.pos[1]
    while (value < text.length && (text[value] === " " || text[value] === "\t")) value++
    const path = keyPathAt(doc.contents, value) ?? []
    const tag = /Unresolved tag: (\S+)/.exec(w.message)?.[1] ?? "?"
    yamlProblems.push({ ...error(path, `YAML tag ${tag.replace(/^tag:yaml\.org,2002:/, "!!")} is not one bag.yaml takes (it holds plain values: leave the tag out)`), ...at(w.pos[0]) })
  }
  if (yamlProblems.length > 0) return { value: undefined, problems: yamlProblems, locate }
  try {
    return { value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }), problems: [], locate }
  } catch (e) {
    if (e instanceof ReferenceError && /excessive alias/i.test(e.message)) {
      const message = `YAML aliases expand more than ${MAX_ALIAS_COUNT} times; a manifest this repetitive is refused as a resource-exhaustion risk`
      return { value: undefined, problems: [{ ...error([], message), line: 1, column: 1 }], locate }
    }
    // An alias with no anchor before it (`*nope`): say so, at the alias.
    const unresolved = e instanceof ReferenceError ? /^Unresolved alias.*: (.*)$/.exec(e.message) : null
    if (unresolved !== null) {
      const source = unresolved[1]!
      let offset = 0
      visit(doc, {
        Alias: (_key, node) => {
          if (node.source === source && node.range) {
            offset = node.range[0]
            return visit.BREAK
          }
          return undefined
        }
      })
      const message = `YAML alias *${source} has no anchor &${source} before it`
      return { value: undefined, problems: [{ ...error(keyPathAt(doc.contents, offset) ?? [], message), ...at(offset) }], locate }
    }
    const message = e instanceof RangeError && /Maximum call stack size exceeded/.test(e.message) ? TOO_DEEP : `YAML could not be read: ${e instanceof Error ? e.message : String(e)}`
    return { value: undefined, problems: [{ ...error([], message), line: 1, column: 1 }], locate }
  }
}

/** What the YAML reader's own stack overflow means: a document nested past what it reads by recursion. */
const TOO_DEEP = "bag.yaml nests too deep to be read (maps and lists within each other, a thousand levels or so; a manifest nests a few)"

const yamlMessage = (code: string, message: string): string => {
  if (/Maximum call stack size exceeded/.test(message)) return TOO_DEEP
  const first = message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")
  switch (code) {
    case "DUPLICATE_KEY":
      return "duplicate key: each key may appear only once in a map"
    case "MULTIPLE_DOCS":
      return "bag.yaml must hold a single YAML document"
    default:
      return `YAML syntax: ${first}`
  }
}

const locateIn = (
  doc: Document,
  path: KeyPath,
  where: "key" | "value",
  at: (offset: number) => Position
): Position => {
  let node: unknown = doc.contents
  let best: number = rangeStart(node) ?? 0
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc)
    const segment = path[i]
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(segment))
      if (pair === undefined) break
      const keyStart = rangeStart(pair.key)
      if (i === path.length - 1 && where === "key" && keyStart !== undefined) return at(keyStart)
      node = pair.value
      best = rangeStart(node) ?? keyStart ?? best
      if (rangeStart(node) === undefined) break
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment]
      if (item === undefined) break
      node = item
      best = rangeStart(node) ?? best
    } else break
  }
  return at(best)
}

/** The key path of the map key or value that starts at `offset` (a duplicate key, an alias). */
const keyPathAt = (node: unknown, offset: number, path: KeyPath = []): KeyPath | undefined => {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
      const keyRange = (pair.key as Node | null)?.range
      if (keyRange != null && keyRange[0] === offset) return [...path, key]
      const inner = keyPathAt(pair.value, offset, [...path, key])
      if (inner !== undefined) return inner
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const inner = keyPathAt(node.items[i], offset, [...path, i])
      if (inner !== undefined) return inner
    }
  }
  const range = (node as Node | null)?.range
  return range != null && range[0] === offset && path.length > 0 ? path : undefined
}

const rangeStart = (node: unknown): number | undefined => {
  const range = (node as Node | null)?.range
  return Array.isArray(range) ? range[0] : undefined
}
