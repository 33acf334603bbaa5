/*
 * offsets.h - which Kafka offset of a partition may be stored, when its jobs finish out of
 * order.
 *
 * Jobs of one partition run in parallel, but an offset may be stored (+1) only when every
 * record before it on that partition is finished (docs/internals.md, "Worker delivery
 * semantics"). A wrk_offsets_part_t keeps the records of one assigned partition in arrival order
 * (which is offset order); wrk_offsets_node_done() marks one finished and advances the
 * partition's commit point past the finished prefix. The consumer stores commit points of
 * partitions put on the dirty list.
 *
 * Ownership: a node belongs to the job that handles its record until it calls
 * wrk_offsets_node_done() or wrk_offsets_node_abandon(); after that the partition (or, for a
 * detached node, that call) frees it. wrk_offsets_part_detach() (partition revoked) frees finished
 * and abandoned nodes and turns the others into detached nodes, which never store anything.
 *
 * Pure bookkeeping, no I/O. Thread safety: none; one thread owns a partition.
 */
#ifndef MCPQ_WORKER_OFFSETS_H
#define MCPQ_WORKER_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

typedef struct wrk_offsets_part wrk_offsets_part_t;

typedef struct wrk_offsets_node {
    struct wrk_offsets_node *prev, *next;
    wrk_offsets_part_t *part; /* NULL once detached */
    int64_t offset;
    int state; /* 0 running, 1 done, 2 abandoned */
} wrk_offsets_node_t;

struct wrk_offsets_part {
    int32_t partition;
    wrk_offsets_node_t *head, *tail; /* oldest first */
    size_t count;
    int64_t commit;                 /* offset to store: last finished prefix + 1; -1 when none */
    int dirty;                      /* commit advanced since the consumer last stored it */
    wrk_offsets_part_t *next_dirty; /* link in *dirty_list */
    wrk_offsets_part_t **dirty_list;
};

/* dirty_list: where the partition links itself when its commit point advances. */
void wrk_offsets_part_init(wrk_offsets_part_t *p, int32_t partition,
                           wrk_offsets_part_t **dirty_list);

/* Appends a node for offset (greater than every offset added before); NULL on ENOMEM. */
wrk_offsets_node_t *wrk_offsets_part_add(wrk_offsets_part_t *p, int64_t offset);

/* Marks the node's record finished. Returns 1 when the partition's commit point advanced,
 * else 0. The caller must not touch node afterwards. */
int wrk_offsets_node_done(wrk_offsets_node_t *node);

/* The record will not finish here (shutting down): it blocks the commit point until the
 * partition is detached, so it is delivered again. The caller must not touch node after. */
void wrk_offsets_node_abandon(wrk_offsets_node_t *node);

/* The partition is revoked: frees finished and abandoned nodes, detaches running ones and
 * unlinks p from the dirty list. p may then be freed by its owner. */
void wrk_offsets_part_detach(wrk_offsets_part_t *p);

/* Takes the first partition off the dirty list (clearing its flag); NULL when empty. */
wrk_offsets_part_t *wrk_offsets_part_pop_dirty(wrk_offsets_part_t **dirty_list);

#endif
