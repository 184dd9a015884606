/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "frozen-migrations",
      comment: "A migration is frozen: it imports nothing from feature code, only src/Sql's DDL and dialect helpers.",
      severity: "error",
      from: { path: "^src/Sql/migrations/" },
      to: { path: "^src/", pathNot: "^src/Sql/(Ddl|Dialect)\\.ts$" }
    },
    {
      name: "domain-imports-no-feature",
      comment: "src/Domain holds schemas and errors that every feature uses; it imports no feature.",
      severity: "error",
      from: { path: "^src/Domain/" },
      to: { path: "^src/", pathNot: "^src/Domain/" }
    },
    {
      name: "no-folder-cycles",
      comment: "No cycle between the folders of src.",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { path: "^src/([^/]+)/", pathNot: "^src/$1/", circular: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" }
  }
}
