// Colour only on a TTY and never with NO_COLOR (https://no-color.org).
import type {ChalkInstance} from 'chalk'

export function colorEnabled(stream: NodeJS.WriteStream = process.stdout, env = process.env): boolean {
  if ('NO_COLOR' in env && env.NO_COLOR !== '') return false
  return Boolean(stream.isTTY)
}

/** chalk, loaded only when something is rendered, at level 0 when colour is off. */
export async function palette(stream: NodeJS.WriteStream = process.stdout): Promise<ChalkInstance> {
  const {Chalk} = await import('chalk')
  return new Chalk({level: colorEnabled(stream) ? 1 : 0})
}
