import { join } from "node:path"

/**
 * What `import path from "#scalar-module" with { type: "file" }` (src/Http/DocsPage.ts) gives under
 * Bun: the path of @effect/platform's module holding Scalar's script. Vitest's resolver knows
 * neither the tsconfig path nor file imports, so vitest.config.ts points the name here.
 */
export default join(import.meta.dirname, "..", "..", "node_modules/@effect/platform/dist/esm/internal/httpApiScalar.js")
