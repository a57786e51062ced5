// A scenario module for `outbox chaos --scenario ./examples/chaos-scenario.js`:
// sign-ups write a user row and a `user.registered` event in one transaction; the consumer
// sends a welcome email (here: a row in welcome_emails). The business invariant: every
// registered user got exactly one welcome email, and nobody else got one.
//
// Every function receives `ctx`: ctx.sql (tagged template, values are bound), ctx.table(name)
// (this run's quoted scratch table), ctx.dialect.name ('postgres' | 'mysql' | 'sqlite'), ctx.ops.
export default {
  name: 'signups',
  // scratch tables, created by setup() and dropped after every run
  tables: ['users', 'welcome_emails'],
  // business operations per run, for --orders N (default 3)
  ops: (size) => size * 2,

  async setup(db, {sql, table}) {
    await db.execute(sql`CREATE TABLE IF NOT EXISTS ${table('users')} (id VARCHAR(64) NOT NULL PRIMARY KEY, email VARCHAR(200) NOT NULL)`)
    await db.execute(sql`CREATE TABLE IF NOT EXISTS ${table('welcome_emails')} (user_id VARCHAR(64) NOT NULL, email VARCHAR(200) NOT NULL)`)
  },

  // Op n, inside the producer's transaction: the business write, and the events it implies.
  // The harness writes them to the outbox in the same transaction (with outbox's writeEvent).
  async write(tx, op, {sql, table}) {
    const id = `user-${op + 1}`
    const email = `${id}@example.com`
    await tx.execute(sql`INSERT INTO ${table('users')} (id, email) VALUES (${id}, ${email})`)
    return [{eventType: 'user.registered', aggregateType: 'user', aggregateId: id, aggregateVersion: 1, payload: {id, email}}]
  },

  // The consumer's side effect, inside the consumer's transaction (with its inbox row).
  async effect(tx, event, {sql, table}) {
    await tx.execute(sql`INSERT INTO ${table('welcome_emails')} (user_id, email) VALUES (${event.payload.id}, ${event.payload.email})`)
  },

  // After the drain: what the committed business rows say must have been emitted.
  async intents(db, {sql, table}) {
    const users = await db.query(sql`SELECT id FROM ${table('users')}`)
    return users.map((u) => ({aggregateId: String(u.id), aggregateVersion: 1}))
  },

  // After the drain: the business invariant, as violations that name ids (empty = it holds).
  async check(db, {sql, table}) {
    const rows = await db.query(sql`SELECT u.id AS id, COUNT(w.user_id) AS emails FROM ${table('users')} u
      LEFT JOIN ${table('welcome_emails')} w ON w.user_id = u.id GROUP BY u.id`)
    const problems = rows.filter((r) => Number(r.emails) !== 1).map((r) => `${r.id}: ${r.emails} welcome emails`)
    const strays = await db.query(sql`SELECT user_id FROM ${table('welcome_emails')} w
      WHERE NOT EXISTS (SELECT 1 FROM ${table('users')} u WHERE u.id = w.user_id)`)
    return [...problems, ...strays.map((r) => `${r.user_id}: welcome email for a user who never registered`)]
  },
}
