/**
 * A TypeScript `main` for the node executor. Node 20 cannot run TypeScript, so the main and the
 * bag files it imports are bundled by esbuild into one ES module in a private cache directory,
 * which the executor runs instead (docs/executors.md, "TypeScript").
 *
 * Two things would otherwise differ from running the file where it lies, and are kept the same:
 * - packages stay out of the bundle, but each is pinned to the file Node would load from the
 *   importing bag file (a bare import left as is would be looked up from the cache directory);
 * - `import.meta.url`, `.filename` and `.dirname` name each bag file itself, not the bundle, so
 *   a job can still read its own files next to it.
 *
 * esbuild is imported only when a TypeScript main is first run: the CLI does not load it.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import { isBuiltin } from "node:module"
import * as os from "node:os"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { Message, Plugin } from "esbuild"
import { currentUid, makePrivateDir, NotPrivate, writePrivateFile } from "../PrivateFiles.js"

export class TypeScriptMainError extends Data.TaggedError("TypeScriptMainError")<{
  /** Compile: esbuild refused the source; Cache: the cache directory cannot be used. */
  readonly reason: "Compile" | "Cache"
  readonly message: string
}> {}

/** Changed whenever the build options below change, so old cache entries are not reused. */
const CACHE_FORMAT = "3"

export const isTypeScript = (main: string): boolean => /\.[mc]?ts$/.test(main)

/** `os.tmpdir()/svc-ts-cache-<uid>`: per user, since a shared one would let others plant code. */
export const defaultCacheDir = (): string =>
  nodePath.join(os.tmpdir(), `svc-ts-cache-${currentUid() ?? "user"}`)

/** Each input's identity when bundled; a cache entry is reused only if none changed since. */
type Inputs = ReadonlyArray<readonly [path: string, mtimeMs: number, size: number]>

const statOf = async (path: string) => {
  const stat = await fs.stat(path)
  return [path, stat.mtimeMs, stat.size] as const
}

const unchanged = async (inputsFile: string): Promise<boolean> => {
  try {
    const inputs = JSON.parse(await fs.readFile(inputsFile, "utf8")) as Inputs
    for (const [path, mtimeMs, size] of inputs) {
      const [, m, s] = await statOf(path)
      if (m !== mtimeMs || s !== size) return false
    }
    return true
  } catch {
    return false
  }
}

/**
 * Removes the entries whose inputs changed or are gone (a bag version removed, a main edited):
 * no run can use them again, since an entry is reused only while every input is as it was. Done
 * after each build, the only time an entry becomes stale for good, so the cache holds about one
 * bundle per TypeScript main installed, not one per install or edit for the machine's life
 * (hygiene audit). Best effort: an entry another process removes first, or cannot read, is left.
 */
const pruneStale = async (cacheDir: string, keep: string): Promise<void> => {
  for (const name of await fs.readdir(cacheDir).catch(() => [] as Array<string>)) {
    if (!name.endsWith(".inputs.json")) continue
    const key = name.slice(0, -".inputs.json".length)
    if (key === keep || (await unchanged(nodePath.join(cacheDir, name)))) continue
    for (const file of [`${key}.mjs`, `${key}.cjs`, name]) await fs.rm(nodePath.join(cacheDir, file), { force: true }).catch(() => undefined)
  }
}

/** Creates the cache directory, and refuses one this user does not own alone. */
const privateDir = async (dir: string): Promise<void> => {
  try {
    await makePrivateDir(dir)
  } catch (e) {
    if (!(e instanceof NotPrivate)) throw e
    throw new TypeScriptMainError({ reason: "Cache", message: `the TypeScript cache directory ${dir} is not a directory private to this user` })
  }
}

/** Writes through a temporary name and renames, so a concurrent run never reads half a file. */
const writeAtomically = writePrivateFile

const describe = (messages: ReadonlyArray<Message>): string => {
  const first = messages[0]
  if (first === undefined) return "esbuild reported no reason"
  const where = first.location === null ? "" : `${first.location.file}:${first.location.line}:${first.location.column + 1}: `
  const more = messages.length > 1 ? ` (and ${messages.length - 1} more)` : ""
  return `${where}${first.text}${more}`
}

const isBuildFailure = (e: unknown): e is { errors: ReadonlyArray<Message> } =>
  typeof e === "object" && e !== null && Array.isArray((e as { errors?: unknown }).errors)

/** A CommonJS main (`.cts`): bundled as CommonJS, so that `require`, `__filename` and `module` work as where it lies. */
const isCommonJs = (path: string) => /\.c[jt]s$/.test(path)

/** The `require` an ES module bundle's CommonJS files get (see `bundle`). */
const REQUIRE_FOR_COMMONJS = 'import { createRequire as __svcCreateRequire } from "node:module"; globalThis.require ??= __svcCreateRequire(import.meta.url);'

/**
 * Bare imports: external, pinned to the file Node would resolve from the importer (an ES module
 * bundle imports its `file://` URL; a CommonJS one requires its path).
 */
