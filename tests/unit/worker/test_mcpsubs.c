/* Tests worker/executors/mcpsubs.c: who subscribed to which uri of which upstream, the uris a
 * stream names, the subscribers other than one, and the bound on the table. */
#include "check.h"
#include "err.h"
#include "mcpsubs.h"

#include <stdio.h>
#include <string.h>

static void test_table(void)
{
    wrk_mcpsubs_t *s = wrk_mcpsubs_new();
    CHECK(s != NULL);
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up1", "t", "a", "u://1"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up1", "t", "a", "u://1"), 0); /* once per subscriber */
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up1", "t", "b", "u://1"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up1", "t", "a", "u://2"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up2", "t", "a", "u://1"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_count(s, "up1"), 3);
    CHECK_INT_EQ(wrk_mcpsubs_count(s, "up2"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_count(s, "up3"), 0);
    CHECK_INT_EQ(wrk_mcpsubs_others(s, "up1", "t", "a", "u://1"), 1);
    CHECK_INT_EQ(wrk_mcpsubs_others(s, "up1", "t", "a", "u://2"), 0);
    cJSON *uris = wrk_mcpsubs_uris(s, "up1");
    CHECK_INT_EQ(cJSON_GetArraySize(uris), 2); /* distinct */
    cJSON_Delete(uris);
    CHECK_INT_EQ(wrk_mcpsubs_remove(s, "up1", "t", "b", "u://1"), 1); /* a's stays */
    CHECK_INT_EQ(wrk_mcpsubs_remove(s, "up1", "t", "b", "u://1"), 1); /* not one: no-op */
    CHECK_INT_EQ(wrk_mcpsubs_remove(s, "up1", "t", "a", "u://1"), 0);
    uris = wrk_mcpsubs_uris(s, "up1");
    CHECK_INT_EQ(cJSON_GetArraySize(uris), 1);
    CHECK_STR_EQ(cJSON_GetArrayItem(uris, 0)->valuestring, "u://2");
    cJSON_Delete(uris);
    uris = wrk_mcpsubs_uris(s, "up3");
    CHECK_INT_EQ(cJSON_GetArraySize(uris), 0);
    cJSON_Delete(uris);
    wrk_mcpsubs_free(s);
    wrk_mcpsubs_free(NULL);
    TEST_PASS("subscriptions per upstream, uri and (tenant, server)");
}

static void test_bound(void)
{
    wrk_mcpsubs_t *s = wrk_mcpsubs_new();
    char uri[32];
    for (int i = 0; i < WRK_MCPSUBS_MAX; i++) {
        snprintf(uri, sizeof(uri), "u://%d", i);
        CHECK_INT_EQ(wrk_mcpsubs_add(s, "up", "t", "a", uri), 1);
    }
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up", "t", "a", "u://one-more"), MCPQ_ETOOBIG);
    CHECK_INT_EQ(wrk_mcpsubs_add(s, "up", "t", "a", "u://0"), 0); /* known: still fine */
    wrk_mcpsubs_free(s);
    TEST_PASS("at most WRK_MCPSUBS_MAX subscriptions per worker");
}

int main(void)
{
    test_table();
    test_bound();
    return 0;
}
