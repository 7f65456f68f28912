/* SPDX-License-Identifier: MIT */
#include "base/libc.h"
#include "base/kthread.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The scheduling policy of the thread that started ito (saved at init): -1
 * until then. */
static int base_policy = -1;
static struct sched_param base_param;

void ito__kthread_policy_save(void)
{
    struct sched_param param;
    int policy = ito__sys_sched_getscheduler(0, &param);
    if (policy >= 0) {
        base_param = param;
        base_policy = policy & ~SCHED_RESET_ON_FORK;
    }
}

int ito__kthread_start(const char *name, size_t stack, void *(*fn)(void *), void *arg, pthread_t *out)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all;
    sigfillset(&all);
    pthread_attr_setsigmask_np(&attr, &all);
    if (base_policy >= 0) {
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, base_policy);
        pthread_attr_setschedparam(&attr, &base_param);
    }
    pthread_t t;
    int e = ito__libc_pthread_create(&t, &attr, fn, arg);
    if (e == EPERM && base_policy >= 0) {   /* (a policy the process may no longer set): inherit */
        pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
        e = ito__libc_pthread_create(&t, &attr, fn, arg);
    }
    pthread_attr_destroy(&attr);
    if (e)
        return e;
    if (name)
        ito__libc_pthread_setname_np(t, name);
    if (out)
        *out = t;
    return 0;
}

int ito__kthread_signal(pid_t tid, int sig, union sigval value)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value = value;
    return (int)syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, sig, &si);
}
