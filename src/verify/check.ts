// A check: an id, a title for the table, and a run that says what it saw.
import type {VerifyContext} from './context.js'
import type {Outcome} from './types.js'

export interface Check {
  id: string
  title: string
  run(ctx: VerifyContext): Promise<Outcome>
}

export const pass = (detail: string): Outcome => ({ok: true, detail})
export const fail = (detail: string): Outcome => ({ok: false, detail})
export const notApplicable = (detail: string): Outcome => ({ok: true, skip: true, detail})

export const ms = (start: number) => `${Math.round(performance.now() - start)} ms`
