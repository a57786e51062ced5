// A SQL fragment: text chunks with the values bound between them. One fragment renders two
// ways, so the statement the relay binds and the one `outbox sql` prints can never drift:
// parameterised ($1 / ?) for the driver, or with each value inlined as an escaped literal.

export class Sql {
  constructor(
    readonly chunks: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

/** Text that is trusted SQL (already-quoted identifiers, keywords, validated integers). */
export class Raw {
  constructor(readonly text: string) {}
}

export function raw(text: string): Raw {
  return new Raw(text)
}

/** Tagged template: `${value}` binds a value, `${raw('x')}` / `${sqlFragment}` splices text. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  const chunks: string[] = [strings[0]]
  const bound: unknown[] = []
  values.forEach((value, i) => {
    if (value instanceof Raw) {
      chunks[chunks.length - 1] += value.text + strings[i + 1]
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
  return new Sql(chunks, bound)
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
  for (let i = 0; i < fragment.values.length; i++) text += placeholder(i + 1) + fragment.chunks[i + 1]
  return {text, params: [...fragment.values]}
}

export function inline(fragment: Sql, literal: (value: unknown) => string): string {
  let text = fragment.chunks[0]
  for (let i = 0; i < fragment.values.length; i++) text += literal(fragment.values[i]) + fragment.chunks[i + 1]
  return text
}
