// The plain chaos run: one worker SIGKILLs itself at one step (its 1st or 2nd pass, chosen by
// the seed), is restarted without failpoints, and everything drains.
import type {ChaosStep} from '../../core/failpoints.js'
import {pick} from '../seed.js'
import type {Exercise, FaultScenario, Outcome} from './types.js'

/** A fault armed by failpoints was exercised when at least one worker died at its armed step. */
export async function killsFired({kills, armed}: Outcome): Promise<Exercise> {
  return kills.some((k) => k.ok) ? {} : {missed: `failpoint never fired (${armed.join('; ')})`}
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
      // the first relay stands for all: the others run unarmed
      run.failpoints.set(role === 'relay' ? 'relay#1' : role, {step, hit: pick(run.random, 1, 2)})
      return {exercised: killsFired}
    },
  }
}
