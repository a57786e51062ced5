// How the producer publishes and how the consumer handles duplicates. `outbox` and
// `idempotent` are the pattern; the others are broken on purpose, to prove the harness fails.

export const STRATEGIES = ['outbox', 'dual-write-commit-first', 'dual-write-publish-first', 'outbox-lost-is-published'] as const
export type Strategy = (typeof STRATEGIES)[number]

export const CONSUMER_MODES = ['idempotent', 'naive', 'ack-first', 'ack-on-error'] as const
export type ConsumerMode = (typeof CONSUMER_MODES)[number]

export const STRATEGY_DESCRIPTIONS: Record<Strategy, string> = {
  outbox: 'business row and event in one transaction; the relay publishes (the pattern)',
  'dual-write-commit-first': 'BROKEN: commit, then publish directly (a crash in between loses the event)',
  'dual-write-publish-first': 'BROKEN: publish directly, then commit (a crash in between leaves a phantom event)',
  'outbox-lost-is-published': 'BROKEN: the outbox, but the relay treats a publish whose connection was lost, refused or timed out as published',
}

export const CONSUMER_DESCRIPTIONS: Record<ConsumerMode, string> = {
  idempotent: 'inbox row and effect in one transaction; duplicates skipped, stale versions detected',
  naive: 'BROKEN: no inbox, every delivery applies the effect (redeliveries apply it twice)',
  'ack-first': 'BROKEN: acks each message on receipt, before its inbox transaction commits (a crash in between loses the effect)',
  'ack-on-error': 'BROKEN: acks a message whose inbox transaction failed (a lost connection) as if it was handled: its effect is lost',
}

/** Dual-write strategies have no outbox table in the path and no relay. */
export function usesRelay(strategy: Strategy): boolean {
  return strategy === 'outbox' || strategy === 'outbox-lost-is-published'
}
