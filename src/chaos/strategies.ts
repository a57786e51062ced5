// How the producer publishes and how the consumer handles duplicates. `outbox` and
// `idempotent` are the pattern; the others are broken on purpose, to prove the harness fails.

export const STRATEGIES = ['outbox', 'dual-write-commit-first', 'dual-write-publish-first'] as const
export type Strategy = (typeof STRATEGIES)[number]

export const CONSUMER_MODES = ['idempotent', 'naive', 'ack-first'] as const
export type ConsumerMode = (typeof CONSUMER_MODES)[number]

export const STRATEGY_DESCRIPTIONS: Record<Strategy, string> = {
  outbox: 'business row and event in one transaction; the relay publishes (the pattern)',
  'dual-write-commit-first': 'BROKEN: commit, then publish directly (a crash in between loses the event)',
  'dual-write-publish-first': 'BROKEN: publish directly, then commit (a crash in between leaves a phantom event)',
}

export const CONSUMER_DESCRIPTIONS: Record<ConsumerMode, string> = {
  idempotent: 'inbox row and effect in one transaction; duplicates skipped, stale versions detected',
  naive: 'BROKEN: no inbox, every delivery applies the effect (redeliveries apply it twice)',
  'ack-first': 'BROKEN: acks each message on receipt, before its inbox transaction commits (a crash in between loses the effect)',
}

/** Dual-write strategies have no outbox table in the path and no relay. */
export function usesRelay(strategy: Strategy): boolean {
  return strategy === 'outbox'
}
