/* SPDX-License-Identifier: MIT */
/* A signal for the process reaches an idle ito program: with every thread
 * parked and every vproc asleep, SIGTERM, SIGINT and SIGHUP sent with kill,
 * and SIGALRM from alarm(), take their default action (the process ends by
 * that signal), and a handler runs (it writes to a pipe an ito thread reads:
 * the program ends by itself). Each child runs under a time limit: a signal
 * kept pending for ever fails the test instead of hanging it. The deadlock
 * report is off: every thread sleeps for good on purpose. */
#include <ito/io.h>

#include "common.h"

static int sig_to_send;
static bool sent;

static void on_quiet(pid_t pid)
{
    if (!sent && sig_to_send)
        kill(pid, sig_to_send);
    sent = true;
}

static int wake_pipe[2];

static void handler(int sig)
{
    (void)sig;
    char c = 'x';
    ssize_t n = write(wake_pipe[1], &c, 1);
    (void)n;
}

static void *reader(void *arg)
{
    (void)arg;
    char c;
    ssize_t r;
    while ((r = ito_read(wake_pipe[0], &c, 1)) < 0 && errno == EINTR)
        ;   /* the handler ran on this kernel thread (no SA_RESTART) */
    CHECK_EQ(r, 1);
    return NULL;
}

static void child(const char *how)
{
    ito_sem_t never;
    OK(ito_sem_init(&never, 0));
    if (!strcmp(how, "handler")) {
        CHECK(pipe(wake_pipe) == 0);
        struct sigaction sa = { .sa_handler = handler };
        sigemptyset(&sa.sa_mask);
        CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, reader, NULL));
        fprintf(stderr, "parked\n");
        OK(ito_join(t, NULL));
        exit(0);
    }
    if (!strcmp(how, "alarm"))
        alarm(1);
    fprintf(stderr, "parked\n");
    OK(ito_sem_wait(&never));
    fprintf(stderr, "the semaphore was posted by nobody\n");
    exit(3);
}

static void expect(const char *how, int sig, int sig_expected)
{
    static char err[4096];
    char sb[128];
    sig_to_send = sig;
    sent = false;
    int st = test_run_self_watched(how, err, sizeof err, 20000, 300, on_quiet);
    bool ok = sig_expected ? WIFSIGNALED(st) && WTERMSIG(st) == sig_expected : WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
        fprintf(stderr, "%s: %s (expected %s %d); stderr:\n%s\n", how, test_status_str(st, sb, sizeof sb),
                sig_expected ? "death by signal" : "exit", sig_expected, err);
        exit(1);
    }
    printf("signal_idle: %s: %s\n", how, test_status_str(st, sb, sizeof sb));
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        child(argv[1]);
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("ITO_DEADLOCK", "off", 1);
    expect("term", SIGTERM, SIGTERM);
    expect("int", SIGINT, SIGINT);
    expect("hup", SIGHUP, SIGHUP);
    expect("alarm", 0, SIGALRM);
    expect("handler", SIGUSR1, 0);
    return 0;
}
