/*
 * resp.c - the answer of one exchange (resp.h).
 */
#include "resp.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ing_resp_header(ing_resp_t *resp, const char *name, const char *value)
{
    if (resp->nheaders >= ING_RESP_MAX_HEADERS)
        return -1;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return -1;
    }
    resp->headers[resp->nheaders].name = n;
    resp->headers[resp->nheaders].value = v;
    resp->nheaders++;
    return 0;
}

void ing_resp_release(ing_resp_t *resp)
{
    free(resp->body);
    resp->body = NULL;
    if (resp->has_fd)
        close(resp->fd);
    resp->has_fd = 0;
    for (size_t i = 0; i < resp->nheaders; i++) {
        free(resp->headers[i].name);
        free(resp->headers[i].value);
    }
    resp->nheaders = 0;
}
