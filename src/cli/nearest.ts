// "Did you mean": the closest of the names a user could have meant, when it is close enough
// to be a typo (a third of the word, at least 2 edits) rather than a different word.

export function nearest(typed: string, candidates: readonly string[]): string | undefined {
  const best = candidates.map((c) => [c, distance(typed, c)] as const).sort((a, b) => a[1] - b[1])[0]
  return best && best[1] <= Math.max(2, Math.floor(typed.length / 3)) ? best[0] : undefined
}

/** Levenshtein distance: the edits between two short strings. */
function distance(a: string, b: string): number {
  let row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length]
}
