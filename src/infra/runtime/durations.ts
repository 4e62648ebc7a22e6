/** `30s`, `15m`, `2h`, `7d` (or seconds) as milliseconds, for command-line options. */
export const parseDuration = (text: string): number | undefined => {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(text.trim())
  if (m === null) return undefined
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "" | "s" | "m" | "h" | "d"]
  const ms = Number(m[1]) * unit * 1000
  return ms > 0 ? ms : undefined
}
