// The faults `outbox chaos` stages, in report order: a kill at each step, then the scenarios
// beyond kills. Add a scenario: a file here exporting a FaultScenario, and its name below.
import {brokerDown} from './broker-down.js'
import {commitUnknown} from './commit-unknown.js'
import {concurrentRelays} from './concurrent-relays.js'
import {dbCut} from './db-cut.js'
import {hang} from './hang.js'
import {killAtStep} from './kill-at-step.js'
import {outOfOrder} from './out-of-order.js'
import {poison} from './poison.js'
import {slowAck} from './slow-ack.js'
import type {FaultScenario} from './types.js'

export const SCENARIOS = ['broker-down', 'out-of-order', 'poison', 'concurrent-relays', 'commit-unknown', 'db-cut', 'hang', 'slow-ack'] as const
export type ScenarioKind = (typeof SCENARIOS)[number]

const BY_NAME: {readonly [K in ScenarioKind]: FaultScenario<K>} = {
  'broker-down': brokerDown,
  'out-of-order': outOfOrder,
  poison,
  'concurrent-relays': concurrentRelays,
  'commit-unknown': commitUnknown,
  'db-cut': dbCut,
  hang,
  'slow-ack': slowAck,
}

export function scenarioByName(name: ScenarioKind): FaultScenario<ScenarioKind> {
  return BY_NAME[name]
}

export const SCENARIO_DESCRIPTIONS = Object.fromEntries(SCENARIOS.map((name) => [name, BY_NAME[name].description])) as Record<ScenarioKind, string>

/** staged by the harness's own broker (outage, reordering, rejection) */
export const LOOPBACK_ONLY: readonly ScenarioKind[] = SCENARIOS.filter((name) => BY_NAME[name].loopbackOnly)

/** staged by the fault proxy before a database server: not on a database file */
export const SERVER_ONLY: readonly ScenarioKind[] = SCENARIOS.filter((name) => BY_NAME[name].needsServer)

export {killAtStep}
export type {FaultScenario} from './types.js'
