// Shapes shared by the verify checks, the runner and the CLI.
import type {ClaimOptions, ClaimPlan, DialectName, PartitionInterval, Sql, TableNames} from '../../dialects/index.js'

export type CheckStatus = 'pass' | 'fail' | 'skip'

export interface CheckResult {
  /** stable id, e.g. "claimers" */
  check: string
  title: string
  status: CheckStatus
  ok: boolean
  /** what was checked and what was seen (the reason, when it failed) */
  detail: string
  ms: number
}

export interface VerifyReport {
  ok: boolean
  dialect: DialectName
  version: string
  /** the scratch table verify created and dropped */
  scratchTable: string
  checks: CheckResult[]
}

export interface Progress {
  index: number
  total: number
  title: string
  note?: string
}

export interface VerifyOptions {
  /** concurrent claimers, each on its own connection (default 4) */
  claimers?: number
  /** events the claimers share (default 1000) */
  events?: number
  /** rows per claim in the concurrency check (default 25) */
  batch?: number
  /** PostgreSQL schema for the scratch table (default: the search_path) */
  schema?: string
  /** make the scratch table partitioned by created_at, as init --partition-by does */
  partitionBy?: PartitionInterval
  /** run only these check ids (the server check always runs) */
  only?: string[]
  onProgress?: (progress: Progress) => void
  /** abort: the running check stops, sessions close, the scratch table is dropped */
  signal?: AbortSignal
  /** the claim under test (default: the dialect's own). Tests pass broken ones to prove verify fails. */
  claimPlan?: (names: TableNames, options: ClaimOptions) => ClaimPlan
  /** statements run on every session verify opens (tests: planner settings, isolation level) */
  sessionSetup?: Sql[]
}

export interface Outcome {
  ok: boolean
  detail: string
  /** not applicable on this dialect: reported, never a failure */
  skip?: boolean
}
