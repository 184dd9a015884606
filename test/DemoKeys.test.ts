import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedDemo } from "../src/Demo/Seed.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TestServer } from "./support/TestServer.js"

const surveysWith = (token: string) => outcomeOf(Effect.flatMap(clientFor(token), (api) => api.surveys.list({ urlParams: {} })))

layer(TestServer())("serve --demo on a database it seeded before", (it) => {
  it.effect("mints fresh keys and revokes the ones an earlier start printed", () =>
    Effect.gen(function*() {
      const first = yield* seedDemo()
      expect(first.seeded).toBe(true)
      expect(yield* surveysWith(first.editorToken)).toBe("ok")
      expect(yield* surveysWith(first.viewerToken)).toBe("ok")

      const second = yield* seedDemo()
      expect(second.seeded).toBe(false)
      expect(yield* surveysWith(second.editorToken)).toBe("ok")
      expect(yield* surveysWith(second.viewerToken)).toBe("ok")
      expect(yield* surveysWith(first.editorToken)).toBe("Unauthorized")
      expect(yield* surveysWith(first.viewerToken)).toBe("Unauthorized")
    }))
})
