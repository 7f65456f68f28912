// SPDX-License-Identifier: MIT
// C++ across pthread_exit and cancellation.
//
// POSIX leaves the interaction with C++ to the implementation; the C library
// (and the C++ ABI it follows) unwinds the stack as a "forced unwind": the
// destructors of every live object run, frame by frame, as for an exception;
// a catch (...) sees it and must rethrow (abi::__forced_unwind); and
// thread_local objects are destroyed when the thread ends, whichever way.
// This is what C++ programs (and their RAII locks) count on.
//
// No case is left out for a glibc deviation.
#include <cxxabi.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <atomic>

#include "conform.h"

static std::atomic<int> destroyed{0}, tls_destroyed{0}, rethrown{0}, reached{0};

struct Counted {
    ~Counted() { destroyed++; }
};

struct PerThread {
    int touched = 0;
    ~PerThread() { tls_destroyed++; }
};

static thread_local PerThread per_thread;

static void reset()
{
    destroyed = tls_destroyed = rethrown = reached = 0;
}

static void wait_reached()
{
    for (int i = 0; i < 5000 && !reached.load(); i++)
        usleep(1000);
    CHECK(reached.load());
}

static void inner_exit()
{
    Counted c;
    pthread_exit((void *)7);
}

static void *exits_two_frames_down(void *)
{
    per_thread.touched = 1;
    Counted a;
    inner_exit();
    return nullptr;
}

static void exit_runs_destructors()
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, nullptr, exits_two_frames_down, nullptr));
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)7);
    CHECK_EQ(destroyed.load(), 2);
    CHECK_EQ(tls_destroyed.load(), 1);
}

static sem_t never;

static void *cancelled_in_sem_wait(void *)
{
    per_thread.touched = 1;
    Counted a;
    try {
        Counted b;
        reached = 1;
        sem_wait(&never);
    } catch (abi::__forced_unwind &) {
        rethrown++;
        throw;
    }
    return nullptr;
}

static void cancel_runs_destructors()
{
    reset();
    OK(sem_init(&never, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, nullptr, cancelled_in_sem_wait, nullptr));
    wait_reached();
    usleep(10000);
    OK(pthread_cancel(t));
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == PTHREAD_CANCELED);
    CHECK_EQ(destroyed.load(), 2);
    CHECK_EQ(rethrown.load(), 1);
    CHECK_EQ(tls_destroyed.load(), 1);
    OK(sem_destroy(&never));
}

static void *catch_all_rethrows(void *)
{
    Counted a;
    try {
        reached = 1;
        for (;;) {
            usleep(1000); // a cancellation point
        }
    } catch (...) {
        rethrown++;
        throw;
    }
    return nullptr;
}

static void catch_all_sees_cancellation()
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, nullptr, catch_all_rethrows, nullptr));
    wait_reached();
    OK(pthread_cancel(t));
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == PTHREAD_CANCELED);
    CHECK_EQ(destroyed.load(), 1);
    CHECK_EQ(rethrown.load(), 1);
}

static void *throws_and_catches(void *)
{
    // An ordinary exception on an ito thread's stack, caught in the thread.
    try {
        Counted c;
        throw 42;
    } catch (int v) {
        return (void *)(intptr_t)v;
    }
    return nullptr;
}

static void exceptions_inside_a_thread()
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, nullptr, throws_and_catches, nullptr));
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)42);
    CHECK_EQ(destroyed.load(), 1);
}

int main()
{
    RUN_CASE(exit_runs_destructors, 10);
    RUN_CASE(cancel_runs_destructors, 10);
    RUN_CASE(catch_all_sees_cancellation, 10);
    RUN_CASE(exceptions_inside_a_thread, 10);
    return 0;
}
