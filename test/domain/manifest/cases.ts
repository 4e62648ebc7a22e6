/**
 * Table helpers for the manifest tests: `doc` builds a manifest from MINIMAL (lines 1 and 2)
 * and the given lines (the first one is line 3), `valid` asserts a manifest passes and returns
 * the decoded value, `fails` asserts each expected error by key path, line and message fragment,
 * and that no other error is reported (no duplicate noise).
 */
import { expect } from "vitest"
import type { BagListing } from "../../../src/domain/manifest/Environment.js"
import type { Manifest } from "../../../src/domain/manifest/Manifest.js"
import { check, MINIMAL, type Checked } from "../../support/manifest.js"

/** MINIMAL followed by `lines`: the first line given here is line 3 of the document. */
export const doc = (...lines: ReadonlyArray<string>): string => MINIMAL + lines.map((l) => `${l}\n`).join("")

export const valid = (text: string, bag?: BagListing): Manifest => {
  const r = check(text, bag)
  expect(r.lines, "expected no problems").toEqual([])
  expect(r.manifest).toBeDefined()
  return r.manifest!
}

export interface Expected {
  /** Key path as formatted in messages, e.g. `jobs.build.runs.command`. */
  readonly path: string
  readonly line: number
  /** A fragment of the message. */
  readonly message: string
}

export interface FailOptions {
  readonly listing?: BagListing
  /** How many errors in all; defaults to the number of expected ones. */
  readonly count?: number
}

export const fails = (text: string, expected: Expected | ReadonlyArray<Expected>, options: FailOptions = {}): Checked => {
  const r = check(text, options.listing)
  const all: ReadonlyArray<Expected> = "path" in expected ? [expected] : expected
  const got = `got:\n${r.lines.join("\n")}`
  for (const e of all) {
    const hit = r.errors.find((p) => p.path === e.path && p.message.includes(e.message))
    expect(hit, `no error at ${e.path} containing ${JSON.stringify(e.message)}; ${got}`).toBeDefined()
    expect(hit!.line, `line of ${e.path}; ${got}`).toBe(e.line)
    expect(hit!.column, `column of ${e.path}`).toBeGreaterThan(0)
  }
  expect(r.errors.length, got).toBe(options.count ?? all.length)
  expect(r.manifest).toBeUndefined()
  return r
}

/** A failing table row: a name, the YAML, and the one error it must produce. */
export interface Row extends Expected {
  readonly name: string
  readonly yaml: string
}
