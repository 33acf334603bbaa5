#include "offsets.h"

#include <assert.h>
#include <stdlib.h>

enum { NODE_RUNNING = 0, NODE_DONE = 1, NODE_ABANDONED = 2 };

void wrk_offsets_part_init(wrk_offsets_part_t *p, int32_t partition,
                           wrk_offsets_part_t **dirty_list)
{
    p->partition = partition;
    p->head = p->tail = NULL;
    p->count = 0;
    p->commit = -1;
    p->dirty = 0;
    p->next_dirty = NULL;
    p->dirty_list = dirty_list;
}

wrk_offsets_node_t *wrk_offsets_part_add(wrk_offsets_part_t *p, int64_t offset)
{
    assert(!p->tail || p->tail->offset < offset);
    wrk_offsets_node_t *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->part = p;
    n->offset = offset;
    n->prev = p->tail;
    if (p->tail)
        p->tail->next = n;
    else
        p->head = n;
    p->tail = n;
    p->count++;
    return n;
}

static void part_unlink(wrk_offsets_part_t *p, wrk_offsets_node_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        p->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        p->tail = n->prev;
    p->count--;
}

static void part_mark_dirty(wrk_offsets_part_t *p)
{
    if (p->dirty)
        return;
    p->dirty = 1;
    p->next_dirty = *p->dirty_list;
    *p->dirty_list = p;
}

int wrk_offsets_node_done(wrk_offsets_node_t *node)
{
    wrk_offsets_part_t *p = node->part;
    if (!p) {
        free(node);
        return 0;
    }
    assert(node->state == NODE_RUNNING);
    node->state = NODE_DONE;
    int advanced = 0;
    while (p->head && p->head->state == NODE_DONE) {
        wrk_offsets_node_t *h = p->head;
        p->commit = h->offset + 1;
        part_unlink(p, h);
        free(h);
        advanced = 1;
    }
    if (advanced)
        part_mark_dirty(p);
    return advanced;
}

void wrk_offsets_node_abandon(wrk_offsets_node_t *node)
{
    if (!node->part) {
        free(node);
        return;
    }
    node->state = NODE_ABANDONED;
}

void wrk_offsets_part_detach(wrk_offsets_part_t *p)
{
    wrk_offsets_node_t *n = p->head;
    while (n) {
        wrk_offsets_node_t *next = n->next;
        if (n->state == NODE_RUNNING) {
            n->part = NULL;
            n->prev = n->next = NULL;
        } else {
            free(n);
        }
        n = next;
    }
    p->head = p->tail = NULL;
    p->count = 0;
    if (p->dirty) {
        for (wrk_offsets_part_t **pp = p->dirty_list; *pp; pp = &(*pp)->next_dirty) {
            if (*pp == p) {
                *pp = p->next_dirty;
                break;
            }
        }
        p->dirty = 0;
        p->next_dirty = NULL;
    }
}

wrk_offsets_part_t *wrk_offsets_part_pop_dirty(wrk_offsets_part_t **dirty_list)
{
    wrk_offsets_part_t *p = *dirty_list;
    if (!p)
        return NULL;
    *dirty_list = p->next_dirty;
    p->next_dirty = NULL;
    p->dirty = 0;
    return p;
}
