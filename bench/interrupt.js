// Ctrl-C during a suite that holds things a plain exit would leave behind (tables, sessions
// holding locks a DROP waits for): the steps registered run newest first, then exit 130.
const steps = new Set()

const run = async () => {
  for (const step of [...steps].reverse()) await step().catch(() => {})
  process.exit(130)
}

/** Registers an undo step for Ctrl-C; returns the function that unregisters it. */
export function onInterrupt(step) {
  if (steps.size === 0) process.once('SIGINT', run)
  steps.add(step)
  return () => {
    steps.delete(step)
    if (steps.size === 0) process.removeListener('SIGINT', run)
  }
}
