/* SPDX-License-Identifier: MIT */
/*
 * Dynamic space sharing ([SA §4.1], after Zahorjan and McCann): how the
 * processors are divided among the ito processes of a machine.
 *
 * The rule. Processors are divided equally among the processes of the
 * highest priority that want them; what they do not want goes, divided the
 * same way, to the next priority, and so on. A process never gets more than
 * it wants, than its CPU quota allows, or outside its affinity mask. A
 * processor is time-shared only where the count does not divide: when the
 * processes of one priority want more than there is and some got one
 * processor fewer than others, each of those shares one processor of a
 * better-served one. And every process holds at least one processor, shared
 * if need be — a process without one could not even take back its hints;
 * one that wants none (all its vprocs idle) gets only that: the least
 * shared processor it may use. Processors nobody wants are not left idle:
 * they go, one at a time round robin, to processes that can hold more than
 * they want (their vprocs), so that a lone process keeps every processor
 * and work arriving in an idle process finds them; a later division takes
 * them back first, since they are beyond anyone's want.
 *
 * The method. Within a priority, processes take one free processor at a time,
 * round robin, the one holding fewest first (ties: the one with the fewest
 * processors left to choose from, then the lower index). Each takes a
 * processor it already holds if it can, else one that no other taker
 * holds — a reallocation moves as few processors as possible, so caches
 * stay warm ([SKY]) — preferring the one the fewest other takers of its
 * priority could use, so that narrow affinity masks are not starved by wide
 * ones, then the lowest.
 *
 * Pure: no globals, no allocation, no system call; the same input gives the
 * same output, so any process may compute it and the tests can table it.
 * O(processors x processes) per processor handed out.
 */
#include "cpushare/divide.h"

#include <string.h>

/* Processors in a & b. */
static int count_and(const ito__cpumask *a, const ito__cpumask *b)
{
    int c = 0;
    for (int i = 0; i < ITO__CPUMASK_WORDS; i++)
        c += __builtin_popcountll(a->w[i] & b->w[i]);
    return c;
}

/* Scratch of one division; on the caller's stack (about 12 KiB). */
struct division {
    const struct ito__divide_claim *claims;
    ito__cpumask allow[ITO__DIVIDE_MAX_CLAIMS];   /* allowed & online (online if that is empty) */
    int cap[ITO__DIVIDE_MAX_CLAIMS];              /* the most it may get */
    int limit[ITO__DIVIDE_MAX_CLAIMS];            /* the most it may hold of the unwanted ones */
    int count[ITO__DIVIDE_MAX_CLAIMS];            /* what it has got so far */
    int level[ITO__DIVIDE_MAX_CLAIMS];            /* indices of the priority being divided */
    int nlevel;
    short holders[ITO__ALLOC_MAX_CPUS];          /* processes holding each processor */
    short owner[ITO__ALLOC_MAX_CPUS];            /* the first of them */
    ito__cpumask free;
};

static void give(struct division *d, ito__cpumask *grant, int i, int cpu)
{
    ito__cpumask_set(&grant[i], cpu);
    ito__cpumask_clear(&d->free, cpu);
    if (d->holders[cpu]++ == 0)
        d->owner[cpu] = (short)i;
    d->count[i]++;
}

/* The next taker of this priority, or -1: fewest held, then fewest choices. */
static int next_taker(struct division *d)
{
    int best = -1, best_choices = 0;
    for (int k = 0; k < d->nlevel; k++) {
        int i = d->level[k];
        if (d->count[i] >= d->cap[i])
            continue;
        int c = count_and(&d->free, &d->allow[i]);
        if (c == 0)
            continue;
        if (best < 0 || d->count[i] < d->count[best] || (d->count[i] == d->count[best] && c < best_choices)) {
            best = i;
            best_choices = c;
        }
    }
    return best;
}

/* The free processor i takes: one it holds; else one no other taker holds;
 * then the one fewest other takers could use; then the lowest. */
static int choose(struct division *d, int i)
{
    ito__cpumask avail;
    ito__cpumask_and(&avail, &d->free, &d->allow[i]);
    int best = -1, best_rivals = 0;
    ITO_CPUMASK_FOR_EACH(cpu, &avail) {
        if (ito__cpumask_has(&d->claims[i].held, cpu))
            return cpu;
        int rivals = 0;
        for (int k = 0; k < d->nlevel; k++) {
            int j = d->level[k];
            if (j == i || d->count[j] >= d->cap[j])
                continue;
            if (ito__cpumask_has(&d->claims[j].held, cpu))
                rivals += ITO__DIVIDE_MAX_CLAIMS;   /* taking it would move it */
            else if (ito__cpumask_has(&d->allow[j], cpu))
                rivals++;
        }
        if (best < 0 || rivals < best_rivals) {
            best = cpu;
            best_rivals = rivals;
        }
    }
    return best;
}

