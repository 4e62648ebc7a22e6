/**
 * When a test fails, what its real processes were doing: the last lines of every `svc serve`
 * still running and every `svc` call not finished. A timeout says only "timed out in 120000ms";
 * on a CI machine nobody can look afterwards, so the failure carries it (vitest setupFiles).
 */
import { afterEach } from "vitest"
import { liveServes } from "./serve.js"
import { svcCallsInFlight } from "./svc.js"

const TAIL_LINES = 30

const tail = (text: string): string => {
  const lines = text.trimEnd().split("\n")
  return (lines.length > TAIL_LINES ? [`(... ${lines.length - TAIL_LINES} lines before)`, ...lines.slice(-TAIL_LINES)] : lines).join("\n")
}

/** The call's words, secrets cut to their prefix (a join token is one of them). */
const words = (args: ReadonlyArray<string>): string => args.map((a) => a.replace(/(svc_(?:wk|jt)_)\S+/g, "$1…")).join(" ")

afterEach((context) => {
  if (context.task.result?.state !== "fail") return
  const now = Date.now()
  const parts: Array<string> = []
  for (const call of svcCallsInFlight()) parts.push(`svc ${words(call.args)}: not finished after ${((now - call.since) / 1000).toFixed(1)} s`)
  for (const p of liveServes()) {
    parts.push(`svc serve ${p.name} (pid ${p.pid}, ${p.exited() ? "exited" : "running"}, started ${((now - p.startedAt) / 1000).toFixed(1)} s ago), its last output:\n${tail(p.output())}`)
  }
  if (parts.length > 0) process.stderr.write(`\n--- ${context.task.name}: failed; its processes at that moment ---\n${parts.join("\n\n")}\n---\n`)
})
