import { HttpServerResponse } from "@effect/platform"
import { Clock, Duration, Effect, Either, Option, Schema } from "effect"
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto"
import { periodJob } from "../Background/Jobs.js"
import { InvalidRequest } from "../Domain/Errors.js"
import { Transactions } from "../Sql/Transactions.js"
import { IdempotencyStore } from "./IdempotencyStore.js"
import { documentAnswerHeader } from "./OpenApiWire.js"

/** How long the first answer to a request with an `Idempotency-Key` is kept (v1-extensions §X2.4). */
export const IDEMPOTENCY_WINDOW_MILLIS = 24 * 3_600_000

/** The request header, and the header that marks a replayed answer. */
export const IDEMPOTENCY_HEADER = "Idempotency-Key"
export const REPLAYED_HEADER = "Idempotent-Replayed"

const keyShape = /^[\x20-\x7e]{1,255}$/

/**
 * The request header as an HttpApi endpoint declares it (header names are lower case there). Its
 * format is checked by `idempotencyKeyOf`, so that a bad key answers with the issue path
 * `Idempotency-Key`.
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.annotations({
    // Checked by `idempotencyKeyOf` (a 400 at the path Idempotency-Key); declared here.
    jsonSchema: { type: "string", minLength: 1, maxLength: 255, pattern: keyShape.source },
    description: "1 to 255 printable ASCII characters. Within 24 hours a request repeating the key with the same " +
      "body gets the first answer again (same status and body, header Idempotent-Replayed: true) and changes " +
      "nothing; the same key with another body answers 400 (issue path Idempotency-Key)."
  }))
})

/** Adds the replay header to the OpenAPI description of a creation's success answer. */
export const documentReplayHeader = (status: number) =>
  documentAnswerHeader(status, REPLAYED_HEADER, {
    description: "`true` when this is the stored first answer to an earlier request with the same Idempotency-Key.",
    schema: { type: "string", enum: ["true"] }
  })

const invalidKey = (message: string) =>
  new InvalidRequest({
    message: `Invalid \`${IDEMPOTENCY_HEADER}\` header: ${message}.`,
    issues: [{ path: IDEMPOTENCY_HEADER, message }]
  })

/** The header's value when one was sent: 1 to 255 printable ASCII characters, else 400. */
export const idempotencyKeyOf = (header: string | undefined): Either.Either<Option.Option<string>, InvalidRequest> =>
  header === undefined
    ? Either.right(Option.none())
    : keyShape.test(header)
    ? Either.right(Option.some(header))
    : Either.left(invalidKey("expected 1 to 255 printable ASCII characters"))

/** A stored or fresh answer: the status and the exact body text. */
export interface Answer {
  readonly status: number
  readonly body: string
}

/** Whose keys these are: a workspace (API keys) or one respondent token. */
export type IdempotencyScope =
  | { readonly _tag: "Workspace"; readonly workspaceId: string }
  | { readonly _tag: "Respondent"; readonly tokenHash: string }

/** The stored form of a scope (`idempotency_keys.scope`). */
export const scopeText = (scope: IdempotencyScope): string =>
  scope._tag === "Workspace" ? `workspace:${scope.workspaceId}` : `respondent:${scope.tokenHash}`

/** What identifies a request beside its key: method, path and the decoded body, hashed. */
export const requestHash = (method: string, path: string, body: unknown): string =>
  createHash("sha256").update(`${method} ${path}\n${JSON.stringify(body)}`).digest("base64url")

/** A key as stored: its hash, so that the database holds nothing that opens a sealed answer. */
export const storedKey = (key: string): string => createHash("sha256").update(key).digest("base64url")

const sealedPrefix = "sealed:"

/** The AES-256-GCM key of one key's sealed answer: known only to whoever holds the key itself. */
const answerKey = (key: string, scope: string) => Buffer.from(hkdfSync("sha256", key, scope, "idempotent answer", 32))

/** An answer encrypted under its key: nonce, tag and ciphertext, base64url. */
const seal = (key: string, scope: string, body: string): string => {
  const nonce = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", answerKey(key, scope), nonce)
  const text = Buffer.concat([cipher.update(body, "utf8"), cipher.final()])
  return sealedPrefix + Buffer.concat([nonce, cipher.getAuthTag(), text]).toString("base64url")
}

