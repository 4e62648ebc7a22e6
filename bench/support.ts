/**
 * What the journal benchmarks share: a typed handle on better-sqlite3 (the project has no
 * types for it; only the calls used here), medians, number formatting, the machine line.
 */
import { createRequire } from "node:module"
import os from "node:os"

export interface RawStatement {
  run(...params: ReadonlyArray<unknown>): unknown
  get(...params: ReadonlyArray<unknown>): unknown
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  iterate(...params: ReadonlyArray<unknown>): IterableIterator<unknown>
}

export interface RawDatabase {
  prepare(sql: string): RawStatement
  pragma(source: string, options?: { simple?: boolean }): unknown
  exec(sql: string): void
  transaction<A extends ReadonlyArray<unknown>>(fn: (...args: A) => void): (...args: A) => void
  close(): void
}

export const Database = createRequire(import.meta.url)("better-sqlite3") as new (
  filename: string,
  options?: { readonly?: boolean }
) => RawDatabase

export const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export const fmt = (n: number): string => Math.round(n).toLocaleString("en-US")

export const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  const value = i >= 0 ? Number(process.argv[i + 1]) : NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}

export const gc = (): void => (globalThis as { gc?: () => void }).gc?.()

export const printMachine = (name: string): void => {
  const cpus = os.cpus()
  console.log(name)
  console.log(`  date        ${new Date().toISOString()}`)
  console.log(`  node        ${process.version} (${process.platform}/${process.arch})`)
  console.log(`  cpu         ${cpus[0]?.model ?? "unknown"} x ${cpus.length} (load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")})`)
}
