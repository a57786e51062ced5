// A small seeded PRNG (mulberry32): the same --seed chooses the same failpoint hits. Each case
// draws from a stream of its own (seed + case name), so adding a step to --steps changes no
// other case's kill points, and iteration n of a case takes the n-th of its shuffled choices:
// different iterations, different kill points (until the choices run out, then again in order).
import {randomInt} from 'node:crypto'

export function randomSeed(): number {
  return randomInt(1, 2 ** 31 - 1)
}

export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** An integer in [min, max]. */
export function pick(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1))
}

/** The PRNG of one case: the seed and the case's name, so a case's choices do not depend on the others. */
export function caseRng(seed: number, name: string): () => number {
  // FNV-1a over the name, mixed into the seed
  let h = 0x811c9dc5
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0
  return rng((seed ^ h) >>> 0)
}

/**
 * The choice for iteration n (1-based) of a case: `choices` shuffled by the case's stream, so
 * the iterations take different ones in a seed-given order, then start over.
 */
export function choiceFor<T>(caseRandom: () => number, iteration: number, choices: readonly T[]): T {
  const shuffled = [...choices]
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = pick(caseRandom, 0, i)
    ;[shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]]
  }
  return shuffled[(iteration - 1) % shuffled.length]
}
