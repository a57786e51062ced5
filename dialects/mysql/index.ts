// MySQL 8.0.1+ and MariaDB 10.6+: the claim locks with SELECT ... FOR UPDATE SKIP LOCKED, then
// updates by id, in one READ COMMITTED transaction. One file per part; this one only puts them
// together.
import type {Dialect} from '../dialect.js'
import {batches} from './batches.js'
import {ddl} from './ddl.js'
import {driver} from './driver.js'
import {errors} from './errors.js'
import {events} from './events.js'
import {namedLock} from './lock.js'
import {relay} from './relay.js'
import {render} from './render.js'
import {verify} from './verify.js'
import {wire} from './wire.js'

export const mysql: Dialect = {name: 'mysql', displayName: 'MySQL/MariaDB', driver, render, ddl, relay, events, batches, verify, errors, namedLock, wire}
