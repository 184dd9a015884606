import { readFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "..")

export interface DocBlock {
  readonly file: string
  /** The document and the heading the block stands under: `docs/api.md ### Verifying a delivery`. */
  readonly heading: string
  readonly text: string
}

/** Every fenced block of `language` in a document of the project, in order, with the heading it stands under. */
export const fencedBlocks = (file: string, language: string): ReadonlyArray<DocBlock> => {
  const lines = readFileSync(join(root, file), "utf8").split("\n")
  const blocks: Array<DocBlock> = []
  let heading = ""
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    if (line.startsWith("#")) heading = line
    if (line !== "```" + language) continue
    const body: Array<string> = []
    while (i + 1 < lines.length && lines[i + 1] !== "```") body.push(lines[++i] ?? "")
    blocks.push({ file, heading: `${file} ${heading}`, text: body.join("\n") })
  }
  return blocks
}
