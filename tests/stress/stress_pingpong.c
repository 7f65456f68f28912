/* SPDX-License-Identifier: MIT */
/* Stress: 10^6 sleep/wake cycles (scaled) with no lost wake-up. Pairs of
 * threads hand a token back and forth, each side blocking until the other
 * wakes it: over semaphores, and over a condition variable with a flag. Every
 * wait is a timed wait whose long deadline serves as a watchdog: a lost
 * wake-up shows as ETIMEDOUT (and a failure) instead of a hang. Pairs run on
 * all vprocs at once, so wake-ups cross vprocs and race with parking. */
#include "common.h"

#define WATCHDOG_NS 20000000000ull   /* 20 s: far beyond any legitimate wait */

struct sem_pair {
    ito_sem_t a, b;
    long rounds;
};

static void sem_wait_watchdog(ito_sem_t *s)
{
    struct timespec dl = test_deadline_in(WATCHDOG_NS);
    int e = ito_sem_timedwait(s, &dl);
    if (e == ETIMEDOUT)
        fprintf(stderr, "lost wake-up: a semaphore wait timed out\n");
    OK(e);
}

static void *sem_ping(void *arg)
{
    struct sem_pair *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        OK(ito_sem_post(&p->a));
        sem_wait_watchdog(&p->b);
    }
    return NULL;
}

static void *sem_pong(void *arg)
{
    struct sem_pair *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        sem_wait_watchdog(&p->a);
        OK(ito_sem_post(&p->b));
    }
    return NULL;
}

struct cond_pair {
    ito_mutex_t m;
    ito_cond_t c;
    long turn;    /* m: even: ping's turn, odd: pong's */
    long rounds;
};

static void cond_wait_turn(struct cond_pair *p, long parity)
{
    while (p->turn % 2 != parity) {
        struct timespec dl = test_deadline_in(WATCHDOG_NS);
        int e = ito_cond_timedwait(&p->c, &p->m, &dl);
        if (e == ETIMEDOUT)
            fprintf(stderr, "lost wake-up: a condition wait timed out (turn %ld)\n", p->turn);
        OK(e);
    }
}

static void *cond_side(void *arg, long parity)
{
    struct cond_pair *p = arg;
    OK(ito_mutex_lock(&p->m));
    for (long i = 0; i < p->rounds; i++) {
        cond_wait_turn(p, parity);
        p->turn++;
        OK(ito_cond_signal(&p->c));
    }
    OK(ito_mutex_unlock(&p->m));
    return NULL;
}
static void *cond_ping(void *arg) { return cond_side(arg, 0); }
static void *cond_pong(void *arg) { return cond_side(arg, 1); }

int main(void)
{
    long cycles = test_scaled(1000000);
    int pairs = 2 * ito_vproc_count();
    if (pairs < 4)
        pairs = 4;
    long per_pair = cycles / (2 * pairs);   /* half over semaphores, half over conditions */
    if (per_pair < 1)
        per_pair = 1;
    struct sem_pair *sp = calloc((size_t)pairs, sizeof *sp);
    struct cond_pair *cp = calloc((size_t)pairs, sizeof *cp);
    ito_thread_t *ts = calloc((size_t)pairs * 4, sizeof *ts);
    CHECK(sp && cp && ts);
    uint64_t t0 = ito_now_ns();
    for (int i = 0; i < pairs; i++) {
        OK(ito_sem_init(&sp[i].a, 0));
        OK(ito_sem_init(&sp[i].b, 0));
        sp[i].rounds = per_pair;
        OK(ito_mutex_init(&cp[i].m));
        OK(ito_cond_init(&cp[i].c));
        cp[i].rounds = per_pair;
        OK(ito_spawn(&ts[4 * i + 0], NULL, sem_ping, &sp[i]));
        OK(ito_spawn(&ts[4 * i + 1], NULL, sem_pong, &sp[i]));
        OK(ito_spawn(&ts[4 * i + 2], NULL, cond_ping, &cp[i]));
        OK(ito_spawn(&ts[4 * i + 3], NULL, cond_pong, &cp[i]));
    }
    for (int i = 0; i < 4 * pairs; i++)
        OK(ito_join(ts[i], NULL));
    for (int i = 0; i < pairs; i++) {
        unsigned v;
        OK(ito_sem_get_value(&sp[i].a, &v));
        CHECK_EQ(v, 0);
        OK(ito_sem_get_value(&sp[i].b, &v));
        CHECK_EQ(v, 0);
        CHECK_EQ(cp[i].turn, 2 * per_pair);
        OK(ito_sem_destroy(&sp[i].a));
        OK(ito_sem_destroy(&sp[i].b));
        OK(ito_cond_destroy(&cp[i].c));
        OK(ito_mutex_destroy(&cp[i].m));
    }
    printf("stress_pingpong: %ld round trips over %d pairs in %.2f s\n", 2 * per_pair * pairs, pairs,
           (ito_now_ns() - t0) / 1e9);
    free(sp);
    free(cp);
    free(ts);
    return 0;
}
