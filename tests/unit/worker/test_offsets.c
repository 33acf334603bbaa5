/* Tests worker/offsets.c: the per-partition commit point with out-of-order completion. */
#include "check.h"
#include "offsets.h"

#include <stdlib.h>

static void test_in_order(void)
{
    wrk_offpart_t *dirty = NULL;
    wrk_offpart_t p;
    wrk_offpart_init(&p, 3, &dirty);
    wrk_offnode_t *a = wrk_offpart_add(&p, 10);
    wrk_offnode_t *b = wrk_offpart_add(&p, 11);
    CHECK_INT_EQ(p.count, 2);
    CHECK_INT_EQ(p.commit, -1);
    CHECK_INT_EQ(wrk_offnode_done(a), 1);
    CHECK_INT_EQ(p.commit, 11);
    CHECK(dirty == &p);
    CHECK(wrk_offpart_pop_dirty(&dirty) == &p);
    CHECK(dirty == NULL);
    CHECK_INT_EQ(wrk_offnode_done(b), 1);
    CHECK_INT_EQ(p.commit, 12);
    CHECK_INT_EQ(p.count, 0);
    CHECK(wrk_offpart_pop_dirty(&dirty) == &p);
    CHECK(wrk_offpart_pop_dirty(&dirty) == NULL);
    TEST_PASS("in order: offset + 1 after each");
}

static void test_out_of_order(void)
{
    wrk_offpart_t *dirty = NULL;
    wrk_offpart_t p;
    wrk_offpart_init(&p, 0, &dirty);
    wrk_offnode_t *n[5];
    for (int i = 0; i < 5; i++)
        n[i] = wrk_offpart_add(&p, 100 + i * 2); /* gaps (compaction, transactions) */
    CHECK_INT_EQ(wrk_offnode_done(n[3]), 0);
    CHECK_INT_EQ(wrk_offnode_done(n[1]), 0);
    CHECK_INT_EQ(p.commit, -1);
    CHECK(dirty == NULL);
    CHECK_INT_EQ(wrk_offnode_done(n[0]), 1); /* 0 and 1 finished: commit after 102 */
    CHECK_INT_EQ(p.commit, 103);
    CHECK_INT_EQ(wrk_offnode_done(n[2]), 1); /* 2 and 3 */
    CHECK_INT_EQ(p.commit, 107);
    CHECK_INT_EQ(p.count, 1);
    CHECK_INT_EQ(wrk_offnode_done(n[4]), 1);
    CHECK_INT_EQ(p.commit, 109);
    CHECK(wrk_offpart_pop_dirty(&dirty) == &p);
    CHECK(dirty == NULL);
    TEST_PASS("out of order: only the finished prefix counts");
}

static void test_abandon_and_detach(void)
{
    wrk_offpart_t *dirty = NULL;
    wrk_offpart_t p, q;
    wrk_offpart_init(&p, 0, &dirty);
    wrk_offpart_init(&q, 1, &dirty);
    wrk_offnode_t *a = wrk_offpart_add(&p, 0);
    wrk_offnode_t *b = wrk_offpart_add(&p, 1);
    wrk_offnode_t *c = wrk_offpart_add(&p, 2);
    wrk_offnode_t *d = wrk_offpart_add(&p, 3);
    wrk_offnode_t *x = wrk_offpart_add(&q, 0);
    wrk_offnode_abandon(a); /* blocks everything after it */
    CHECK_INT_EQ(wrk_offnode_done(b), 0);
    CHECK_INT_EQ(p.commit, -1);
    CHECK_INT_EQ(wrk_offnode_done(x), 1);
    /* Make p dirty too, so detaching must unlink it from the middle of the list. */
    wrk_offpart_t r;
    wrk_offpart_init(&r, 2, &dirty);
    wrk_offnode_t *y = wrk_offpart_add(&r, 5);
    CHECK_INT_EQ(wrk_offnode_done(y), 1);
    p.dirty = 0;
    wrk_offpart_detach(&p); /* frees a and b, detaches c and d */
    CHECK_INT_EQ(p.count, 0);
    CHECK(p.head == NULL);
    CHECK(c->part == NULL && d->part == NULL);
    CHECK_INT_EQ(wrk_offnode_done(c), 0); /* a detached node frees itself */
    wrk_offnode_abandon(d);
    /* q and r are still dirty, in some order. */
    wrk_offpart_t *first = wrk_offpart_pop_dirty(&dirty);
    wrk_offpart_t *second = wrk_offpart_pop_dirty(&dirty);
    CHECK((first == &q && second == &r) || (first == &r && second == &q));
    CHECK(wrk_offpart_pop_dirty(&dirty) == NULL);
    /* Detaching a dirty partition unlinks it. */
    wrk_offnode_t *z = wrk_offpart_add(&q, 1);
    CHECK_INT_EQ(wrk_offnode_done(z), 1);
    wrk_offnode_t *w = wrk_offpart_add(&r, 6);
    CHECK_INT_EQ(wrk_offnode_done(w), 1);
    wrk_offpart_detach(&q);
    CHECK(wrk_offpart_pop_dirty(&dirty) == &r);
    CHECK(wrk_offpart_pop_dirty(&dirty) == NULL);
    wrk_offpart_detach(&r);
    TEST_PASS("abandoned records block the commit point; detach frees and detaches");
}

static void test_many(void)
{
    wrk_offpart_t *dirty = NULL;
    wrk_offpart_t p;
    wrk_offpart_init(&p, 0, &dirty);
    enum { N = 10000 };
    wrk_offnode_t **n = malloc(N * sizeof(*n));
    CHECK(n != NULL);
    for (int i = 0; i < N; i++)
        n[i] = wrk_offpart_add(&p, i);
    /* Finish evens then odds in reverse. */
    for (int i = 0; i < N; i += 2)
        wrk_offnode_done(n[i]);
    CHECK_INT_EQ(p.commit, 1);
    for (int i = N - 1; i > 0; i -= 2)
        wrk_offnode_done(n[i]);
    CHECK_INT_EQ(p.commit, N);
    CHECK_INT_EQ(p.count, 0);
    free(n);
    TEST_PASS("ten thousand records");
}

int main(void)
{
    test_in_order();
    test_out_of_order();
    test_abandon_and_detach();
    test_many();
    return 0;
}
