// `npm start`: the main job until `svc serve` exists: make the starter bag, check it, install
// it into $SVC_HOME (default ~/.svc) and show it, printing each svc command as it runs.
import { execFileSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const svc = fileURLToPath(new URL("../dist/svc.mjs", import.meta.url))
const work = mkdtempSync(join(tmpdir(), "svc-start-"))
const run = (...args) => {
  console.log(`$ svc ${args.join(" ")}`)
  execFileSync(process.execPath, [svc, ...args], { cwd: work, stdio: "inherit" })
}
run("new", "hello")
run("bag", "check", "hello")
run("bag", "install", "hello")
run("bag", "show", "hello")
console.log(`\nThe starter bag is in ${join(work, "hello")}; edit its bag.yaml and run svc bag check again.`)
