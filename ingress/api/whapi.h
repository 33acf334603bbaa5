/*
 * whapi.h - webhook deliveries over HTTP (whapi.c): the tenant's /v1/webhooks API and the
 * admin API's view of a tenant's deliveries.
 */
#ifndef MCPQ_ING_WHAPI_H
#define MCPQ_ING_WHAPI_H

#include "req.h"

#include <cjson/cJSON.h>

/*
 * The tenant API (whapi.c), for url under /v1/webhooks: authenticated like /mcp (API key
 * or HMAC signing) and rate-limited per key or app.
 *   GET  /v1/webhooks/deliveries[?limit=&cursor=&task=&status=]
 *   POST /v1/webhooks/deliveries/{id}/redeliver
 * A caller sees and redelivers only the deliveries of tasks it may see (owner.h); others
 * answer as missing ones. Fills resp (JSON body).
 */
void ing_whapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);
/* The same for the admin API, on tenant's deliveries: id NULL lists them (query as above),
 * else redelivers delivery id; the operator sees every delivery. The caller has checked the
 * operator token and the method. */
void ing_whapi_deliveries(ing_req_t *req, const char *tenant, const char *id, ing_resp_t *resp);

/* The webhook deliveries of tenant's task (the admin API's task, adm_tasks.c), newest first, as
 * the listing shows them (with their attempt logs): at most 200, among the tenant's 5,000
 * newest deliveries. A new array, or NULL when Redis failed. */
cJSON *ing_whapi_task_deliveries(ing_req_t *req, const char *tenant, const char *task);

#endif
