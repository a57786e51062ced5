// A small seeded PRNG (mulberry32): the same --seed chooses the same failpoint hits.
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
