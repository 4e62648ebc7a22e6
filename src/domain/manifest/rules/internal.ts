import { isMap } from "../internal/schemaKit.js"

export { isMap }

/** Entries of a map, or none when the value is not a map (the schema reports that). */
export const entriesOf = (value: unknown): ReadonlyArray<readonly [string, unknown]> =>
  isMap(value) ? Object.entries(value) : []

export const listOf = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

export const has = (value: unknown, key: string): boolean => isMap(value) && Object.prototype.hasOwnProperty.call(value, key)

export const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

export const quote = (s: string): string => JSON.stringify(s)
