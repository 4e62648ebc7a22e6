/**
 * Other bags' constants: resolved at install from the installed bags, then pinned in the
 * install record, so an installed bag keeps meaning what it meant when it was installed (like a
 * lockfile); `svc bag show` says when the source has since changed or gone.
 */
import type { ConstantResolver } from "../../domain/manifest/Constants.js"
import type { InstalledBag, PinnedConstant } from "./BagStore.js"

const has = (o: Readonly<Record<string, unknown>>, k: string) => Object.prototype.hasOwnProperty.call(o, k)

/** Resolves from what is installed now. */
export const installedResolver = (installed: ReadonlyArray<InstalledBag>): ConstantResolver => (bag, name) => {
  const source = installed.find((b) => b.name === bag)
  return source !== undefined && has(source.constants, name) ? { value: source.constants[name] } : undefined
}

/** Resolves from the values pinned when the bag was installed. */
export const pinnedResolver = (pinned: ReadonlyArray<PinnedConstant>): ConstantResolver => (bag, name) => {
  const found = pinned.find((p) => p.bag === bag && p.name === name)
  return found === undefined ? undefined : { value: found.value }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** What changed since install, in words for `show` and `doctor`. */
export const pinDrift = (bag: InstalledBag, installed: ReadonlyArray<InstalledBag>): Array<string> =>
  bag.pinnedConstants.flatMap((pin) => {
    const source = installed.find((b) => b.name === pin.bag)
    if (source === undefined) return [`uses constant ${pin.name} of bag ${pin.bag}, which is no longer installed (the value pinned at install is used)`]
    if (!has(source.constants, pin.name)) return [`uses constant ${pin.name} of bag ${pin.bag}, which no longer defines it (the value pinned at install is used)`]
    if (!same(source.constants[pin.name], pin.value)) return [`constant ${pin.name} of bag ${pin.bag} changed since install; reinstall ${bag.name} to use the new value`]
    return []
  })
