// Formatting shared by the suites' markdown.
import {fmt} from './lib.js'

/** "median (min–max)" of a summary(). */
export const spread = (s, digits = 1) => `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`

/** A URL without its password. */
export function redact(url) {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.href
  } catch {
    return url
  }
}
