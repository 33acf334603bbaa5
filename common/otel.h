/*
 * otel.h - OpenTelemetry spans exported over OTLP/HTTP JSON (docs/operations.md, "Traces
 * (OpenTelemetry)").
 *
 * A span is started with otel_span_start() (or otel_span_child() for an outbound hop), given
 * attributes and a status, and handed over with otel_span_end(), which puts it in a bounded
 * queue without blocking: a full queue drops the span and counts it (reason queue_full). One
 * exporter thread sends the queue in batches as one OTLP/HTTP JSON body each
 * (`POST <endpoint>/v1/traces`) with libcurl. A batch the collector answers 429, 502, 503 or
 * 504 (the OTLP/HTTP specification's retryable codes) or whose connection it refuses is sent
 * again at most twice, after its Retry-After seconds or 1 s then 2 s, all within one export
 * timeout from the first attempt; a batch that still fails, or fails otherwise (another non-2xx
 * answer, a timeout), is dropped and counted (reason export_failed), with one warning a minute
 * at most. otel_metrics_render() writes the exporter's own series.
 *
 * The exporter reads the standard OpenTelemetry environment variables (not MCPQ_ settings;
 * docs/configuration.md lists them): it is off unless OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and off again with OTEL_TRACES_EXPORTER=none or
 * OTEL_SDK_DISABLED=true. Off, otel_span_start() returns NULL and every other function takes
 * NULL and does nothing: the cost is one load and a branch.
 *
 * Like log.c this module is one per process (the exporter, its queue and its counters are
 * process-wide): otel_init() once at start-up after curl_global_init(), otel_shutdown() once at
 * the end. Every other function is thread-safe; a span itself belongs to one thread until it
 * is ended.
 */
#ifndef MCPQ_OTEL_H
#define MCPQ_OTEL_H

#include "trace.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>

/* Span kinds and status codes as OTLP numbers them (trace.proto SpanKind, Status.StatusCode). */
typedef enum {
    OTEL_KIND_INTERNAL = 1,
    OTEL_KIND_SERVER = 2,
    OTEL_KIND_CLIENT = 3,
    OTEL_KIND_PRODUCER = 4,
    OTEL_KIND_CONSUMER = 5,
} otel_kind_t;

typedef enum { OTEL_STATUS_UNSET = 0, OTEL_STATUS_OK = 1, OTEL_STATUS_ERROR = 2 } otel_status_t;

typedef enum { OTEL_SAMPLER_ON = 0, OTEL_SAMPLER_OFF, OTEL_SAMPLER_RATIO } otel_sampler_t;

#define OTEL_ATTR_MAX 16    /* attributes a span keeps; later new keys are dropped */
#define OTEL_KEY_MAX 48     /* an attribute key, cut to fit */
#define OTEL_VALUE_MAX 200  /* a string attribute value, cut to fit */
#define OTEL_NAME_MAX 128   /* a span name, cut to fit */
#define OTEL_HEADERS_MAX 16 /* OTEL_EXPORTER_OTLP_HEADERS entries */
#define OTEL_RES_MAX 16     /* OTEL_RESOURCE_ATTRIBUTES entries */

typedef struct otel_attr {
    char key[OTEL_KEY_MAX];
    char type; /* 's', 'i' or 'b' */
    long long i;
    char s[OTEL_VALUE_MAX];
} otel_attr_t;

typedef struct otel_span {
    char trace_id[TRACE_ID_HEX + 1];
    char span_id[TRACE_SPAN_HEX + 1];
    char parent_id[TRACE_SPAN_HEX + 1]; /* "" for a root span */
    char name[OTEL_NAME_MAX];
    otel_kind_t kind;
    int64_t start_us, end_us; /* Unix microseconds (util_now_us) */
    otel_status_t status;
    char status_msg[OTEL_VALUE_MAX];
    otel_attr_t attrs[OTEL_ATTR_MAX];
    int nattrs;
} otel_span_t;

typedef struct otel_kv {
    char key[OTEL_KEY_MAX];
    char value[OTEL_VALUE_MAX];
} otel_kv_t;

