import * as Pg from "pg"
import { isStalePlan } from "./Busy.js"
import { LIFT_STATEMENT_TIMEOUT } from "./Dialect.js"

/**
 * A parameter as PostgreSQL can take it. A boolean is bound as SQLite binds it, 1 or 0: flags are
 * integer columns on both databases (src/Sql/Ddl.ts), and the repositories pass booleans for them.
 * PostgreSQL text cannot hold U+0000: in a string it becomes U+FFFD, so a lookup by such a value
 * finds nothing (as on SQLite, where no stored id holds one) instead of failing the statement.
 */
const boundValue = (value: unknown): unknown => {
  if (typeof value === "boolean") return value ? 1 : 0
  if (typeof value === "string" && value.includes("\u0000")) return value.replaceAll("\u0000", "\uFFFD")
  return value
}

const bound = (values: unknown): unknown => (Array.isArray(values) ? values.map(boundValue) : values)

const boundArgs = (args: Array<unknown>): Array<unknown> => {
  const [first, second] = args
  if (typeof first === "object" && first !== null && "values" in first) return [{ ...first, values: bound(first.values) }, ...args.slice(1)]
  if (Array.isArray(second)) return [first, bound(second), ...args.slice(2)]
  return args
}

/**
 * How long the client waits for the answer to a statement before it takes the connection for
 * dead: the server's own timeout, plus `ANSWER_GRACE_MS` for the answer to arrive.
 */
export const ANSWER_GRACE_MS = 5000

/** The error a statement fails with when its connection gave no answer in time (read as "database unavailable"). */
const noAnswer = (ms: number) =>
  Object.assign(new Error(`Connection terminated: no answer from PostgreSQL within ${ms} ms`), { code: "ETIMEDOUT" })

/**
 * The names under which a pool's connections prepare statement texts (`parameterised`): each is
 * parsed and planned once per connection instead of at every run. A text is named the second
 * time it is sent (a statement run once, an import's odd-sized last batch, is not worth a
 * prepared statement on every connection), and past `MAX_NAMED` texts the rest run unnamed, so
 * the server's memory per connection stays bounded.
 */
export const MAX_NAMED = 512

const statementNames = () => {
  // Texts seen once (undefined) or named; texts seen once are remembered up to a bound of their own.
  const seen = new Map<string, string | undefined>()
  let named = 0
  return (text: string): string | undefined => {
    const known = seen.get(text)
    if (known !== undefined) return known
    if (!seen.has(text)) {
      if (seen.size - named < MAX_NAMED * 4) seen.set(text, undefined)
      return undefined
    }
    if (named >= MAX_NAMED) return undefined
    const name = `s${++named}`
    seen.set(text, name)
    return name
  }
}

type Callback = (error: unknown, result: unknown) => void

/**
 * A statement to prepare, as the client was asked to run it, its parameters bound (`boundValue`),
 * in a configuration of its own, and its callback; else undefined. A text with parameters, or one
 * sent as a query object (the reader's reads and the client's rows as arrays, always one
 * statement each, parameters or not). A text without parameters sent as a string keeps the simple
 * protocol, which allows several statements in one text (a migration).
 */
const parameterised = (args: Array<unknown>): { readonly config: Pg.QueryConfig; readonly callback: Callback } | undefined => {
  const [first, second, third] = args
  if (typeof first === "string" && Array.isArray(second) && second.length > 0 && typeof third === "function") {
    return { config: { text: first, values: second.map(boundValue) }, callback: third as Callback }
  }
  if (
    typeof first === "object" && first !== null && Object.getPrototypeOf(first) === Object.prototype &&
    "text" in first && typeof first.text === "string" && !("name" in first) &&
    "values" in first && Array.isArray(first.values) && typeof second === "function"
  ) {
    return { config: { ...first, text: first.text, values: first.values.map(boundValue) }, callback: second as Callback }
  }
  return undefined
}

/**
 * `pg` clients whose statements bind their parameters through `bound`, run prepared, and get an
 * answer within `answerWithinMs` or lose their connection.
 *
 * - **Prepared.** A statement to prepare (`parameterised`) runs under its text's name
 *   (`statementNames`, one table per pool). When a migration changed a column's type under a prepared statement
 *   (`isStalePlan`), the connection prepares every text again under new names; a statement outside
 *   a transaction is then sent again at once, while one inside a transaction fails it (the
 *   transaction is aborted, and the request answers 503 and may be retried).
 * - **Answered in time.** A server that stopped answering without closing the connection (a
 *   frozen host or process, a network path that drops packets) otherwise leaves a statement
 *   waiting until TCP gives up, many minutes later; its own `statement_timeout` cannot end it,
 *   since the answer would not arrive either. Destroying the socket fails the statement as a lost
 *   connection (503), and the pool drops the connection.
 */
export const serviceClient = (answerWithinMs: number) => {
  const nameOf = statementNames()
  return class ServiceClient extends Pg.Client {
    /** In a transaction that lifted the statement timeout: no bound until it ends. */
    private unbounded = false
    /** Between `BEGIN` and its `COMMIT` or `ROLLBACK`. */
    private inTransaction = false
    /** Raised when a prepared statement went stale: this connection's names are prepared anew. */
    private generation = 0

    constructor(config?: string | Pg.ClientConfig) {
      super(config)
      // An error after the connection was given up (its socket destroyed) has no listener left to take it.
      this.on("error", () => {})
      const query = this.query.bind(this) as (...args: Array<unknown>) => unknown
      const send = (args: Array<unknown>, callback: Callback) => {
        if (this.unbounded) return query(...args, callback)
        const timer = setTimeout(() => this.connection.stream.destroy(noAnswer(answerWithinMs)), answerWithinMs)
        return query(...args, (error: unknown, result: unknown) => {
          clearTimeout(timer)
          callback(error, result)
        })
      }
      // `config` is the statement's own (`parameterised`), and pg copies it when the statement is sent:
      // naming it in place costs no further copy.
      const prepared = (config: Pg.QueryConfig, callback: Callback, retried: boolean): unknown => {
        const name = nameOf(config.text)
        if (name === undefined) return send([config], callback)
        config.name = this.generation === 0 ? name : `${name}_${this.generation}`
        return send([config], (error, result) => {
          if (!isStalePlan(error)) return callback(error, result)
          this.generation++
          if (this.inTransaction || retried) return callback(error, result)
          prepared(config, callback, true)
        })
      }
      this.query = ((...args: Array<unknown>) => {
        const statement = parameterised(args)
        if (statement !== undefined) return prepared(statement.config, statement.callback, false)
        const bound = boundArgs(args)
        const text = typeof bound[0] === "string" ? bound[0] : undefined
        if (text === LIFT_STATEMENT_TIMEOUT) this.unbounded = true
        else if (text === "COMMIT" || text === "ROLLBACK") this.unbounded = this.inTransaction = false
        else if (text !== undefined && text.startsWith("BEGIN")) this.inTransaction = true
        const callback = bound[bound.length - 1]
        if (typeof callback !== "function") return query(...bound)
        return send(bound.slice(0, -1), callback as Callback)
      }) as Pg.Client["query"]
    }
  }
}