/** A sealed answer opened with its key; none if it does not open (another key, a damaged row). */
const unseal = (key: string, scope: string, stored: string): Option.Option<string> => {
  const bytes = Buffer.from(stored.slice(sealedPrefix.length), "base64url")
  try {
    const decipher = createDecipheriv("aes-256-gcm", answerKey(key, scope), bytes.subarray(0, 12))
    decipher.setAuthTag(bytes.subarray(12, 28))
    return Option.some(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8"))
  } catch {
    return Option.none()
  }
}

/** The JSON answer of a creation, with `Idempotent-Replayed: true` when it is a replay. */
export const answerResponse = (answer: Answer & { readonly replayed: boolean }) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    contentType: "application/json",
    headers: answer.replayed ? { [REPLAYED_HEADER]: "true" } : {}
  })

/**
 * Creations that a client may retry safely. The key is claimed by inserting its row in the
 * transaction that creates the thing, and the row's primary key (scope, key hash) is what decides
 * between two requests carrying one key: the second waits for the first's transaction and then
 * finds the stored answer. A creation that fails stores nothing, so a retry runs it again.
 * An answer that holds a secret (an embed URL, whose token is otherwise stored only hashed) is
 * stored sealed under a key derived from the Idempotency-Key, which only the client holds.
 */
export class Idempotency extends Effect.Service<Idempotency>()("Http/Idempotency", {
  effect: Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const transactions = yield* Transactions

    /**
     * Runs `create` once per key and scope within 24 hours: a repeat with the same request gets
     * the first answer again (`replayed: true`), one with another request 400 and nothing runs.
     * Without a key, `create` just runs.
     */
    const once = <E, R>(
      input: {
        readonly scope: IdempotencyScope
        readonly key: Option.Option<string>
        readonly request: string
        /** The answer holds a secret: stored sealed, opened only by a repeat with the same key. */
        readonly sealed?: boolean
      },
      create: Effect.Effect<Answer, E, R>
    ): Effect.Effect<Answer & { readonly replayed: boolean }, E | InvalidRequest, R> => {
      if (Option.isNone(input.key)) return Effect.map(create, (answer) => ({ ...answer, replayed: false }))
      const clearKey = input.key.value
      const key = storedKey(clearKey)
      const scope = scopeText(input.scope)
      return Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* store.claim(scope, key, input.request, now, now - IDEMPOTENCY_WINDOW_MILLIS)
        if (claimed) {
          const answer = yield* create
          const body = input.sealed === true ? seal(clearKey, scope, answer.body) : answer.body
          yield* store.storeAnswer(scope, key, { status: answer.status, body })
          return { ...answer, replayed: false }
        }
        const stored = yield* store.storedAnswer(scope, key)
        if (Option.isNone(stored)) return yield* Effect.dieMessage("idempotency key neither claimed nor stored")
        const first = stored.value
        if (first.requestHash !== input.request) {
          return yield* invalidKey("this key was used in the last 24 hours for another request")
        }
        const body = first.body.startsWith(sealedPrefix) ? unseal(clearKey, scope, first.body) : Option.some(first.body)
        if (Option.isNone(body)) return yield* Effect.dieMessage("a sealed idempotent answer did not open with its key")
        return { status: first.status, body: body.value, replayed: true }
      }).pipe(transactions.within, Effect.catchTag("SqlError", Effect.die))
    }

    /** Deletes answers older than the window; answers how many. */
    const prune = Effect.fn("Idempotency.prune")(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* store.prune(now - IDEMPOTENCY_WINDOW_MILLIS)
    })

    return { once, prune } as const
  })
}) {}

/** Prunes expired idempotency answers at start and then every hour: once an hour over all processes. */
export const idempotencyPurgeJob = Effect.flatMap(Idempotency, (idempotency) =>
  periodJob({ name: "idempotency key purge", key: "idempotency-purge", period: Duration.hours(1), run: idempotency.prune() }))

