/* Tests worker/core/store.c's queue of requests without Redis: submitting and forgetting in any
 * order leaves exactly the requests still queued (a worker with tens of thousands of running
 * jobs forgets one queued cancellation probe per finished job). */
#include "check.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

#define MANY 50000

static void test_forget_anywhere(void)
{
    wrk_store_t *st = wrk_store_new(NULL, 1000, 60);
    CHECK(st != NULL);
    wrk_store_req_t r[4];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 3; i++)
        wrk_store_submit(st, &r[i]);
    CHECK_INT_EQ(wrk_store_pending(st), 1);
    wrk_store_forget(st, &r[1]); /* the middle */
    wrk_store_forget(st, &r[2]); /* the tail */
    CHECK_INT_EQ(wrk_store_queued(&r[1]), 0);
    CHECK_INT_EQ(wrk_store_queued(&r[2]), 0);
    wrk_store_submit(st, &r[3]); /* appended after the new tail */
    wrk_store_forget(st, &r[0]); /* the head */
    CHECK_INT_EQ(wrk_store_queued(&r[3]), 1);
    CHECK_INT_EQ(wrk_store_pending(st), 1);
    wrk_store_forget(st, &r[3]);
    CHECK_INT_EQ(wrk_store_pending(st), 0);
    wrk_store_forget(st, &r[3]); /* not queued: nothing */
    wrk_store_submit(st, &r[2]);
    CHECK_INT_EQ(wrk_store_pending(st), 1);
    wrk_store_forget(st, &r[2]);
    CHECK_INT_EQ(wrk_store_pending(st), 0);
    wrk_store_free(st);
    TEST_PASS("forgetting the head, the middle or the tail keeps the rest queued");
}

static void test_many(void)
{
    wrk_store_t *st = wrk_store_new(NULL, 1000, 60);
    wrk_store_req_t *r = calloc(MANY, sizeof(*r));
    CHECK(st != NULL && r != NULL);
    for (int i = 0; i < MANY; i++)
        wrk_store_submit(st, &r[i]);
    for (int i = 1; i < MANY; i += 2) /* every other one, newest last */
        wrk_store_forget(st, &r[i]);
    for (int i = MANY - 2; i > 0; i -= 2) /* then the rest but the first, from the tail */
        wrk_store_forget(st, &r[i]);
    CHECK_INT_EQ(wrk_store_queued(&r[0]), 1);
    CHECK_INT_EQ(wrk_store_queued(&r[2]), 0);
    CHECK_INT_EQ(wrk_store_pending(st), 1);
    wrk_store_forget(st, &r[0]);
    CHECK_INT_EQ(wrk_store_pending(st), 0);
    free(r);
    wrk_store_free(st);
    TEST_PASS("50,000 queued requests forgotten out of order");
}

int main(void)
{
    test_forget_anywhere();
    test_many();
    return 0;
}
