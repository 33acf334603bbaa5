/* Tests worker/core/offsets.c: the per-partition commit point with out-of-order completion. */
#include "check.h"
#include "offsets.h"

#include <stdlib.h>

static void test_in_order(void)
{
    wrk_offsets_part_t *dirty = NULL;
    wrk_offsets_part_t p;
    wrk_offsets_part_init(&p, 3, &dirty);
    wrk_offsets_node_t *a = wrk_offsets_part_add(&p, 10);
    wrk_offsets_node_t *b = wrk_offsets_part_add(&p, 11);
    CHECK_INT_EQ(p.count, 2);
    CHECK_INT_EQ(p.commit, -1);
    CHECK_INT_EQ(wrk_offsets_node_done(a), 1);
    CHECK_INT_EQ(p.commit, 11);
    CHECK(dirty == &p);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == &p);
    CHECK(dirty == NULL);
    CHECK_INT_EQ(wrk_offsets_node_done(b), 1);
    CHECK_INT_EQ(p.commit, 12);
    CHECK_INT_EQ(p.count, 0);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == &p);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == NULL);
    TEST_PASS("in order: offset + 1 after each");
}

static void test_out_of_order(void)
{
    wrk_offsets_part_t *dirty = NULL;
    wrk_offsets_part_t p;
    wrk_offsets_part_init(&p, 0, &dirty);
    wrk_offsets_node_t *n[5];
    for (int i = 0; i < 5; i++)
        n[i] = wrk_offsets_part_add(&p, 100 + i * 2); /* gaps (compaction, transactions) */
    CHECK_INT_EQ(wrk_offsets_node_done(n[3]), 0);
    CHECK_INT_EQ(wrk_offsets_node_done(n[1]), 0);
    CHECK_INT_EQ(p.commit, -1);
    CHECK(dirty == NULL);
    CHECK_INT_EQ(wrk_offsets_node_done(n[0]), 1); /* 0 and 1 finished: commit after 102 */
    CHECK_INT_EQ(p.commit, 103);
    CHECK_INT_EQ(wrk_offsets_node_done(n[2]), 1); /* 2 and 3 */
    CHECK_INT_EQ(p.commit, 107);
    CHECK_INT_EQ(p.count, 1);
    CHECK_INT_EQ(wrk_offsets_node_done(n[4]), 1);
    CHECK_INT_EQ(p.commit, 109);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == &p);
    CHECK(dirty == NULL);
    TEST_PASS("out of order: only the finished prefix counts");
}

static void test_abandon_and_detach(void)
{
    wrk_offsets_part_t *dirty = NULL;
    wrk_offsets_part_t p, q;
    wrk_offsets_part_init(&p, 0, &dirty);
    wrk_offsets_part_init(&q, 1, &dirty);
    wrk_offsets_node_t *a = wrk_offsets_part_add(&p, 0);
    wrk_offsets_node_t *b = wrk_offsets_part_add(&p, 1);
    wrk_offsets_node_t *c = wrk_offsets_part_add(&p, 2);
    wrk_offsets_node_t *d = wrk_offsets_part_add(&p, 3);
    wrk_offsets_node_t *x = wrk_offsets_part_add(&q, 0);
    wrk_offsets_node_abandon(a); /* blocks everything after it */
    CHECK_INT_EQ(wrk_offsets_node_done(b), 0);
    CHECK_INT_EQ(p.commit, -1);
    CHECK_INT_EQ(wrk_offsets_node_done(x), 1);
    /* Make p dirty too, so detaching must unlink it from the middle of the list. */
    wrk_offsets_part_t r;
    wrk_offsets_part_init(&r, 2, &dirty);
    wrk_offsets_node_t *y = wrk_offsets_part_add(&r, 5);
    CHECK_INT_EQ(wrk_offsets_node_done(y), 1);
    p.dirty = 0;
    wrk_offsets_part_detach(&p); /* frees a and b, detaches c and d */
    CHECK_INT_EQ(p.count, 0);
    CHECK(p.head == NULL);
    CHECK(c->part == NULL && d->part == NULL);
    CHECK_INT_EQ(wrk_offsets_node_done(c), 0); /* a detached node frees itself */
    wrk_offsets_node_abandon(d);
    /* q and r are still dirty, in some order. */
    wrk_offsets_part_t *first = wrk_offsets_part_pop_dirty(&dirty);
    wrk_offsets_part_t *second = wrk_offsets_part_pop_dirty(&dirty);
    CHECK((first == &q && second == &r) || (first == &r && second == &q));
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == NULL);
    /* Detaching a dirty partition unlinks it. */
    wrk_offsets_node_t *z = wrk_offsets_part_add(&q, 1);
    CHECK_INT_EQ(wrk_offsets_node_done(z), 1);
    wrk_offsets_node_t *w = wrk_offsets_part_add(&r, 6);
    CHECK_INT_EQ(wrk_offsets_node_done(w), 1);
    wrk_offsets_part_detach(&q);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == &r);
    CHECK(wrk_offsets_part_pop_dirty(&dirty) == NULL);
    wrk_offsets_part_detach(&r);
    TEST_PASS("abandoned records block the commit point; detach frees and detaches");
}

static void test_many(void)
{
    wrk_offsets_part_t *dirty = NULL;
    wrk_offsets_part_t p;
    wrk_offsets_part_init(&p, 0, &dirty);
    enum { N = 10000 };
    wrk_offsets_node_t **n = malloc(N * sizeof(*n));
    CHECK(n != NULL);
    for (int i = 0; i < N; i++)
        n[i] = wrk_offsets_part_add(&p, i);
    /* Finish evens then odds in reverse. */
    for (int i = 0; i < N; i += 2)
        wrk_offsets_node_done(n[i]);
    CHECK_INT_EQ(p.commit, 1);
    for (int i = N - 1; i > 0; i -= 2)
        wrk_offsets_node_done(n[i]);
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
