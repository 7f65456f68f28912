/* SPDX-License-Identifier: MIT */
/* prodcons: producers and consumers through a bounded buffer guarded by a
 * mutex and two condition variables — blocking code, but a waiting thread
 * parks and its vproc runs another one. */
#include <ito.h>
#include <stdio.h>

#define SLOTS 16
#define ITEMS 200000
#define PAIRS 4

static ito_mutex_t lock = ITO_MUTEX_INIT;
static ito_cond_t not_full = ITO_COND_INIT, not_empty = ITO_COND_INIT;
static long buf[SLOTS];
static int head, count;

static void *producer(void *arg)
{
    for (long i = 1; i <= ITEMS; i++) {
        ito_mutex_lock(&lock);
        while (count == SLOTS)
            ito_cond_wait(&not_full, &lock);
        buf[(head + count++) % SLOTS] = i;
        ito_cond_signal(&not_empty);
        ito_mutex_unlock(&lock);
    }
    return arg;
}

static void *consumer(void *arg)
{
    long sum = 0;
    for (long i = 0; i < ITEMS; i++) {
        ito_mutex_lock(&lock);
        while (count == 0)
            ito_cond_wait(&not_empty, &lock);
        sum += buf[head];
        head = (head + 1) % SLOTS;
        count--;
        ito_cond_signal(&not_full);
        ito_mutex_unlock(&lock);
    }
    return (void *)(intptr_t)sum;
}

int main(void)
{
    ito_thread_t p[PAIRS], c[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        ito_spawn(&p[i], NULL, producer, NULL);
        ito_spawn(&c[i], NULL, consumer, NULL);
    }
    long total = 0;
    for (int i = 0; i < PAIRS; i++) {
        void *s;
        ito_join(p[i], NULL);
        ito_join(c[i], &s);
        total += (long)(intptr_t)s;
    }
    long expect = (long)PAIRS * ITEMS * (ITEMS + 1) / 2;
    printf("consumed %ld (expected %ld): %s\n", total, expect, total == expect ? "ok" : "WRONG");
    return total == expect ? 0 : 1;
}
