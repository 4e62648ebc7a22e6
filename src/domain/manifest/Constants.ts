/**
 * Constants substitution (spec, rule 6): before validation, a value written as
 * `{constant: NAME}` or `{constant: BAG:NAME}` is replaced whole by the constant's value.
 * Strings such as `${API_KEY}` are left alone. Another bag's constant is resolved only where
 * that bag is installed (`svc bag show`); here it is enough that the bag is composed or
 * required, and the place it stands is left out of validation.
 */
import { error, type KeyPath, type Problem } from "./Problem.js"
import { isMap } from "./internal/schemaKit.js"
import { suggest } from "./internal/suggest.js"

export interface ExternalConstant {
  readonly path: KeyPath
  readonly bag: string
  readonly name: string
}

/**
 * Looks up another bag's constant where bags are installed: `undefined` when that bag or
 * constant is not there. Without a resolver (plain `svc bag check`), other bags' constants
 * stay unresolved and their places are left out of validation.
 */
export type ConstantResolver = (bag: string, name: string) => { readonly value: unknown } | typeof UNRESOLVED | undefined

/**
 * A resolver's answer for a bag it does not look at: the place stays unresolved, as without a
 * resolver (`svc bag check` of a composition resolves its children's constants, not the
 * machine's installed bags).
 */
export const UNRESOLVED = { unresolved: true } as const

export interface Substitution {
  readonly value: Record<string, unknown>
  readonly problems: ReadonlyArray<Problem>
  readonly external: ReadonlyArray<ExternalConstant>
  /** Places whose value is unknown here (another bag's constant, or a broken reference): not validated further. */
  readonly opaque: ReadonlyArray<KeyPath>
  /** Places given a constant's value, and which (`obj`, `other:obj`): a problem inside says where the value came from. */
  readonly substituted: ReadonlyArray<{ readonly path: KeyPath; readonly constant: string }>
}

/** `{constant: X}`: a map whose only key is `constant`. */
export const constantReference = (value: unknown): unknown | undefined =>
  isMap(value) && Object.keys(value).length === 1 && "constant" in value ? value["constant"] : undefined

/** Bags this manifest composes (`bags`) or requires (`requires`): whose constants it may use. */
export const relatedBags = (raw: Record<string, unknown>): ReadonlySet<string> => {
  const names = new Set<string>()
  const bags = raw["bags"]
  if (Array.isArray(bags)) for (const b of bags) typeof b === "string" && names.add(b)
  else if (isMap(bags)) for (const b of Object.keys(bags)) names.add(b)
  const requires = raw["requires"]
  if (isMap(requires)) for (const b of Object.keys(requires)) names.add(b)
  return names
}

export const substituteConstants = (raw: Record<string, unknown>, resolver?: ConstantResolver): Substitution => {
  const constants = isMap(raw["constants"]) ? raw["constants"] : {}
  const own = typeof raw["name"] === "string" ? raw["name"] : undefined
  const related = relatedBags(raw)
  const problems: Array<Problem> = []
  const external: Array<ExternalConstant> = []
  const opaque: Array<KeyPath> = []
  const substituted: Array<{ readonly path: KeyPath; readonly constant: string }> = []

  const resolve = (ref: unknown, path: KeyPath): unknown => {
    if (typeof ref !== "string" || ref.length === 0) {
      problems.push(error(path, "a constant reference must name a constant: {constant: NAME} or {constant: BAG:NAME}"))
      opaque.push(path)
      return { constant: ref }
    }
    const colon = ref.indexOf(":")
    const bag = colon > 0 ? ref.slice(0, colon) : undefined
    const name = colon > 0 ? ref.slice(colon + 1) : ref
    if (bag !== undefined && bag !== own) {
      if (!related.has(bag)) {
        problems.push(
          error(path, `uses constant ${JSON.stringify(name)} of bag ${JSON.stringify(bag)}, which this bag neither composes (bags) nor requires (requires)`)
        )
      }
      external.push({ path, bag, name })
      if (resolver !== undefined) {
        const found = resolver(bag, name)
        if (found !== undefined && "value" in found) {
          substituted.push({ path, constant: ref })
          return found.value
        }
        if (found === undefined) problems.push(error(path, `constant ${JSON.stringify(name)} of bag ${JSON.stringify(bag)} is not available: that bag is not installed or defines no such constant`))
      }
      opaque.push(path)
      return { constant: ref }
    }
    if (!Object.prototype.hasOwnProperty.call(constants, name)) {
      const hint = suggest(name, Object.keys(constants))
      problems.push(
        error(path, `constant ${JSON.stringify(name)} is not defined under constants${hint === undefined ? "" : `; did you mean ${JSON.stringify(hint)}?`}`)
      )
      opaque.push(path)
      return { constant: ref }
    }
    substituted.push({ path, constant: name })
    return constants[name]
  }

  const walk = (value: unknown, path: KeyPath): unknown => {
    const ref = constantReference(value)
    if (ref !== undefined) return resolve(ref, path)
    if (Array.isArray(value)) {
      let out: Array<unknown> | undefined
      for (let i = 0; i < value.length; i++) {
        const next = walk(value[i], [...path, i])
        if (next !== value[i]) (out ??= value.slice())[i] = next
      }
      return out ?? value
    }
    if (isMap(value)) {
      let out: Record<string, unknown> | undefined
      for (const key of Object.keys(value)) {
        const next = walk(value[key], [...path, key])
        if (next !== value[key]) (out ??= { ...value })[key] = next
      }
      return out ?? value
    }
    return value
  }

  const value: Record<string, unknown> = {}
  for (const key of Object.keys(raw)) {
    // The constants' own values are data, not manifest: they are not substituted into.
    value[key] = key === "constants" ? raw[key] : walk(raw[key], [key])
  }
  return { value, problems, external, opaque, substituted }
}
