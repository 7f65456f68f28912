/* SPDX-License-Identifier: MIT */
/* Liveness: a ready thread never waits for a busy vproc while another vproc is
 * idle — wherever the busy vproc keeps it: its next slot (a child just
 * spawned), its yield list (a thread that yielded), its inbox (a thread that
 * prefers that vproc, made ready from elsewhere). The busy thread computes
 * without any switch until the other thread has run, so only an idle vproc can
 * run it; the bound (3 s) is far beyond any scheduling delay, and also covers
 * the case where the idle vproc went to sleep first. Needs 2 vprocs. */
#include "common.h"

#include <pthread.h>

static atomic_int ran;

static void *mark(void *a)
{
    atomic_store(&ran, 1);
    return a;
}

/* Compute on this vproc until `ran`, or fail after 3 s. */
static void compute_until_ran(const char *what)
{
    uint64_t end = ito_now_ns() + 3000000000ull;
    while (!atomic_load(&ran)) {
        if (ito_now_ns() > end) {
            fprintf(stderr, "a thread in a busy vproc's %s was not run by the idle vproc\n", what);
            abort();
        }
    }
}

static void next_slot(void)
{
    for (int round = 0; round < 20; round++) {
        ito_sleep_ns((uint64_t)(round % 5) * 30000);   /* vary how long the other vproc idled */
        atomic_store(&ran, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, mark, NULL));
        compute_until_ran("next slot");
        OK(ito_join(t, NULL));
    }
}

static atomic_int resumed;

static void *spinner(void *a)
{
    uint64_t end = ito_now_ns() + 3000000000ull;
    while (!atomic_load(&resumed))
        if (ito_now_ns() > end) {
            fprintf(stderr, "a thread in a busy vproc's yield list was not run by the idle vproc\n");
            abort();
        }
    return a;
}

static void yield_list(void)
{
    for (int round = 0; round < 20; round++) {
        ito_attr_t a;
        OK(ito_attr_init(&a));
        OK(ito_attr_set_vproc(&a, ito_vproc_self()));
        atomic_store(&resumed, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, &a, spinner, NULL));
        ito_yield();                 /* the spinner runs here; we wait in the yield list */
        atomic_store(&resumed, 1);   /* reached only if another vproc ran us */
        OK(ito_join(t, NULL));
    }
}

static atomic_int go, target;
static ito_thread_t from_foreign;

static void *foreign(void *arg)
{
    while (!atomic_load(&go))
        ;
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_vproc(&a, atomic_load(&target)));
    OK(ito_spawn(&from_foreign, &a, mark, NULL));
    return arg;
}

static void inbox(void)
{
    for (int round = 0; round < 10; round++) {
        atomic_store(&ran, 0);
        atomic_store(&go, 0);
        pthread_t p;
        CHECK_EQ(pthread_create(&p, NULL, foreign, NULL), 0);
        ito_sleep_ns(1000000);
        atomic_store(&target, ito_vproc_self());
        atomic_store(&go, 1);
        compute_until_ran("inbox");
        CHECK_EQ(pthread_join(p, NULL), 0);
        OK(ito_join(from_foreign, NULL));
    }
}

int main(void)
{
    CHECK(ito_vproc_count() >= 2);
    next_slot();
    if (strcmp(ito_policy_name(), "ws") == 0)   /* fifo keeps no per-vproc lists */
        yield_list();
    inbox();
    return 0;
}
