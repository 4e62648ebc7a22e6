/**
 * `RunFiles` on the file system: `<dir>/<attempt>.stdout|stderr`, directory mode 0700, under the
 * output limit `outputLimit` (OutputLimit.ts); on an owner, `<dir>/removed-output` lists the runs
 * whose output it removed when it forgot them, one id per line, the latest `remembered` of them.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { OutputNotKept, REMEMBERED_REMOVALS, RunFiles, type OutputStream, type RunFilesService } from "../../app/runs/RunFiles.js"
import { cutNotice, DEFAULT_OUTPUT_LIMIT, keepOf, NOTICE_START } from "../../domain/runs/OutputLimit.js"
import { completeUtf8Length } from "../../domain/runs/Utf8.js"
import { makeDirectory } from "../MakeDirectory.js"

const SAFE = /^[A-Za-z0-9._-]+$/

/** The list of runs whose output the owner removed as it forgot them (`noteRemoved`). */
export const REMOVED_LIST = "removed-output"

export const make = (dir: string, outputLimit: number = DEFAULT_OUTPUT_LIMIT, remembered: number = REMEMBERED_REMOVALS): RunFilesService => {
  const file = (attempt: string, stream: OutputStream) => {
    if (!SAFE.test(attempt)) throw new Error(`not an attempt id: ${JSON.stringify(attempt)}`)
    return nodePath.join(dir, `${attempt}.${stream}`)
  }
  const ready = makeDirectory(dir, 0o700)
  const readRange = async (path: string, offset: number, max: number): Promise<Buffer> => {
    const handle = await fs.open(path, "r").catch(() => undefined)
    if (handle === undefined) return Buffer.alloc(0)
    try {
      const buffer = Buffer.alloc(max)
      const { bytesRead } = await handle.read(buffer, 0, max, offset)
      return buffer.subarray(0, bytesRead)
    } finally {
      await handle.close()
    }
  }
  const removedList = nodePath.join(dir, REMOVED_LIST)
  const readRemoved = () => fs.readFile(removedList, "utf8").catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? "" : Promise.reject(e)))
  // Lines in the list, read once, at the first note: it is cut back to the latest `remembered` once it holds twice as many.
  let listed: number | undefined
  return {
    outputLimit,
    paths: (attempt) => ({ stdout: file(attempt, "stdout"), stderr: file(attempt, "stderr") }),
    append: (attempt, stream, text, options = {}) =>
      Effect.tryPromise({
        try: async () => {
          await ready
          // Read and append ("a+"): the last byte tells whether a line saying the stream was cut starts a line of its own.
          const handle = await fs.open(file(attempt, stream), "a+", 0o600)
          try {
            const bytes = Buffer.from(text, "utf8")
            const size = options.cut === true || options.within === true ? (await handle.stat()).size : 0
            // The file's last bytes, read once, when a cut needs them.
            let tail: Buffer | undefined
            const lastBytes = async () => {
              const n = Math.min(size, 512)
              return (tail ??= n === 0 ? Buffer.alloc(0) : (await handle.read(Buffer.alloc(n), 0, n, size - n)).buffer)
            }
            // A stream that ends with the line already (its cut written by a runtime before this
            // one, which forgot it) takes nothing more: not the piece sent again, nor a second line.
            if (options.cut === true && endsCut(await lastBytes())) return
            const { keep, cut } = options.within === true ? keepOf(bytes, size, outputLimit) : { keep: bytes.length, cut: options.cut === true }
            let out = bytes.subarray(0, keep)
            if (cut) {
              const before = keep > 0 ? bytes[keep - 1] : (await lastBytes()).at(-1)
              out = Buffer.concat([out, Buffer.from(cutNotice(outputLimit, before === undefined || before === 0x0a))])
            }
            if (out.length > 0) await handle.appendFile(out)
          } finally {
            await handle.close()
          }
        },
        // As the executor says it of a job on this machine (Child.ts), so the two read alike.
        catch: (e) => new OutputNotKept({ message: `its output could not be written to ${file(attempt, stream)}: ${e instanceof Error ? e.message : String(e)}` })
      }),
    sizes: (attempt) =>
      Effect.promise(async () => {
        const size = (stream: OutputStream) => fs.stat(file(attempt, stream)).then((s) => s.size, () => 0)
        return { stdout: await size("stdout"), stderr: await size("stderr") }
      }),
    truncate: (attempt, sizes) =>
      Effect.promise(async () => {
        for (const stream of ["stdout", "stderr"] as const) {
          const path = file(attempt, stream)
          const now = await fs.stat(path).then((s) => s.size, () => undefined)
          if (now !== undefined && now > sizes[stream]) await fs.truncate(path, sizes[stream]).catch(() => {})
        }
      }),
    tail: (attempt, stream, maxBytes) =>
      Effect.promise(async () => {
        const size = await fs.stat(file(attempt, stream)).then((s) => s.size, () => 0)
        const start = Math.max(0, size - maxBytes)
        const bytes = await readRange(file(attempt, stream), start, Math.min(size, maxBytes))
        if (start === 0) return { text: bytes.toString("utf8"), skipped: 0 }
        // Cut short: from the start of its first whole line (or, with none, its first whole character).
        const newline = bytes.indexOf(0x0a)
        let i = newline >= 0 && newline < bytes.length - 1 ? newline + 1 : 0
        while (i < bytes.length && (bytes[i]! & 0xc0) === 0x80) i++
        return { text: bytes.subarray(i).toString("utf8"), skipped: start + i }
      }),
    attempts: Effect.promise(async () => {
      await ready
      const names = await fs.readdir(dir).catch(() => [] as Array<string>)
      const ids = new Set<string>()
      for (const name of names) {
        const m = /^(.+)\.(stdout|stderr)$/.exec(name)
        if (m !== null && SAFE.test(m[1]!)) ids.add(m[1]!)
      }
      return [...ids]
    }),
    remove: (attempt) =>
      Effect.tryPromise({
        try: () => Promise.all([fs.rm(file(attempt, "stdout"), { force: true }), fs.rm(file(attempt, "stderr"), { force: true })]).then(() => undefined),
        catch: (e) => new OutputNotKept({ message: `the output files of ${attempt} in ${dir} could not be removed: ${e instanceof Error ? e.message : String(e)}` })
      }),
    noteRemoved: (runs) =>
      Effect.tryPromise(async () => {
        if (runs.length === 0) return
        await ready
        listed ??= (await readRemoved()).split("\n").length - 1
        await fs.appendFile(removedList, runs.map((r) => `${r}\n`).join(""), { mode: 0o600 })
        listed += runs.length
        if (listed <= 2 * remembered) return
        const latest = (await readRemoved()).split("\n").slice(0, -1).slice(-remembered)
        const next = `${removedList}.${process.pid}.next`
        await fs.writeFile(next, latest.map((r) => `${r}\n`).join(""), { mode: 0o600 })
        await fs.rename(next, removedList)
        listed = latest.length
      }).pipe(
        // The files go all the same (the disk's bound comes first); such a run, brought back by a
        // raise of the setting, shows as having printed nothing.
        Effect.catchAll((e) => Effect.logWarning(`the runs whose output is removed could not be noted in ${removedList} (${e.error instanceof Error ? e.error.message : String(e.error)})`))
      ),
    // Unreadable: not known to be removed.
    wasRemoved: (run) => Effect.promise(async () => `\n${await readRemoved().catch(() => "")}`.includes(`\n${run}\n`)),
    readFrom: (attempt, stream, offset, max, ended = false) =>
      Effect.promise(async () => {
        const read = await readRange(file(attempt, stream), offset, max)
        // Fewer bytes than asked for, of a job that has exited: the end of the stream, all of it.
        const bytes = ended && read.length < max ? read : read.subarray(0, completeUtf8Length(read))
        return { text: bytes.toString("utf8"), next: offset + bytes.length }
      })
  }
}

/** Whether `tail` (a file's last bytes) ends with a line that ends a cut stream. */
const endsCut = (tail: Buffer): boolean => {
  const text = tail.toString("utf8")
  if (!text.endsWith("]\n")) return false
  const line = text.slice(text.lastIndexOf("\n", text.length - 2) + 1)
  return line.startsWith(NOTICE_START)
}

export const layer = (dir: string, outputLimit?: number) => Layer.sync(RunFiles, () => make(dir, outputLimit))
