import { Effect } from "effect"
import { csvResponse } from "./Csv.js"
import { type CsvExport, CsvExportRepo } from "./CsvExportRepo.js"
import { ResponseRepo } from "./ResponseRepo.js"

/** A survey's responses as the handlers read them: the list's pages, one response, the CSV export. */
export class ResponseReads extends Effect.Service<ResponseReads>()("Responses/ResponseReads", {
  effect: Effect.gen(function*() {
    const responses = yield* ResponseRepo
    const exports = yield* CsvExportRepo
    return {
      page: responses.page,
      findJson: responses.findJson,
      /** The export as a download, read a keyset page at a time as the body streams. */
      csv: (req: CsvExport) => csvResponse(exports, req)
    } as const
  })
}) {}
