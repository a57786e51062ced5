// The plain chaos run: one worker SIGKILLs itself at one step (on a pass chosen by the seed,
// a different one for each iteration), is restarted without failpoints, and everything drains.
import type {ChaosStep} from '../../core/failpoints.js'
import {choiceFor} from '../seed.js'
import type {Exercise, FaultScenario, Outcome, RunUnderTest} from './types.js'

/** A fault armed by failpoints was exercised when at least one worker died at its armed step. */
export async function killsFired({kills, armed}: Outcome): Promise<Exercise> {
  return kills.some((k) => k.ok) ? {} : {missed: `failpoint never fired (${armed.join('; ')})`}
}

/**
 * How many passes through a step every run makes: the producer and the consumer one per
 * business op (an op writes at least one event), a relay one per batch, and a batch holds at
 * most `batch` events. The kill points are the passes 1..this.
 */
export function passesThrough(role: string, run: Pick<RunUnderTest, 'ops' | 'relay'>): number {
  return Math.max(1, role === 'relay' ? Math.ceil(run.ops / run.relay.batch) : run.ops)
}

export function killAtStep(step: ChaosStep): FaultScenario<ChaosStep> {
  const role = step.split('.')[0]
  return {
    name: step,
    description: `the ${role} killed at ${step}, then restarted without failpoints`,
    kind: 'step',
    loopbackOnly: false,
    needsRelay: role === 'relay',
    arm(run) {
      const hits = Array.from({length: passesThrough(role, run)}, (_, i) => i + 1)
      // the first relay stands for all: the others run unarmed
      run.failpoints.set(role === 'relay' ? 'relay#1' : role, {step, hit: choiceFor(run.caseRandom(), run.iteration, hits)})
      return {exercised: killsFired}
    },
  }
}
