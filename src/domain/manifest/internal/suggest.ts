/** The closest known key to a mistyped one, when it is close enough to be a typo. */
export const suggest = (word: string, candidates: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      bestDistance = d
      best = candidate
    }
  }
  const limit = word.length <= 4 ? 1 : 2
  return bestDistance <= limit ? best : undefined
}

/**
 * Edits between two words (insert, delete, replace, or swap two neighbours: optimal string
 * alignment), so that `mian` is one edit from `main` and `evn` one from `env`, as a typist sees it.
 */
const distance = (a: string, b: string): number => {
  if (a === b) return 0
  let before: Array<number> = []
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1)
      row.push(d)
    }
    before = previous
    previous = row
  }
  return previous[b.length]!
}
