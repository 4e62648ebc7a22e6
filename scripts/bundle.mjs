// Bundles the compiled CLI (dist/cli/bin.js) into one file, dist/svc.mjs, which `svc` runs.
// Why: loading Effect's many ES modules one by one costs most of a command's time (about
// 1 s before, 0.4 s after, on this project's 2-core machine); one parsed file starts fast.
// Native and optional modules stay external, and so does esbuild: the executor loads it only to
// run a TypeScript job, and it finds its native binary through its own package directory.
import { build } from "esbuild"

await build({
  entryPoints: ["dist/cli/bin.js"],
  outfile: "dist/svc.mjs",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  sourcemap: true,
  external: ["better-sqlite3", "esbuild"],
  // Bundled CommonJS dependencies (ajv, yaml) call require(); give them one in ESM.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module';\nconst require = __svcCreateRequire(import.meta.url);" },
  logLevel: "warning"
})
