// A producer's INSERT must not wait for a claim in progress (MySQL at REPEATABLE READ: the
// claim's gap locks block it). The claim here reads to the end of the pending range.
import type {Check} from './check.js'
import {fail, ms, pass} from './check.js'
import {LOCK_WAIT_MS} from './second-session.js'

export const producerCheck: Check = {
  id: 'producer',
  title: 'producer INSERT not blocked by a claim',
  async run(ctx) {
    await ctx.reset()
    await ctx.seed(2)
    const held = await ctx.hold(await ctx.session(), {batch: 10, leaseMs: 60_000, owner: 'outbox-verify-claim'})
    try {
      const producer = await ctx.session()
      const start = performance.now()
      try {
        await producer.transaction(async (tx) => {
          await ctx.setLockTimeout(tx, LOCK_WAIT_MS)
          await tx.execute(ctx.insert(2))
        })
      } catch (error) {
        if (!ctx.dialect.errors.isLockTimeout(error)) throw error
        return fail(`a producer INSERT waited on the claim's locks (gave up after ${LOCK_WAIT_MS} ms): gap locks, is the claim running at REPEATABLE READ?`)
      }
      return pass(`a producer INSERT committed in ${ms(start)} while a claim transaction held ${held.events.length} rows`)
    } finally {
      await held.release()
    }
  },
}
