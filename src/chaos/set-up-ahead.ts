// The runs' scratch tables made ahead of their turn: while a lane's run goes, the tables of the
// run that comes `depth` places later are made, so that a lane goes from one run's end to the
// next run's workers without its set-up (on a server, CREATE TABLE and the init's checks:
// 0.3-1 s a run on a loaded PostgreSQL, a quarter of that on MariaDB). The same set-up as
// before, made earlier; each run still has tables of its own.
import {prepareRun, runsUnder, type Plan, type PreparedRun} from './run.js'
import type {ChaosSession} from './session.js'

export class SetUpAhead {
  private readonly made = new Map<number, Promise<PreparedRun>>()

  constructor(
    private readonly plans: readonly Plan[],
    /** plan indexes in the order the lanes take them */
    private readonly order: readonly number[],
    private readonly session: ChaosSession,
    /** how far ahead: the lanes' count (the run that takes a lane after those going now) */
    private readonly depth: number,
  ) {}

  /** The tables of the plan at `index`: made ahead, or made now; then the run `depth` places later begins its own. */
  async take(index: number): Promise<PreparedRun | undefined> {
    const plan = this.plans[index]
    const position = this.order.indexOf(index)
    if (!runsUnder(plan, this.session)) {
      this.begin(position + this.depth)
      return undefined
    }
    const making = this.made.get(index) ?? prepareRun(plan, this.session)
    this.made.delete(index)
    const prepared = await making
    this.begin(position + this.depth)
    return prepared
  }

  /** Set-ups still in progress or not taken: an interruption waits for them to end their step. */
  pending(): Promise<unknown>[] {
    return [...this.made.values()]
  }

  /** The tables made for runs that never came (an interruption, another run's error) go. */
  async discardUnused(): Promise<void> {
    const left = [...this.made.values()]
    this.made.clear()
    await Promise.all(left.map((making) => making.then((prepared) => prepared.discard(), () => {})))
  }

  private begin(position: number): void {
    const index = this.order[position]
    if (index === undefined || this.made.has(index) || this.session.settings.signal?.aborted) return
    if (!runsUnder(this.plans[index], this.session)) return
    const making = prepareRun(this.plans[index], this.session)
    making.catch(() => {}) // its run takes the error when its turn comes
    this.made.set(index, making)
  }
}
