/** store, stores, snapshots, restores (spec: "store and stores", "snapshots and restores"). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

describe("store", () => {
  it("accepts a single store with its hooks under default", () => {
    const m = valid(
      doc(
        "store:",
        "  owned_by: identity",
        "  engine: sqlite",
        "  migrations: db/migrations",
        "snapshots:",
        "  default: {entry: db/snapshot.js}",
        "restores:",
        "  default: {entry: db/restore.mjs}"
      )
    )
    expect(m.store).toEqual({ owned_by: "identity", engine: "sqlite", migrations: "db/migrations" })
  })

  rejects([
    { name: "an unknown owner", yaml: doc("store: {owned_by: user, engine: sqlite, migrations: m}"), path: "store.owned_by", line: 3, message: "must be one of identity, node" },
    { name: "an engine other than sqlite", yaml: doc("store: {owned_by: node, engine: postgres, migrations: m}"), path: "store.engine", line: 3, message: "must be one of sqlite" },
    { name: "a store without owned_by", yaml: doc("store: {engine: sqlite, migrations: m}"), path: "store.owned_by", line: 3, message: "is required" },
    { name: "a store without engine", yaml: doc("store: {owned_by: node, migrations: m}"), path: "store.engine", line: 3, message: "is required" },
    { name: "a store without migrations", yaml: doc("store: {owned_by: node, engine: sqlite}"), path: "store.migrations", line: 3, message: "is required" },
    { name: "migrations outside the bag", yaml: doc("store: {owned_by: node, engine: sqlite, migrations: ../m}"), path: "store.migrations", line: 3, message: "must be a relative path inside the bag" },
    { name: "an unknown store key", yaml: doc("store:", "  owned_by: node", "  engine: sqlite", "  migrations: m", "  path: db.sqlite"), path: "store.path", line: 7, message: 'unknown key "path"' }
  ])

  it("refuses store together with stores, once", () => {
    fails(
      doc("store: {owned_by: node, engine: sqlite, migrations: m}", "stores:", "  cache: {owned_by: node, engine: sqlite, migrations: c}"),
      { path: "stores", line: 5, message: "cannot be declared together with store" }
    )
  })
})

describe("stores", () => {
  it.each(["main", "cache-2", "a_b", "9lives", "x"])("accepts the store name %s", (name) => {
    const m = valid(doc("stores:", `  ${name}: {owned_by: node, engine: sqlite, migrations: m}`))
    expect(Object.keys(m.stores ?? {})).toEqual([name])
  })

  it.each([
    ["Main", "stores.Main"],
    ["_cache", "stores._cache"],
    ["-x", "stores.-x"],
    ["a.b", 'stores["a.b"]'],
    ["a b", 'stores["a b"]']
  ])("refuses the store name %j", (name, path) => {
    fails(doc("stores:", `  '${name}': {owned_by: node, engine: sqlite, migrations: m}`), {
      path,
      line: 4,
      message: "use lowercase letters, digits, hyphens and underscores, starting with a letter or digit"
    })
  })

  it("accepts several stores with hooks for each", () => {
    valid(
      doc(
        "stores:",
        "  main: {owned_by: identity, engine: sqlite, migrations: db/main}",
        "  cache: {owned_by: node, engine: sqlite, migrations: db/cache}",
        "snapshots:",
        "  main: {entry: snap.js}",
        "restores:",
        "  cache: {entry: restore.mjs}"
      )
    )
  })

  rejects([
    { name: "a store entry that is not a map", yaml: doc("stores:", "  main: sqlite"), path: "stores.main", line: 4, message: "must be a map" },
    { name: "stores as a list", yaml: doc("stores: [main]"), path: "stores", line: 3, message: "must be a map" },
    { name: "an unknown key in a store", yaml: doc("stores:", "  main: {owned_by: node, engine: sqlite, migrations: m, size: 5}"), path: "stores.main.size", line: 4, message: 'unknown key "size"' }
  ])
})

describe("snapshots and restores", () => {
  rejects([
    { name: "a snapshot entry that is TypeScript", yaml: doc("store: {owned_by: node, engine: sqlite, migrations: m}", "snapshots:", "  default: {entry: snap.ts}"), path: "snapshots.default.entry", line: 5, message: "must be a .js or .mjs file" },
    { name: "a restore without entry", yaml: doc("store: {owned_by: node, engine: sqlite, migrations: m}", "restores:", "  default: {}"), path: "restores.default.entry", line: 5, message: "is required" },
    { name: "a snapshot for an undeclared store", yaml: doc("stores:", "  main: {owned_by: node, engine: sqlite, migrations: m}", "snapshots:", "  other: {entry: s.js}"), path: "snapshots.other", line: 6, message: "names no declared store (declared: main" },
    { name: "a restore with no store at all", yaml: doc("restores:", "  default: {entry: r.js}"), path: "restores.default", line: 4, message: "no store is declared" },
    { name: "default when only stores are declared", yaml: doc("stores:", "  main: {owned_by: node, engine: sqlite, migrations: m}", "restores:", "  default: {entry: r.js}"), path: "restores.default", line: 6, message: "names no declared store" },
    { name: "an unknown hook key", yaml: doc("store: {owned_by: node, engine: sqlite, migrations: m}", "snapshots:", "  default: {entry: s.js, every: 1h}"), path: "snapshots.default.every", line: 5, message: 'unknown key "every"' }
  ])
})

describe("store files", () => {
  const text = doc(
    "stores:",
    "  main: {owned_by: node, engine: sqlite, migrations: db/migrations}",
    "snapshots:",
    "  main: {entry: db/snapshot.js}",
    "restores:",
    "  main: {entry: db/restore.js}"
  )

  it("accepts migrations directories and hook entries that exist", () => {
    valid(text, listing(["db/migrations/0001_init.sql", "db/snapshot.js", "db/restore.js"]))
  })

  it("refuses each that does not exist", () => {
    fails(
      text,
      [
        { path: "stores.main.migrations", line: 4, message: "db/migrations does not exist in the bag" },
        { path: "snapshots.main.entry", line: 6, message: "db/snapshot.js does not exist in the bag" },
        { path: "restores.main.entry", line: 8, message: "db/restore.js does not exist in the bag" }
      ],
      { listing: listing([]) }
    )
  })

  it("refuses migrations that name a file, not a directory", () => {
    fails(text, { path: "stores.main.migrations", line: 4, message: "db/migrations is a file, not a directory" }, {
      listing: listing(["db/migrations", "db/snapshot.js", "db/restore.js"])
    })
  })

  it("checks the single store's migrations too", () => {
    fails(doc("store: {owned_by: node, engine: sqlite, migrations: sql}"), { path: "store.migrations", line: 3, message: "sql does not exist" }, { listing: listing([]) })
    valid(doc("store: {owned_by: node, engine: sqlite, migrations: sql}"), listing([], ["sql"]))
  })
})
