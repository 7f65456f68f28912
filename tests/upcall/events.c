/* SPDX-License-Identifier: MIT */
/* The event hook: every kind of event is reported, for the right thread, on
 * the vproc it concerns (the hook runs there), in a sensible order:
 *   - VPROC_ADDED once per vproc at initialization (hook installed before);
 *   - PREEMPTED for threads that loop on one vproc;
 *   - BLOCKED then UNBLOCKED for a thread whose blocking call is handed off;
 *   - nothing after the hook is removed. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <ito.h>

#include "common.h"

#define MAXEV 100000

static ito_event_t evs[MAXEV];
static _Atomic bool published[MAXEV];   /* evs[i] is written (release/acquire) */
static _Atomic int nev;
static _Atomic int misplaced;   /* reported on another vproc than it concerns */
static _Atomic bool stop;

static void hook(const ito_event_t *ev, void *arg)
{
    CHECK(arg == (void *)&nev);
    if (ito_vproc_self() != ev->vproc)
        atomic_fetch_add(&misplaced, 1);
    int i = atomic_fetch_add(&nev, 1);
    if (i < MAXEV) {
        evs[i] = *ev;
        atomic_store_explicit(&published[i], true, memory_order_release);
    }
}

/* The entries written so far, in order, stopping at one still being written. */
static int nseen(void)
{
    int n = 0, lim = atomic_load(&nev) < MAXEV ? atomic_load(&nev) : MAXEV;
    while (n < lim && atomic_load_explicit(&published[n], memory_order_acquire))
        n++;
    return n;
}

static int count(ito_event_kind_t kind, ito_thread_t t, int *first)
{
    int n = 0, lim = nseen();
    *first = -1;
    for (int i = 0; i < lim; i++)
        if (evs[i].kind == kind && (t.id == 0 || evs[i].thread.id == t.id)) {
            if (*first < 0)
                *first = i;
            n++;
        }
    return n;
}

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ;
    return NULL;
}

static int pipefd[2];

static void *reader(void *arg)
{
    (void)arg;
    char c;
    CHECK_EQ(ITO_BLOCKING(read(pipefd[0], &c, 1)), 1);
    return NULL;
}

static _Atomic int others_done;

static void *other(void *arg)
{
    (void)arg;
    atomic_fetch_add(&others_done, 1);
    return NULL;
}

int main(void)
{
    OK(ito_event_hook_set(hook, &nev));
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 2;
    OK(ito_init(&cfg));
    int first;
    WAIT_UNTIL(count(ITO_EVENT_VPROC_ADDED, ITO_THREAD_NULL, &first) == 2, 10);
    bool seen[2] = { false, false };
    for (int i = 0; i < nseen(); i++)
        if (evs[i].kind == ITO_EVENT_VPROC_ADDED) {
            CHECK(evs[i].vproc >= 0 && evs[i].vproc < 2);
            CHECK_EQ(evs[i].thread.id, 0);
            seen[evs[i].vproc] = true;
        }
    CHECK(seen[0] && seen[1]);

    /* Two spinners on vproc 1: slices end. */
    ito_attr_t attr;
    OK(ito_attr_init(&attr));
    OK(ito_attr_set_vproc(&attr, 1));
    ito_thread_t s1, s2;
    OK(ito_spawn(&s1, &attr, spin, NULL));
    OK(ito_spawn(&s2, &attr, spin, NULL));
    WAIT_UNTIL(count(ITO_EVENT_PREEMPTED, s1, &first) > 0 && count(ITO_EVENT_PREEMPTED, s2, &first) > 0, 20);
    atomic_store(&stop, true);
    OK(ito_join(s1, NULL));
    OK(ito_join(s2, NULL));
    for (int i = 0; i < nseen(); i++)
        if (evs[i].kind == ITO_EVENT_PREEMPTED)
            CHECK(evs[i].thread.id == s1.id || evs[i].thread.id == s2.id);

    /* A blocked read on vproc 0 while others wait there: handed off. A
     * spinner keeps vproc 1 busy (an idle vproc would make the monitor wait
     * for it instead). */
    atomic_store(&stop, false);
    OK(ito_spawn(&s1, &attr, spin, NULL));
    CHECK_EQ(pipe(pipefd), 0);
    OK(ito_attr_set_vproc(&attr, 0));
    ito_thread_t r;
    OK(ito_spawn(&r, &attr, reader, NULL));
    ito_thread_t o[50];
    for (int i = 0; i < 50; i++)
        OK(ito_spawn(&o[i], &attr, other, NULL));
    WAIT_UNTIL(count(ITO_EVENT_BLOCKED, r, &first) == 1, 20);
    CHECK(evs[first].vproc == 0 || evs[first].vproc == 1);
    WAIT_UNTIL(atomic_load(&others_done) == 50, 20);
    CHECK_EQ(write(pipefd[1], "x", 1), 1);
    OK(ito_join(r, NULL));
    int first_un;
    WAIT_UNTIL(count(ITO_EVENT_UNBLOCKED, r, &first_un) == 1, 20);
    CHECK(first_un > first);
    for (int i = 0; i < 50; i++)
        OK(ito_join(o[i], NULL));
    atomic_store(&stop, true);
    OK(ito_join(s1, NULL));

    CHECK_EQ(atomic_load(&misplaced), 0);
    CHECK(atomic_load(&nev) < MAXEV);

    /* Removed: no more events. */
    OK(ito_event_hook_set(NULL, NULL));
    int before = atomic_load(&nev);
    OK(ito_attr_set_vproc(&attr, 1));
    atomic_store(&stop, false);
    OK(ito_spawn(&s1, &attr, spin, NULL));
    OK(ito_spawn(&s2, &attr, spin, NULL));
    ito_sleep_ns(100000000);
    atomic_store(&stop, true);
    OK(ito_join(s1, NULL));
    OK(ito_join(s2, NULL));
    CHECK_EQ(atomic_load(&nev), before);
    printf("events: %d reported, all on the vproc they concern\n", before);
    return 0;
}
