import { isMap } from "../internal/schemaKit.js"

export { isMap }

/** Entries of a map, or none when the value is not a map (the schema reports that). */
export const entriesOf = (value: unknown): ReadonlyArray<readonly [string, unknown]> =>
  isMap(value) ? Object.entries(value) : []

export const listOf = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

export const has = (value: unknown, key: string): boolean => isMap(value) && Object.prototype.hasOwnProperty.call(value, key)

export const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

export const quote = (s: string): string => JSON.stringify(s)

/** The agent hooks and where they stand: a bare `hooks` list is a second spelling of `hooks.agent`. */
export const agentHooks = (hooks: unknown): { readonly list: ReadonlyArray<unknown>; readonly path: ReadonlyArray<string> } | undefined =>
  Array.isArray(hooks) ? { list: hooks, path: ["hooks"] } : isMap(hooks) ? { list: listOf(hooks["agent"]), path: ["hooks", "agent"] } : undefined
