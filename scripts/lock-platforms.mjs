// Keeps package-lock.json acceptable to `npm ci` when the registry this machine reaches serves
// only this platform's builds of some packages (here: rollup's and msgpackr-extract's
// per-platform binaries answer 404). npm then leaves those optional entries out of the lockfile,
// and `npm ci` refuses the lockfile as "not in sync". This adds each missing optional platform
// entry with its os/cpu, which npm ci skips on any other platform, exactly as it would had the
// registry served it. Run after `npm install` changes the lockfile: node scripts/lock-platforms.mjs
import { readFileSync, writeFileSync } from "node:fs"

const lock = JSON.parse(readFileSync("package-lock.json", "utf8"))
const packages = lock.packages
const OS = { android: "android", darwin: "darwin", freebsd: "freebsd", linux: "linux", openbsd: "openbsd", win32: "win32", openharmony: "openharmony", sunos: "sunos", netbsd: "netbsd", aix: "aix" }
const CPU = ["arm64", "arm", "x64", "ia32", "loong64", "ppc64", "riscv64", "s390x", "mips64el", "wasm32"]

const platformOf = (name) => {
  const parts = name.split("/").pop().split("-")
  const os = parts.find((p) => p in OS)
  const cpu = parts.find((p) => CPU.includes(p)) ?? (parts.includes("eabi") || parts.includes("gnueabihf") || parts.includes("musleabihf") ? "arm" : undefined)
  const libc = parts.includes("musl") || parts.includes("musleabihf") ? "musl" : parts.includes("gnu") || parts.includes("gnueabihf") ? "glibc" : undefined
  return { os, cpu, libc }
}

let added = 0
for (const [path, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${dep}`
    if (packages[key] !== undefined || packages[`${path}/${key}`] !== undefined) continue
    const { os, cpu, libc } = platformOf(dep)
    if (os === undefined || cpu === undefined) continue
    packages[key] = {
      version,
      cpu: [cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(libc !== undefined ? { libc: [libc] } : {}),
      optional: true,
      os: [os]
    }
    added++
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)))
writeFileSync("package-lock.json", JSON.stringify(lock, null, 2) + "\n")
console.log(`added ${added} optional platform entries`)
