// better-sqlite3 is synchronous: a loop of SQLite batches resolves in microtasks only, so
// signals, timers (--timeout) and I/O would wait until the loop ends. Loops that work batch
// after batch give the event loop a turn between batches; it costs microseconds.
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
