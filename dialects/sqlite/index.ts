// SQLite 3.35+: one writer at a time and no row locks, so the claim is a single
// UPDATE ... RETURNING. Times are ISO-8601 UTC text with milliseconds, which sorts and compares
// as text. One file per part; this one only puts them together.
import type {Dialect} from '../dialect.js'
import {batches} from './batches.js'
import {ddl} from './ddl.js'
import {driver} from './driver.js'
import {errors} from './errors.js'
import {events} from './events.js'
import {relay} from './relay.js'
import {render} from './render.js'
import {verify} from './verify.js'

// no namedLock: BEGIN IMMEDIATE makes writers take turns already
export const sqlite: Dialect = {name: 'sqlite', displayName: 'SQLite', driver, render, ddl, relay, events, batches, verify, errors}
