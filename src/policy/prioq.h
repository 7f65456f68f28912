/* SPDX-License-Identifier: MIT */
/*
 * The O(1) priority queue of [SSH] (§4.3.4, §5; Linux 2.6's runqueue).
 *
 * Two arrays of per-level FIFO lists, "active" and "expired", each with a
 * bitmap of its non-empty levels. pop takes the head of the highest
 * non-empty level of the active array: a find-last-set over at most three
 * 64-bit words, whatever the number of queued threads. When the active array
 * is empty the two arrays swap — one pointer exchange — so a thread that was
 * put in the expired array (it used up its time slice) waits until every
 * thread still in the active array has had its turn: no level starves.
 * Higher level = more urgent.
 *
 * Removal of a queued node, two ways ([SSH §6.3]):
 *   - ito__prioq_remove unlinks it at once (the lists are doubly linked), for
 *     whoever holds the queue;
 *   - ito__prioq_claim (a `lazy` queue only) marks it DEQUEUED with one CAS,
 *     without the queue: pop
 *     skips it when it reaches the head of its list, and a push of the same
 *     node unlinks it first. A shared queue (one lock for every vproc) thus
 *     gives up a thread to a joiner without taking its lock.
 * Either way a node's state word says who has it: ENQUEUED (in a list, to be
 * run), DEQUEUED (in a list, to be skipped), or OUT (in no list). pop and
 * claim both move ENQUEUED away with a CAS, so a node is handed out once.
 *
 * Not synchronized otherwise: push, pop and remove need the queue's lock (or
 * its only user). Uses n->next, n->prev, n->word[0] (state) and the low 16
 * bits of n->word[1] (level, array); the policy may keep the rest of word[1].
 */
#ifndef ITO_POLICY_PRIOQ_H
#define ITO_POLICY_PRIOQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ito/policy.h>

#define ITO__PRIOQ_LEVELS_MAX 140   /* Linux's 140; SSH uses 16 */
#define ITO__PRIOQ_WORDS ((ITO__PRIOQ_LEVELS_MAX + 63) / 64)

enum { ITO__PRIOQ_OUT = 0, ITO__PRIOQ_ENQUEUED = 1, ITO__PRIOQ_DEQUEUED = 2 };

struct ito__prioq_list {
    ito_policy_node_t *head, *tail;
    ito_policy_node_t *woken;   /* the last node pushed WOKEN that is still at the head's side, or NULL */
};

/* Where push links a node in its list. */
enum ito__prioq_place {
    ITO__PRIOQ_BACK = 0,    /* at the tail */
    ITO__PRIOQ_FRONT = 1,   /* at the head */
    ITO__PRIOQ_WOKEN = 2,   /* after the WOKEN nodes at the head, before the rest: those wait in
                               the order they came, ahead of the nodes pushed to the back */
};

struct ito__prioq_array {
    uint64_t bits[ITO__PRIOQ_WORDS];          /* bit l: list[l] is not empty */
    struct ito__prioq_list list[ITO__PRIOQ_LEVELS_MAX];
};

struct ito__prioq {
    struct ito__prioq_array *active, *expired;
    unsigned levels;
    bool lazy;           /* ito__prioq_claim may be used (pop then CASes) */
    size_t len;          /* nodes linked, DEQUEUED ones included */
    uint64_t swaps;      /* times the arrays swapped */
    struct ito__prioq_array arrays[2];
};

/* levels: 1..ITO__PRIOQ_LEVELS_MAX. `lazy`: nodes may be claimed without the
 * queue's lock (ito__prioq_claim); pop then moves each node with a CAS. A
 * queue only ever used under its lock pops with plain accesses. */
void ito__prioq_init(struct ito__prioq *q, unsigned levels, bool lazy);

/* Link n (OUT, or DEQUEUED in q) at `level` of the active or expired array,
 * at `place` in its list (WOKEN in the expired array: the back). */
void ito__prioq_push(struct ito__prioq *q, ito_policy_node_t *n, unsigned level, bool expired,
                     enum ito__prioq_place place);

/* The head of the highest non-empty level of the active array — after a swap
 * if only the expired one has any — now OUT; NULL if q holds nothing to run. */
ito_policy_node_t *ito__prioq_pop(struct ito__prioq *q);

/* The node pop would return now (the first ENQUEUED one), left in place;
 * NULL if none. */
ito_policy_node_t *ito__prioq_first(const struct ito__prioq *q);

/* Unlink n, which is linked in q; true if it was ENQUEUED (it is now OUT and
 * the caller's), false if it had been claimed. */
bool ito__prioq_remove(struct ito__prioq *q, ito_policy_node_t *n);

/* Without q's lock: if n is ENQUEUED, make it DEQUEUED (left linked, skipped
 * later) and return true: the caller has it. */
bool ito__prioq_claim(ito_policy_node_t *n);

/* Highest level holding a node in either array (DEQUEUED ones may count), or
 * -1 if none. */
int ito__prioq_top(const struct ito__prioq *q);

/* Whether the expired array holds a node. */
static inline bool ito__prioq_expired_any(const struct ito__prioq *q)
{
    for (int w = 0; w < ITO__PRIOQ_WORDS; w++)
        if (q->expired->bits[w])
            return true;
    return false;
}

/* Whether every node q holds is at `level` of the active array (or q holds
 * none). */
static inline bool ito__prioq_only_level(const struct ito__prioq *q, unsigned level)
{
    for (int w = 0; w < ITO__PRIOQ_WORDS; w++) {
        uint64_t mine = (unsigned)w == level / 64 ? (uint64_t)1 << (level % 64) : 0;
        if (q->expired->bits[w] || (q->active->bits[w] & ~mine))
            return false;
    }
    return true;
}

/* n->word[1], which the policy shares: relaxed atomic accesses, since a
 * policy may look at a node that another vproc is queueing (under another
 * lock) to see where it is. */
static inline uintptr_t ito__prioq_word(const ito_policy_node_t *n) { return __atomic_load_n(&n->word[1], __ATOMIC_RELAXED); }
static inline void ito__prioq_set_word(ito_policy_node_t *n, uintptr_t w) { __atomic_store_n(&n->word[1], w, __ATOMIC_RELAXED); }

/* The level and array of a linked node. */
static inline unsigned ito__prioq_level(const ito_policy_node_t *n) { return (unsigned)(ito__prioq_word(n) & 0xff); }
static inline bool ito__prioq_in_expired(const struct ito__prioq *q, const ito_policy_node_t *n)
{
    return &q->arrays[(ito__prioq_word(n) >> 8) & 1] == q->expired;
}

static inline int ito__prioq_state(const ito_policy_node_t *n)
{
    return (int)__atomic_load_n(&n->word[0], __ATOMIC_ACQUIRE);
}

#endif
