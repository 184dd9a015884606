// The library ships no types; its answer is decoded with a Schema where it is used (test/Metrics.test.ts).
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown
}
