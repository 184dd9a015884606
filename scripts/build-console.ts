// Builds the console's front end (src/Console/ui) with Bun's bundler into one script and one
// style sheet, and writes them as strings into src/Console/generated/Bundle.ts, which the server
// imports: so `bun build --compile` carries them in the binary. Prints their sizes, gzipped, and
// fails when together they pass the budget.
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"

const BUDGET_GZIPPED = 150 * 1024
const root = join(import.meta.dirname, "..")
const out = join(root, "src/Console/generated")

const result = await Bun.build({
  entrypoints: [join(root, "src/Console/ui/main.tsx")],
  target: "browser",
  format: "esm",
  minify: true,
  sourcemap: "none",
  define: { "process.env.NODE_ENV": JSON.stringify("production") }
})
if (!result.success) {
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
const js = result.outputs.filter((o) => o.kind === "entry-point")
const css = result.outputs.filter((o) => o.path.endsWith(".css"))
if (js.length !== 1 || css.length !== 1) {
  console.error(`expected one script and one style sheet, got ${result.outputs.map((o) => o.path).join(", ")}`)
  process.exit(1)
}
const jsText = await js[0]!.text()
const cssText = await css[0]!.text()
const hash = new Bun.CryptoHasher("sha256").update(jsText).update(cssText).digest("hex").slice(0, 16)

mkdirSync(out, { recursive: true })
writeFileSync(
  join(out, "Bundle.ts"),
  `// Written by scripts/build-console.ts from src/Console/ui; not kept in git.\n` +
    `export const consoleBundle = ${JSON.stringify({ hash, js: jsText, css: cssText })} as const\n`
)

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`
const jsGz = gzipSync(jsText).length
const cssGz = gzipSync(cssText).length
const total = jsGz + cssGz
console.log(
  `console: script ${kb(jsText.length)} (${kb(jsGz)} gzipped), style ${kb(cssText.length)} (${kb(cssGz)} gzipped); ` +
    `${kb(total)} gzipped of the ${kb(BUDGET_GZIPPED)} budget`
)
if (total > BUDGET_GZIPPED) {
  console.error("console: over the size budget")
  process.exit(1)
}
