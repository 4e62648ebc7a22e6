/**
 * What `JSON.parse` lets through and a worker's message must not hold: the same key twice in one
 * object (the last would silently win: `{"kind":"claim","kind":"bye"}` ended a session), and
 * strings shaped as svc secrets (they would be journaled, shown and echoed). Pure: text and
 * values in, the place at fault out.
 */
import { holdsSecret, withoutSecrets } from "./Secrets.js"

/** A key path as messages write it: `outcome.result.a`, `labels[2]` (a top-level key alone: `kind`). */
/** `a.b`, or `a["b c"]` for a key that is not one plain word (a control character or a line end in a key was printed as it was). */
const joinPath = (path: string, key: string): string => (/^[A-Za-z0-9_-]+$/.test(key) ? (path === "" ? key : `${path}.${key}`) : `${path}[${JSON.stringify(key)}]`)

interface Frame {
  readonly path: string
  /** An object's keys so far; null for an array. */
  readonly keys: Set<string> | null
  /** In an object: the next string is a key. */
  expectKey: boolean
  /** The key or index whose value comes next. */
  at: string
  index: number
}

/**
 * The path of the first key that appears twice in one object of `text`, or undefined. `text`
 * must be JSON that `JSON.parse` accepted: only its structure is followed here.
 */
export const duplicateKeyIn = (text: string): string | undefined => {
  const stack: Array<Frame> = []
  const childPath = (): string => {
    const top = stack[stack.length - 1]
    if (top === undefined) return ""
    return top.keys === null ? `${top.path}[${top.index}]` : joinPath(top.path, top.at)
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const path = childPath()
      stack.push({ path, keys: c === 0x7b ? new Set() : null, expectKey: c === 0x7b, at: "", index: 0 })
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop()
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1]
      if (top !== undefined) {
        if (top.keys === null) top.index++
        else top.expectKey = true
      }
    } else if (c === 0x22 /* " */) {
      let end = i + 1
      let escaped = false
      while (end < text.length) {
        const d = text.charCodeAt(end)
        if (d === 0x5c /* \ */) {
          escaped = true
          end += 2
          continue
        }
        if (d === 0x22) break
        end++
      }
      const top = stack[stack.length - 1]
      if (top !== undefined && top.keys !== null && top.expectKey) {
        const raw = text.slice(i + 1, end)
        const key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : raw
        if (top.keys.has(key)) return joinPath(top.path, key)
        top.keys.add(key)
        top.at = key
        top.expectKey = false
      }
      i = end
    }
  }
  return undefined
}

/**
 * The path of the first string (value or key) in `value` shaped as an svc credential or join
 * token, or undefined. `skip`: keys of the top-level object not looked into. A walk with a stack
 * of its own, not recursion: a body of 64 KiB can nest 30,000 levels, and recursing that deep
 * overflowed the call stack and stopped the owner (before authentication).
 */
export const secretPlaceIn = (value: unknown, skip: ReadonlySet<string> = new Set()): string | undefined => {
  const stack: Array<{ readonly v: unknown; readonly path: string; readonly top: boolean }> = [{ v: value, path: "", top: true }]
  while (stack.length > 0) {
    const { v, path, top } = stack.pop()!
    if (typeof v === "string") {
      if (holdsSecret(v)) return path
    } else if (Array.isArray(v)) {
      // Pushed last first: the first item is looked at first, as a reader would.
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}[${i}]`, top: false })
    } else if (typeof v === "object" && v !== null) {
      const keys = Object.keys(v)
      for (const key of keys) if (holdsSecret(key) && !(top && skip.has(key))) return `${withoutSecrets(joinPath(path, key))} (its name)`
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        if (top && skip.has(key)) continue
        stack.push({ v: (v as Record<string, unknown>)[key], path: joinPath(path, key), top: false })
      }
    }
  }
  return undefined
}
