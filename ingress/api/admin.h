/*
 * admin.h - the operator API under /admin/v1 (docs/api.md, "Administration").
 *
 * Authenticated with `Authorization: Bearer $MCPQ_ADMIN_TOKEN` (unset: the API is off and
 * answers 404). Resources, all JSON, in the config file's field names plus the
 * metadata `createTime`, `updateTime`, `etag`:
 *
 *   /admin/v1/tenants[/{t}]                               GET POST | GET PATCH DELETE
 *   /admin/v1/tenants/{t}/apiKeys[/{id}]                  GET POST | GET DELETE
 *   /admin/v1/tenants/{t}/apps[/{app_id}]                 GET POST | GET PATCH DELETE
 *   /admin/v1/tenants/{t}/apps/{app_id}:rotateSecret      POST
 *   /admin/v1/tenants/{t}/webhooks[/{id}]                 GET POST | GET PATCH DELETE
 *   /admin/v1/tenants/{t}/deliveries                      GET (webhook deliveries)
 *   /admin/v1/tenants/{t}/deliveries/{id}:redeliver       POST
 *   /admin/v1/tenants/{t}/tasks[/{id}]                    GET | GET (history, deliveries)
 *   /admin/v1/tenants/{t}/tasks/{id}:cancel               POST
 *   /admin/v1/tenants/{t}/servers[/{name}]                GET POST | GET PATCH DELETE
 *   /admin/v1/tenants/{t}/tools[/{name}]                  GET POST | GET
 *   /admin/v1/tenants/{t}/tools/{name}:rename             POST {"name": new}
 *   /admin/v1/tenants/{t}/tools/{name}/versions[/{v}]     GET POST | GET PATCH DELETE
 *   /admin/v1/tenants/{t}/tools/{name}/versions/{v}:publish|:offline   POST
 *   /admin/v1/config                                      GET (export) PUT (apply; ?prune=true)
 *   /admin/v1/config/events                               GET (MCPQ_CONFIG applied or refused)
 *
 * Lists take pageSize, pageToken, filter, orderBy (listing.h). A write carrying If-Match
 * whose etag is not the object's current one gets 412. Every write is a compare-and-set on
 * the registry (regstore.h), validated for the whole tenant as a config file would be, so
 * replicas pick it up within one refresh (250 ms) and nothing a write leaves behind can fail
 * to load.
 */
#ifndef MCPQ_ING_ADMIN_H
#define MCPQ_ING_ADMIN_H

#include "req.h"

#include <cjson/cJSON.h>

/* Handles a request to /admin/... (url as libmicrohttpd decoded it). */
void ing_admin_api(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);

/*
 * The listing of a tenant's tools (the admin API's GET .../tools and the system
 * server's list_tools tool): tool_docs holds registry tool documents (any tenant's; others
 * are skipped), params the request's pageSize, pageToken, filter and orderBy (strings or
 * absent). Returns {"tools": [...], "nextPageToken"?} or NULL with err set (a message for the
 * client naming the parameter).
 */
cJSON *ing_admin_list_tools(const char *tenant, const cJSON *tool_docs, const char *page_size,
                            const char *page_token, const char *filter, const char *order_by,
                            char *err, size_t err_size);

#endif