/* The exporter's configuration, from the environment (otel_config_load). */
typedef struct otel_config {
    int enabled;
    char url[1024]; /* where batches are POSTed */
    otel_kv_t headers[OTEL_HEADERS_MAX];
    int nheaders;
    otel_kv_t resource[OTEL_RES_MAX]; /* service.name first, then the others */
    int nresource;
    long queue_max, batch_max, delay_ms, timeout_ms;
    otel_sampler_t sampler;
    int parent_based;  /* parentbased_*: a span with a parent follows its sampled flag */
    double ratio;      /* traceidratio's probability, 0..1 */
    char warning[256]; /* a start-up warning to log ("" when none) */
} otel_config_t;

/* Reads the OTEL_* environment into *cfg; default_service ("mcpq-ingress", "mcpq-worker") is
 * service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names one. 0, or
 * MCPQ_EINVAL with the reason in err (a value that is not a number, a sampler argument out of
 * range, an endpoint that is not http:// or https://). */
int otel_config_load(otel_config_t *cfg, const char *default_service, char *err, size_t errlen);

/* Loads the configuration and, when export is on, starts the exporter thread. 0, or
 * MCPQ_EINVAL (the reason in err: the process should refuse to start) or MCPQ_ENOMEM. */
int otel_init(const char *default_service, char *err, size_t errlen);

/* Sends what is queued (bounded by the export timeout) and stops the exporter thread. */
void otel_shutdown(void);

/* 1 while spans are exported. */
int otel_enabled(void);

/* For --print-config: one line saying whether trace export is on and where to. */
void otel_describe(FILE *out, const char *default_service);

/* The sampling decision for a span of trace_id: parent is the remote parent's context, or
 * NULL for a root span. 1 sampled, 0 not. Off, it keeps what W3C propagation alone does
 * (the parent's flag; a root is sampled). */
int otel_sample(const trace_ctx_t *parent, const char *trace_id);

/* Starts a span whose ids are ctx's trace_id and span_id, child of parent_id (NULL or "" for
 * a root), at start_us (Unix µs; 0: now). NULL when export is off or ctx is not sampled. The
 * caller owns the span until otel_span_end() or otel_span_free(). */
otel_span_t *otel_span_start(const trace_ctx_t *ctx, const char *parent_id, const char *name,
                             otel_kind_t kind, int64_t start_us);

/* An outbound hop's span: a child of the traceparent `parent` (the span it is made in), with a
 * new span id, started now. Writes into out the traceparent the hop carries: the new span's
 * when a span is returned, else parent itself ("" when parent is NULL or does not parse). */
otel_span_t *otel_span_child(const char *parent, const char *name, otel_kind_t kind,
                             char out[TRACE_PARENT_LEN + 1]);

/* Attributes (copied; cut to OTEL_VALUE_MAX). A key set again is replaced. NULL span or value:
 * nothing. */
void otel_span_str(otel_span_t *s, const char *key, const char *value);
void otel_span_int(otel_span_t *s, const char *key, long long value);
void otel_span_bool(otel_span_t *s, const char *key, int value);

/* The HTTP client attributes of a request to url (OpenTelemetry HTTP semantic conventions):
 * http.request.method, url.full (scheme, host, port and path: never the user info nor the
 * query, which may hold credentials), server.address and server.port. */
void otel_span_http(otel_span_t *s, const char *method, const char *url);

/* Error status with message (may be NULL) and the attribute error.type = type (NULL: none). */
void otel_span_error(otel_span_t *s, const char *type, const char *message);

/* Ends s at end_us (0: now) and queues it for export; s is consumed (NULL: nothing). */
void otel_span_end(otel_span_t *s, int64_t end_us);

/* Discards a span that will not be ended. NULL: nothing. */
void otel_span_free(otel_span_t *s);

/* Renders n spans as one OTLP/HTTP JSON ExportTraceServiceRequest (the process's resource) into
 * out. 0, or MCPQ_ENOMEM / MCPQ_ETOOBIG. */
int otel_spans_json(otel_span_t *const *spans, size_t n, util_buf_t *out);

/* The exporter's series in the Prometheus text format: mcpq_otel_spans_exported_total,
 * mcpq_otel_spans_dropped_total{reason}, mcpq_otel_queue_spans. 0 or MCPQ_ENOMEM. */
int otel_metrics_render(util_buf_t *out);

#endif
