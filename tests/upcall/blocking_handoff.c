/* SPDX-License-Identifier: MIT */
/* Blocking calls hand the vproc on (ito_blocking_begin/end, upcall/monitor.c).
 *
 * On ONE vproc: a thread blocked in a bracketed read() on an empty pipe must
 * not stop the others — a thousand threads spawned after it all finish while
 * it is still blocked. Then the pipe is written and the reader returns with
 * the data; a bracketed call that fails keeps its errno across the hand-off;
 * many threads blocked at once each get a vproc carrier in turn; and without
 * activations (ITO_ACTIVATIONS=0, run as a second test) the blocked call
 * holds the vproc, as documented. */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "common.h"

static int pipefd[2];
static atomic_int finished, reader_done;

static void *reader(void *arg)
{
    char buf[8];
    ssize_t n = ITO_BLOCKING(read(pipefd[0], buf, sizeof buf));
    CHECK_EQ(n, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    atomic_store(&reader_done, 1);
    return NULL;
}

static void *worker(void *arg)
{
    atomic_fetch_add(&finished, 1);
    return NULL;
}

/* A call that blocks for a while, then fails: errno survives the hand-off. */
static void *failing(void *arg)
{
    usleep(1000);
    errno = 0;
    ito_blocking_begin();
    usleep(20000);
    int r = (int)write(-1, "x", 1);
    int e = errno;
    ito_blocking_end();
    int e2 = errno;
    CHECK_EQ(r, -1);
    CHECK_EQ(e, EBADF);
    CHECK_EQ(e2, EBADF);
    return NULL;
}

/* Sleepers inside their blocked call at once: now, and the most seen. */
static atomic_int inside, most_inside;

static void *sleeper(void *arg)
{
    int now = atomic_fetch_add(&inside, 1) + 1, most = atomic_load(&most_inside);
    while (now > most && !atomic_compare_exchange_weak(&most_inside, &most, now))
        ;
    ITO_BLOCKING(usleep(30000));
    atomic_fetch_sub(&inside, 1);
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static void *late_writer(void *arg)
{
    usleep(100000);
    CHECK(write(pipefd[1], "hello", 5) == 5);
    return NULL;
}

int main(void)
{
    alarm(60);
    bool on = getenv("ITO_ACTIVATIONS") == NULL || strcmp(getenv("ITO_ACTIVATIONS"), "0") != 0;
    CHECK(pipe(pipefd) == 0);
    ito_thread_t r;
    pthread_t lw;
    if (!on)
        CHECK_EQ(pthread_create(&lw, NULL, late_writer, NULL), 0);
    uint64_t start = ito_now_ns();
    OK(ito_spawn(&r, NULL, reader, NULL));
    ito_sleep_ns(10 * 1000000u);   /* the reader is in the kernel now */
    if (!on) {
        /* The reader held the only vproc: main resumed only after the
         * foreign writer let it return, 100 ms in. */
        CHECK(ito_now_ns() - start >= 90 * 1000000u);
        CHECK_EQ(atomic_load(&reader_done), 1);
        CHECK_EQ(pthread_join(lw, NULL), 0);
    }

    enum { N = 1000 };
    static ito_thread_t w[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&w[i], NULL, worker, NULL));
    if (on) {
        for (int i = 0; i < N; i++)
            OK(ito_join(w[i], NULL));
        CHECK_EQ(atomic_load(&finished), N);
        CHECK_EQ(atomic_load(&reader_done), 0);   /* all that while the reader was blocked */
        CHECK(write(pipefd[1], "hello", 5) == 5);
        OK(ito_join(r, NULL));
    } else {
        OK(ito_join(r, NULL));
        for (int i = 0; i < N; i++)
            OK(ito_join(w[i], NULL));
        CHECK_EQ(atomic_load(&finished), N);
    }

    ito_thread_t f;
    OK(ito_spawn(&f, NULL, failing, NULL));
    OK(ito_join(f, NULL));

    /* Many blocked at once: each hand-off needs another activation. */
    atomic_store(&finished, 0);
    enum { M = 64 };
    static ito_thread_t s[M];
    uint64_t t0 = ito_now_ns();
    for (int i = 0; i < M; i++)
        OK(ito_spawn(&s[i], NULL, sleeper, NULL));
    for (int i = 0; i < M; i++)
        OK(ito_join(s[i], NULL));
    CHECK_EQ(atomic_load(&finished), M);
    uint64_t ms = (ito_now_ns() - t0) / 1000000u;
    printf("blocking_handoff: %d sleeps of 30 ms took %llu ms, at most %d at once on %d vprocs (activations "
           "%s)\n", M, (unsigned long long)ms, atomic_load(&most_inside), ito_vproc_count(), on ? "on" : "off");
    /* Overlapped, not one after another on each vproc: more sleepers in
     * the kernel at once than vprocs. (Not a time bound: under TSan the
     * whole process stood still for a second now and then — its schedtrace
     * thread too — with or without hand-offs.) */
    if (on)
        CHECK(atomic_load(&most_inside) > ito_vproc_count());
    else
        CHECK(atomic_load(&most_inside) <= ito_vproc_count());
    return 0;
}
