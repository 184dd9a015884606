import { Metric, MetricBoundaries } from "effect"

// The service's metrics (v1-extensions §X4). They live in the process's metric registry, which
// costs an increment each; only an exporter (OTLP, src/Telemetry/Telemetry.ts, or the Prometheus
// listener, src/Telemetry/Prometheus.ts) ever reads them.

/** Answered requests, tagged `route` (the matched route template, or `unmatched`), `method` and `status`. */
export const httpRequests = Metric.counter("http.server.requests", {
  description: "HTTP requests answered, by route template, method and status",
  incremental: true
})

/** Time to answer a request in milliseconds, tagged like `httpRequests`. */
export const httpRequestDuration = Metric.histogram(
  "http.server.request.duration",
  MetricBoundaries.exponential({ start: 0.25, factor: 2, count: 16 }),
  "Time to answer a request, in milliseconds, by route template, method and status"
)

/**
 * Finished webhook delivery attempts, tagged `outcome`: `delivered`, `retrying`, `given_up` (the
 * last of the schedule failed) or `disabled` (the attempt switched its webhook off, a 410 or the
 * fifth day of failures, or its webhook was switched off meanwhile).
 */
export const webhookDeliveries = Metric.counter("webhook.deliveries", {
  description: "Webhook delivery attempts by outcome",
  incremental: true
})

/** Events not yet fanned out to webhooks plus deliveries waiting for an attempt. */
export const outboxDepth = Metric.gauge("webhook.outbox.depth", {
  description: "Events not yet fanned out plus deliveries still pending"
})

/** Response changes the stored analytics do not include yet. */
/** Seconds since the earliest pending delivery fell due; 0 when none is due. */
export const oldestDueDeliveryAge = Metric.gauge("webhook.delivery.oldest_due_age", {
  description: "Seconds since the earliest pending webhook delivery fell due (0 when none is due)"
})

export const aggregatorLag = Metric.gauge("analytics.aggregator.lag", {
  description: "Response changes not yet applied to the stored analytics"
})

/** Requests the quota refused, tagged `reason`: `rate_limited` or `service_unavailable`. */
export const quotaRefusals = Metric.counter("quota.refusals", {
  description: "Requests refused by the request quota, by reason",
  incremental: true
})

/** PostgreSQL's pool: connections open, tagged `db.client.connection.state` (`used` or `idle`). */
export const poolConnections = Metric.gauge("db.client.connection.count", {
  description: "Connections of the PostgreSQL pool, by state (used, idle)"
})

/** PostgreSQL's pool: statements waiting for a free connection. */
export const poolWaiting = Metric.gauge("db.client.connection.pending_requests", {
  description: "Requests waiting for a free connection of the PostgreSQL pool"
})
