// A SQL fragment: text chunks with the values bound between them. One fragment renders two
// ways, so the statement the relay binds and the one `outbox sql` prints can never drift:
// parameterised ($1 / ?) for the driver, or with each value inlined as an escaped literal.
//
// A fragment may also arrive compiled already (precompiled()): Kysely's CompiledQuery for the
// Db it runs on, its placeholders written in that database's syntax. It runs as it is; nothing
// reads its text to find them again.

export class Sql {
  constructor(
    /** the text between the values: one more chunk than values (a precompiled fragment: its one text) */
    readonly chunks: readonly string[],
    readonly values: readonly unknown[],
    /**
     * The text holds its placeholders already, in the syntax of the database it runs on, one
     * per value in order (precompiled()). Such a fragment compiles as it is, can be wrapped in
     * text that binds nothing (EXPLAIN ...), and cannot be inlined: its values' places are
     * known to the compiler that wrote it, not to us.
     */
    readonly precompiled = false,
  ) {}

  /** The same statement with other values in the same places: its chunks are shared, so a driver's per-text caches hold. */
  withValues(values: readonly unknown[]): Sql {
    if (values.length !== this.values.length) throw new RangeError(`a statement of ${this.values.length} values given ${values.length}`)
    return new Sql(this.chunks, values, this.precompiled)
  }
}

/**
 * A statement another compiler wrote for the database it runs on (Kysely's CompiledQuery
 * `sql` and `parameters`, from the Kysely instance of the same Db): text with its
 * placeholders, and the values in placeholder order.
 */
export function precompiled(text: string, values: readonly unknown[]): Sql {
  return new Sql([text], values, true)
}

/** Text that is trusted SQL (already-quoted identifiers, keywords, validated integers). */
export class Raw {
  constructor(readonly text: string) {}
}

export function raw(text: string): Raw {
  return new Raw(text)
}

/**
 * Tagged template: `${value}` binds a value, `${raw('x')}` / `${sqlFragment}` splices text. A
 * precompiled fragment may be spliced into text that binds nothing else; the whole is then
 * precompiled too.
 */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  const chunks: string[] = [strings[0]]
  const bound: unknown[] = []
  let wrapped: Sql | undefined
  values.forEach((value, i) => {
    if (value instanceof Raw) {
      chunks[chunks.length - 1] += value.text + strings[i + 1]
    } else if (value instanceof Sql && value.precompiled) {
      if (wrapped) throw new TypeError('two precompiled statements cannot be spliced into one')
      wrapped = value
      chunks[chunks.length - 1] += value.chunks[0] + strings[i + 1]
    } else if (value instanceof Sql) {
      chunks[chunks.length - 1] += value.chunks[0]
      for (let j = 0; j < value.values.length; j++) {
        bound.push(value.values[j])
        chunks.push(value.chunks[j + 1])
      }
      chunks[chunks.length - 1] += strings[i + 1]
    } else {
      bound.push(value)
      chunks.push(strings[i + 1])
    }
  })
  if (!wrapped) return new Sql(chunks, bound)
  // its placeholders are numbered for its own text: other values would take their places
  if (bound.length > 0) throw new TypeError('a precompiled statement can only be wrapped in text that binds no value')
  return precompiled(chunks[0], wrapped.values)
}

/** Joins fragments with a separator (e.g. a list of `?` for IN). */
export function join(parts: readonly (Sql | Raw)[], separator = ', '): Sql {
  const chunks: string[] = ['']
  const values: unknown[] = []
  parts.forEach((part, i) => {
    if (i > 0) chunks[chunks.length - 1] += separator
    if (part instanceof Raw) {
      chunks[chunks.length - 1] += part.text
      return
    }
    if (part.precompiled) throw new TypeError('a precompiled statement cannot be joined with others')
    chunks[chunks.length - 1] += part.chunks[0]
    for (let j = 0; j < part.values.length; j++) {
      values.push(part.values[j])
      chunks.push(part.chunks[j + 1])
    }
  })
  return new Sql(chunks, values)
}

export interface Compiled {
  text: string
  params: unknown[]
}

export function compile(fragment: Sql, placeholder: (index: number) => string): Compiled {
  let text = fragment.chunks[0]
  if (fragment.precompiled) return {text, params: [...fragment.values]}
  for (let i = 0; i < fragment.values.length; i++) text += placeholder(i + 1) + fragment.chunks[i + 1]
  return {text, params: [...fragment.values]}
}

export function inline(fragment: Sql, literal: (value: unknown) => string): string {
  if (fragment.precompiled && fragment.values.length > 0) throw new TypeError('a precompiled statement cannot be printed with its values inlined; build it as a fragment (sql``)')
  let text = fragment.chunks[0]
  for (let i = 0; i < fragment.values.length; i++) text += literal(fragment.values[i]) + fragment.chunks[i + 1]
  return text
}
