/**
 * Writes the OpenAPI document that `/openapi.json` serves to the file named by the first
 * argument, or prints it: `bun scripts/openapi.ts openapi.json`.
 */
import { OpenApi } from "@effect/platform"
import { Api } from "../src/Api.js"

const text = `${JSON.stringify(OpenApi.fromApi(Api), null, 2)}\n`
const target = process.argv[2]
if (target === undefined) process.stdout.write(text)
else await Bun.write(target, text)
