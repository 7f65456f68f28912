/* SPDX-License-Identifier: MIT */
/* The O(1) priority queue: see prioq.h. */
#include "policy/prioq.h"

#include <string.h>

#include "base/panic.h"

void ito__prioq_init(struct ito__prioq *q, unsigned levels, bool lazy)
{
    memset(q, 0, sizeof *q);
    q->levels = levels;
    q->lazy = lazy;
    q->active = &q->arrays[0];
    q->expired = &q->arrays[1];
}

static inline void set_bit(struct ito__prioq_array *a, unsigned l) { a->bits[l / 64] |= 1ull << (l % 64); }
static inline void clear_bit(struct ito__prioq_array *a, unsigned l) { a->bits[l / 64] &= ~(1ull << (l % 64)); }

/* Highest set bit of a's bitmap, or -1: at most ITO__PRIOQ_WORDS words. */
static inline int highest(const struct ito__prioq_array *a)
{
    for (int w = ITO__PRIOQ_WORDS - 1; w >= 0; w--)
        if (a->bits[w])
            return w * 64 + 63 - __builtin_clzll(a->bits[w]);
    return -1;
}

static void unlink_node(struct ito__prioq *q, ito_policy_node_t *n)
{
    struct ito__prioq_array *a = &q->arrays[(ito__prioq_word(n) >> 8) & 1];
    unsigned l = ito__prioq_level(n);
    struct ito__prioq_list *li = &a->list[l];
    if (li->woken == n)
        li->woken = n->prev;   /* the one before it is at the head's side too */
    if (n->prev)
        n->prev->next = n->next;
    else
        li->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        li->tail = n->prev;
    if (!li->head)
        clear_bit(a, l);
    n->next = n->prev = NULL;
    q->len--;
}

void ito__prioq_push(struct ito__prioq *q, ito_policy_node_t *n, unsigned level, bool expired,
                     enum ito__prioq_place place)
{
    ITO_ASSERT(level < q->levels);
    if (ito__prioq_state(n) == ITO__PRIOQ_DEQUEUED) {
        unlink_node(q, n);   /* claimed while queued: unlink it now */
        __atomic_store_n(&n->word[0], ITO__PRIOQ_OUT, __ATOMIC_RELAXED);
    }
    ITO_ASSERT(ito__prioq_state(n) == ITO__PRIOQ_OUT);
    struct ito__prioq_array *a = expired ? q->expired : q->active;
    /* Which of arrays[] it is in (a swap changes which one is active). */
    uintptr_t which = a == &q->arrays[1];
    ito__prioq_set_word(n, (ito__prioq_word(n) & ~(uintptr_t)0xffff) | level | which << 8);
    struct ito__prioq_list *li = &a->list[level];
    if (place == ITO__PRIOQ_WOKEN && expired)
        place = ITO__PRIOQ_BACK;
    ito_policy_node_t *after = place == ITO__PRIOQ_WOKEN ? li->woken : NULL;
    if (place == ITO__PRIOQ_WOKEN)
        li->woken = n;
    if (!li->head) {
        n->next = n->prev = NULL;
        li->head = li->tail = n;
        set_bit(a, level);
    } else if (after && after != li->tail) {
        n->prev = after;
        n->next = after->next;
        after->next->prev = n;
        after->next = n;
    } else if (place != ITO__PRIOQ_BACK && !after) {
        n->prev = NULL;
        n->next = li->head;
        li->head->prev = n;
        li->head = n;
    } else {
        n->next = NULL;
        n->prev = li->tail;
        li->tail->next = n;
        li->tail = n;
    }
    q->len++;
    /* Release pairs with the acquire CAS of ito__prioq_claim. */
    __atomic_store_n(&n->word[0], ITO__PRIOQ_ENQUEUED, __ATOMIC_RELEASE);
}

ito_policy_node_t *ito__prioq_pop(struct ito__prioq *q)
{
    for (;;) {
        int l = highest(q->active);
        if (l < 0) {
            if (highest(q->expired) < 0)
                return NULL;
            struct ito__prioq_array *t = q->active;
            q->active = q->expired;
            q->expired = t;
            q->swaps++;
            continue;
        }
        ito_policy_node_t *n = q->active->list[l].head;
        bool mine;
        if (q->lazy) {
            /* Against ito__prioq_claim: one of the two CASes moves it. */
            uintptr_t s = ITO__PRIOQ_ENQUEUED;
            mine = __atomic_compare_exchange_n(&n->word[0], &s, ITO__PRIOQ_OUT, false, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE);
        } else {
            /* Nobody claims without the lock: a plain look and store. A
             * locked instruction on a line that is cold — as the head is
             * with many threads — costs hundreds of cycles. */
            mine = ito__prioq_state(n) == ITO__PRIOQ_ENQUEUED;
            __atomic_store_n(&n->word[0], ITO__PRIOQ_OUT, __ATOMIC_RELAXED);
        }
        unlink_node(q, n);
        if (mine)
            return n;
        /* Claimed while queued: now unlinked, so OUT. The claimer may be
         * about to push it again; that push finds it OUT. */
        __atomic_store_n(&n->word[0], ITO__PRIOQ_OUT, __ATOMIC_RELEASE);
    }
}

/* The first ENQUEUED node of a, highest level first, or NULL. */
static ito_policy_node_t *first_in(const struct ito__prioq_array *a)
{
    for (int w = ITO__PRIOQ_WORDS - 1; w >= 0; w--)
        for (uint64_t bits = a->bits[w]; bits; bits &= ~((uint64_t)1 << (63 - __builtin_clzll(bits)))) {
            int l = w * 64 + 63 - __builtin_clzll(bits);
            for (ito_policy_node_t *n = a->list[l].head; n; n = n->next)
                if (ito__prioq_state(n) == ITO__PRIOQ_ENQUEUED)
                    return n;
        }
    return NULL;
}

ito_policy_node_t *ito__prioq_first(const struct ito__prioq *q)
{
    ito_policy_node_t *n = first_in(q->active);
    return n ? n : first_in(q->expired);
}

bool ito__prioq_remove(struct ito__prioq *q, ito_policy_node_t *n)
{
    uintptr_t s = ITO__PRIOQ_ENQUEUED;
    bool mine = __atomic_compare_exchange_n(&n->word[0], &s, ITO__PRIOQ_OUT, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE);
    unlink_node(q, n);
    __atomic_store_n(&n->word[0], ITO__PRIOQ_OUT, __ATOMIC_RELEASE);
    return mine;
}

bool ito__prioq_claim(ito_policy_node_t *n)
{
    /* Only for a queue made `lazy`: the caller knows which queue n is in. */
    uintptr_t s = ITO__PRIOQ_ENQUEUED;
    /* Acquire pairs with push's release store of ENQUEUED. */
    return __atomic_compare_exchange_n(&n->word[0], &s, ITO__PRIOQ_DEQUEUED, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

int ito__prioq_top(const struct ito__prioq *q)
{
    int a = highest(q->active), e = highest(q->expired);
    return a > e ? a : e;
}
