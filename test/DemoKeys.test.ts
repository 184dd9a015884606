import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { seedDemo } from "../src/Demo/Seed.js"
import { get, TestServer } from "./support/TestServer.js"

const surveysWith = (token: string) => Effect.map(get("/api/v1/surveys", token), (res) => res.status)

layer(TestServer())("serve --demo on a database it seeded before", (it) => {
  it.effect("mints fresh keys and revokes the ones an earlier start printed", () =>
    Effect.gen(function*() {
      const first = yield* seedDemo()
      expect(first.seeded).toBe(true)
      expect(yield* surveysWith(first.editorToken)).toBe(200)
      expect(yield* surveysWith(first.viewerToken)).toBe(200)

      const second = yield* seedDemo()
      expect(second.seeded).toBe(false)
      expect(yield* surveysWith(second.editorToken)).toBe(200)
      expect(yield* surveysWith(second.viewerToken)).toBe(200)
      expect(yield* surveysWith(first.editorToken)).toBe(401)
      expect(yield* surveysWith(first.viewerToken)).toBe(401)
    }))
})
