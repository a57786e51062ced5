// "Did you mean": the known name nearest to one typed wrong (a command, an option's key).

/** The name within a few edits of `typed` (case aside), or undefined when none is that close. */
export function nearest(typed: string, names: readonly string[]): string | undefined {
  const scored = names.map((name) => [name, distance(typed.toLowerCase(), name.toLowerCase())] as const).sort((a, b) => a[1] - b[1])[0]
  return scored && scored[1] <= Math.max(2, Math.floor(typed.length / 3)) ? scored[0] : undefined
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