/* Processes of this priority that still want more share, one processor
 * each at a time, a processor of one that got more than they did. */
static void share_remainder(struct division *d, ito__cpumask *grant)
{
    for (int k = 0; k < d->nlevel; k++) {
        int i = d->level[k];
        while (d->count[i] < d->cap[i]) {
            int pick = -1;
            ITO_CPUMASK_FOR_EACH(cpu, &d->allow[i]) {
                if (d->holders[cpu] != 1 || ito__cpumask_has(&grant[i], cpu))
                    continue;
                int j = d->owner[cpu];
                if (d->claims[j].priority != d->claims[i].priority || d->count[j] <= d->count[i])
                    continue;
                if (pick < 0 || ito__cpumask_has(&d->claims[i].held, cpu)) {
                    pick = cpu;
                    if (ito__cpumask_has(&d->claims[i].held, cpu))
                        break;
                }
            }
            if (pick < 0)
                break;
            ito__cpumask_set(&grant[i], pick);
            d->holders[pick]++;
            d->count[i]++;
        }
    }
}

/* A process left without a processor shares the least shared it may use. */
static void at_least_one(struct division *d, ito__cpumask *grant, int i)
{
    int pick = -1;
    ITO_CPUMASK_FOR_EACH(cpu, &d->allow[i]) {
        if (pick < 0 || d->holders[cpu] < d->holders[pick] ||
            (d->holders[cpu] == d->holders[pick] && ito__cpumask_has(&d->claims[i].held, cpu) &&
             !ito__cpumask_has(&d->claims[i].held, pick)))
            pick = cpu;
    }
    if (pick < 0)
        return;   /* no processor online at all */
    ito__cpumask_set(&grant[i], pick);
    if (d->holders[pick]++ == 0)
        d->owner[pick] = (short)i;
    d->count[i]++;
}

void ito__divide(const struct ito__divide_claim *claims, int n, const ito__cpumask *online,
                       ito__cpumask *grant)
{
    struct division d;
    if (n > ITO__DIVIDE_MAX_CLAIMS)
        n = ITO__DIVIDE_MAX_CLAIMS;
    d.claims = claims;
    d.free = *online;
    memset(d.holders, 0, sizeof d.holders);
    for (int i = 0; i < n; i++) {
        ito__cpumask_zero(&grant[i]);
        ito__cpumask_and(&d.allow[i], &claims[i].allowed, online);
        if (ito__cpumask_count(&d.allow[i]) == 0)
            d.allow[i] = *online;
        int cap = claims[i].want;
        if (claims[i].quota > 0 && claims[i].quota < cap)
            cap = claims[i].quota;
        int room = ito__cpumask_count(&d.allow[i]);
        d.cap[i] = cap < 0 ? 0 : cap > room ? room : cap;
        int lim = claims[i].max > 0 ? claims[i].max : cap;
        if (claims[i].quota > 0 && claims[i].quota < lim)
            lim = claims[i].quota;
        d.limit[i] = lim < d.cap[i] ? d.cap[i] : lim > room ? room : lim;
        d.count[i] = 0;
    }

    /* Priorities from the highest down. */
    bool done[ITO__DIVIDE_MAX_CLAIMS] = { false };
    for (;;) {
        int top = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && (top < 0 || claims[i].priority > claims[top].priority))
                top = i;
        if (top < 0)
            break;
        d.nlevel = 0;
        for (int i = 0; i < n; i++)
            if (!done[i] && claims[i].priority == claims[top].priority) {
                d.level[d.nlevel++] = i;
                done[i] = true;
            }
        for (int i; (i = next_taker(&d)) >= 0;)
            give(&d, grant, i, choose(&d, i));
        share_remainder(&d, grant);
    }
    /* What nobody wants: to those that can hold more, all priorities
     * together, fewest first. */
    for (int k = 0; k < n; k++) {
        d.level[k] = k;
        d.cap[k] = d.limit[k];
    }
    d.nlevel = n;
    for (int i; (i = next_taker(&d)) >= 0;)
        give(&d, grant, i, choose(&d, i));
    for (int i = 0; i < n; i++)
        if (d.count[i] == 0)
            at_least_one(&d, grant, i);
}
