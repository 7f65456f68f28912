/* SPDX-License-Identifier: MIT */
/* Stress: producers and consumers through a bounded buffer guarded by a
 * mutex and two condition variables (not full / not empty). Every item is
 * a distinct number and must be consumed exactly once (a per-item mark),
 * with producers and consumers of different speeds, signal and broadcast,
 * and some consumers using timed waits. A foreign kernel thread produces
 * too. */
#include <pthread.h>

#include "common.h"

enum { CAP = 16, NP = 6, NC = 5 };

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t not_full = ITO_COND_INIT, not_empty = ITO_COND_INIT;
static long buf[CAP];
static int head, count;          /* m */
static long per_producer;
static long produced_total;      /* m */
static int producers_left;       /* m */
static atomic_uchar *seen;       /* [items]: consumed marks */
static atomic_long consumed;

static void put(long item)
{
    OK(ito_mutex_lock(&m));
    while (count == CAP)
        OK(ito_cond_wait(&not_full, &m));
    buf[(head + count) % CAP] = item;
    count++;
    produced_total++;
    OK(ito_cond_signal(&not_empty));
    OK(ito_mutex_unlock(&m));
}

static void producer_done(void)
{
    OK(ito_mutex_lock(&m));
    if (--producers_left == 0)
        OK(ito_cond_broadcast(&not_empty));   /* wake consumers to see the end */
    OK(ito_mutex_unlock(&m));
}

static void produce(int id)
{
    for (long i = 0; i < per_producer; i++) {
        put(id * per_producer + i);
        if (i % 97 == id)
            ito_yield();
    }
    producer_done();
}

static void *ito_producer(void *a) { produce((int)(intptr_t)a); return NULL; }
static void *foreign_producer(void *a) { produce((int)(intptr_t)a); return NULL; }

static void *consumer(void *a)
{
    int id = (int)(intptr_t)a;
    bool timed = id % 2 == 1;
    long mine = 0;
    OK(ito_mutex_lock(&m));
    for (;;) {
        while (count == 0 && producers_left > 0) {
            if (timed) {
                struct timespec dl = test_deadline_in(200000);
                int e = ito_cond_timedwait(&not_empty, &m, &dl);
                CHECK(e == 0 || e == ETIMEDOUT);
            } else {
                OK(ito_cond_wait(&not_empty, &m));
            }
        }
        if (count == 0)
            break;   /* no producer left, nothing buffered */
        long item = buf[head];
        head = (head + 1) % CAP;
        count--;
        if (count == CAP - 1)
            OK(ito_cond_broadcast(&not_full));
        else
            OK(ito_cond_signal(&not_full));
        OK(ito_mutex_unlock(&m));
        CHECK_EQ(atomic_exchange(&seen[item], 1), 0);   /* never twice */
        atomic_fetch_add(&consumed, 1);
        mine++;
        if (mine % 53 == id)
            ito_sleep_ns(1000);
        OK(ito_mutex_lock(&m));
    }
    OK(ito_mutex_unlock(&m));
    return (void *)(intptr_t)mine;
}

int main(void)
{
    per_producer = test_scaled(100000);
    long items = (NP + 1) * per_producer;
    seen = calloc((size_t)items, sizeof *seen);
    CHECK(seen);
    producers_left = NP + 1;
    ito_thread_t ps[NP], cs[NC];
    pthread_t fp;
    for (int i = 0; i < NC; i++)
        OK(ito_spawn(&cs[i], NULL, consumer, (void *)(intptr_t)i));
    for (int i = 0; i < NP; i++)
        OK(ito_spawn(&ps[i], NULL, ito_producer, (void *)(intptr_t)i));
    CHECK_EQ(pthread_create(&fp, NULL, foreign_producer, (void *)(intptr_t)NP), 0);
    for (int i = 0; i < NP; i++)
        OK(ito_join(ps[i], NULL));
    CHECK_EQ(pthread_join(fp, NULL), 0);
    long sum = 0;
    for (int i = 0; i < NC; i++) {
        void *r;
        OK(ito_join(cs[i], &r));
        sum += (long)(intptr_t)r;
    }
    CHECK_EQ(produced_total, items);
    CHECK_EQ(atomic_load(&consumed), items);
    CHECK_EQ(sum, items);
    for (long i = 0; i < items; i++)
        CHECK_EQ(atomic_load(&seen[i]), 1);
    CHECK_EQ(count, 0);
    free(seen);
    return 0;
}