const pinPackages = (commonJs: boolean): Plugin => ({
  name: "svc-pin-packages",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "svc-inner" || nodePath.isAbsolute(args.path)) return undefined
      if (isBuiltin(args.path)) return { path: args.path, external: true }
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: "svc-inner"
      })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      // Required (a CommonJS file's `require`), or in a CommonJS bundle: by path, which require takes.
      const byPath = commonJs || args.kind === "require-call" || args.kind === "require-resolve"
      return { path: byPath ? resolved.path : pathToFileURL(resolved.path).href, external: true }
    })
  }
})

/** Bag files: `import.meta.url`/`filename`/`dirname` (and a CommonJS file's `__filename`/`__dirname`) replaced by each file's own. */
const ownImportMeta = (transform: typeof import("esbuild").transform, bagDir: string): Plugin => ({
  name: "svc-own-import-meta",
  setup(build) {
    build.onLoad({ filter: /\.[mc]?[jt]sx?$/ }, async (args) => {
      const source = await fs.readFile(args.path, "utf8")
      const extension = nodePath.extname(args.path)
      const loader = extension.endsWith("tsx") ? "tsx" : extension.endsWith("ts") ? "ts" : extension.endsWith("jsx") ? "jsx" : "js"
      try {
        const commonJs = isCommonJs(args.path)
        const out = await transform(source, {
          loader,
          format: commonJs ? "cjs" : "esm",
          target: "node20",
          // The file's own name: the bundle's source map resolves it against the file's directory.
          sourcefile: nodePath.basename(args.path),
          sourcemap: "inline",
          define: {
            "import.meta.url": JSON.stringify(pathToFileURL(args.path).href),
            "import.meta.filename": JSON.stringify(args.path),
            "import.meta.dirname": JSON.stringify(nodePath.dirname(args.path)),
            ...(commonJs ? { __filename: JSON.stringify(args.path), __dirname: JSON.stringify(nodePath.dirname(args.path)) } : {})
          }
        })
        return { contents: out.code, loader: "js", resolveDir: nodePath.dirname(args.path) }
      } catch (e) {
        if (isBuildFailure(e)) {
          const file = nodePath.relative(bagDir, args.path)
          return { errors: e.errors.map((m) => ({ ...m, location: m.location === null ? null : { ...m.location, file } })) }
        }
        throw e
      }
    })
  }
})

/**
 * The bundled module for `main` (absolute, inside `bagDir`): from the cache when neither the
 * main nor any file it imports changed, else built now.
 */
export const bundle = (main: string, bagDir: string, cacheDir: string = defaultCacheDir()) =>
  Effect.tryPromise({
    try: async () => {
      const [, mtimeMs, size] = await statOf(main)
      const key = createHash("sha256").update(`${CACHE_FORMAT}\0${main}\0${mtimeMs}\0${size}`).digest("hex")
      const commonJs = isCommonJs(main)
      const outfile = nodePath.join(cacheDir, `${key}.${commonJs ? "cjs" : "mjs"}`)
      const inputsFile = nodePath.join(cacheDir, `${key}.inputs.json`)
      await privateDir(cacheDir)
      if (await unchanged(inputsFile)) {
        try {
          await fs.access(outfile)
          return outfile
        } catch {
          // Listed but gone: build again.
        }
      }
      const esbuild = await import("esbuild")
      let result: Awaited<ReturnType<typeof esbuild.build>>
      // An ES module bundle holding CommonJS files (a .ts main importing a .cts) gives them a
      // `require`, as Node gives one to a CommonJS file an ES module imports: esbuild's own
      // stand-in throws "Dynamic require ... is not supported". Set on the global object, not
      // declared, so that a bag file's own `const require = createRequire(...)` does not clash.
      const build = (banner: string | undefined) =>
        esbuild.build({
          ...(banner === undefined ? {} : { banner: { js: banner } }),
          entryPoints: [main],
          absWorkingDir: bagDir,
          outfile,
          bundle: true,
          platform: "node",
          target: "node20",
          format: commonJs ? "cjs" : "esm",
          // Node's own choice among a package's entry points, for pinPackages.
          mainFields: ["main"],
          conditions: [],
          sourcemap: "inline",
          metafile: true,
          write: false,
          logLevel: "silent",
          plugins: [pinPackages(commonJs), ownImportMeta(esbuild.transform, bagDir)]
        })
      try {
        result = await build(undefined)
        if (!commonJs && Object.keys(result.metafile?.inputs ?? {}).some(isCommonJs)) result = await build(REQUIRE_FOR_COMMONJS)
      } catch (e) {
        if (isBuildFailure(e)) throw new TypeScriptMainError({ reason: "Compile", message: describe(e.errors) })
        throw e
      }
      const output = result.outputFiles?.[0]
      if (output === undefined) throw new TypeScriptMainError({ reason: "Compile", message: "esbuild wrote nothing" })
      const inputs: Inputs = await Promise.all(
        Object.keys(result.metafile?.inputs ?? {}).map((input) => statOf(nodePath.resolve(bagDir, input)))
      )
      await writeAtomically(outfile, output.contents)
      await writeAtomically(inputsFile, JSON.stringify(inputs))
      await pruneStale(cacheDir, key)
      return outfile
    },
    catch: (e) =>
      e instanceof TypeScriptMainError
        ? e
        : new TypeScriptMainError({ reason: "Cache", message: `the TypeScript cache at ${cacheDir} failed: ${e instanceof Error ? e.message : String(e)}` })
  })
