/**
 * What `JSON.parse` lets through and a worker's message must not hold: the same key twice in one
 * object (the last would silently win: `{"kind":"claim","kind":"bye"}` ended a session), and
 * strings shaped as svc secrets (they would be journaled, shown and echoed). Pure: text and
 * values in, the place at fault out.
 */
import { withoutSecrets } from "./Secrets.js"

/** A key path as messages write it: `outcome.result.a`, `labels[2]`; the body itself is `(the body)`. */
const joinPath = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`)

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

const SECRET = /svc_(wk|jt)_[A-Za-z0-9]/

/**
 * The path of the first string (value or key) in `value` shaped as an svc credential or join
 * token, or undefined. `skip`: keys of the top-level object not looked into.
 */
export const secretPlaceIn = (value: unknown, skip: ReadonlySet<string> = new Set()): string | undefined => {
  const walk = (v: unknown, path: string, top: boolean): string | undefined => {
    if (typeof v === "string") return SECRET.test(v) ? path : undefined
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const found = walk(v[i], `${path}[${i}]`, false)
        if (found !== undefined) return found
      }
      return undefined
    }
    if (typeof v === "object" && v !== null) {
      for (const key of Object.keys(v)) {
        if (top && skip.has(key)) continue
        const at = joinPath(path, key)
        if (SECRET.test(key)) return `${withoutSecrets(at)} (its name)`
        const found = walk((v as Record<string, unknown>)[key], at, false)
        if (found !== undefined) return found
      }
    }
    return undefined
  }
  return walk(value, "", true)
}
