/* SPDX-License-Identifier: MIT */
/* The live view's server (api/view.c), asked directly as ito-ctl asks it: a
 * process with a known set of threads (main and 5 workers blocked on
 * semaphores, one named thread computing) answers with its pid, policy,
 * threads by state and one line per vproc naming what runs there; another
 * user gets no answer; with ITO_VIEW=0 there is no socket; the child of a
 * fork that resumes ito answers under its own pid, and the parent still does.
 * The name and the text are a protocol between processes
 * (src/api/view.h): pinned here. */
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common.h"

static ito_sem_t hold;
static _Atomic bool stop;

static void *worker(void *arg)
{
    (void)arg;
    OK(ito_sem_wait(&hold));
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

/* The target: main and 5 workers blocked, "spinner" computing; "ready" on
 * stdout, then it waits to be killed. */
static void target(bool fork_too)
{
    OK(ito_sem_init(&hold, 0));
    for (int i = 0; i < 5; i++) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, worker, NULL));
    }
    test_spawn_named("spinner", spinner);
    if (fork_too) {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) {
            /* The child resumes ito: one thread (this one), then its own view. */
            ito_thread_t t;
            atomic_store(&stop, true);
            OK(ito_spawn(&t, NULL, spinner, NULL));
            OK(ito_join(t, NULL));
            printf("child %d\n", (int)getpid());
            fflush(stdout);
            OK(ito_sem_wait(&hold));
            _exit(0);
        }
    }
    printf("ready\n");
    fflush(stdout);
    OK(ito_sem_wait(&hold));
}

/* Start this program as the target; its stdout on *out. */
static pid_t start(const char *mode, FILE **out)
{
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        char *argv[] = { (char *)"self", (char *)mode, NULL };
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd[1]);
    *out = fdopen(fd[0], "r");
    CHECK(*out);
    return pid;
}

/* Connect to pid's view; -1 with errno if there is none. */
static int connect_view(pid_t pid)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "ito-view-v1-%u-%d", (unsigned)geteuid(), (int)pid);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    if (connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Everything pid's view says, or "" (no view, or no answer). */
static void ask(pid_t pid, char *buf, size_t cap)
{
    buf[0] = '\0';
    int fd = connect_view(pid);
    if (fd < 0)
        return;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd);
}

static int field(const char *text, const char *key, int k)
{
    const char *l = strstr(text, key);
    CHECK(l);
    l += strlen(key);
    int v[4] = { 0 };
    CHECK(sscanf(l, "%d %d %d %d", &v[0], &v[1], &v[2], &v[3]) >= k + 1);
    return v[k];
}

/* The target's view, once its threads have settled: 6 blocked, the spinner
 * running or ready, and a vproc running it by name. */
static void check_view(pid_t pid, int vprocs)
{
    static char text[65536];
    char want[64];
    snprintf(want, sizeof want, "pid %d\n", (int)pid);
    for (int tries = 0;; tries++) {
        ask(pid, text, sizeof text);
        CHECK(!strncmp(text, "ito-view 1\n", 11));
        CHECK(strstr(text, want));
        char comm[64], path[64];
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
        FILE *cf = fopen(path, "r");
        CHECK(cf && fgets(comm, sizeof comm, cf));
        fclose(cf);
        CHECK(test_count(text, "\nprogram ") == 1 && strstr(text, comm));   /* comm ends with '\n' */
        CHECK(strstr(text, "\npolicy "));
        CHECK(strstr(text, "\ntaken_ns "));
        CHECK(strstr(text, "\nactivations "));
        CHECK(strstr(text, "\nend\n") && !strcmp(text + strlen(text) - 5, "\nend\n"));
        CHECK_EQ(field(text, "\nalloc ", 0) == 0 || field(text, "\nalloc ", 0) == 1, 1);
        CHECK(field(text, "\nalloc ", 1) >= 1);
        int lines = test_count(text, "\nvp ");
        CHECK_EQ(lines, vprocs);
        for (int i = 0; i < vprocs; i++) {
            char vp[16];
            snprintf(vp, sizeof vp, "\nvp %d ", i);
            CHECK(strstr(text, vp));
        }
        int running = field(text, "\nthreads ", 0), ready = field(text, "\nthreads ", 1),
            blocked = field(text, "\nthreads ", 2);
        if (blocked == 6 && running + ready == 1 && running == 1 && strstr(text, " spinner\n") &&
            strstr(text, " run "))
            return;
        if (tries == 100) {
            fprintf(stderr, "the view never showed 6 blocked and the spinner running:\n%s", text);
            exit(1);
        }
        usleep(50 * 1000);
    }
}

static void wait_line(FILE *f, const char *expect)
{
    char line[128];
    CHECK(fgets(line, sizeof line, f));
    if (strncmp(line, expect, strlen(expect))) {
        fprintf(stderr, "the target said \"%s\", not \"%s\"\n", line, expect);
        exit(1);
    }
}

static void finish(pid_t pid, FILE *f)
{
    kill(pid, SIGKILL);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        target(!strcmp(argv[1], "fork"));
        return 0;
    }
    setenv("ITO_VPROCS", "2", 1);
    /* What it shows. */
    FILE *f;
    pid_t pid = start("target", &f);
    wait_line(f, "ready");
    check_view(pid, 2);

    /* Another user gets nothing. */
    if (geteuid() == 0) {
        pid_t c = fork();
        CHECK(c >= 0);
        if (c == 0) {
            struct passwd *pw = getpwnam("nobody");
            uid_t uid = pw ? pw->pw_uid : 65534;
            CHECK(setgid(uid) == 0 || true);
            CHECK(setuid(uid) == 0);
            struct sockaddr_un a = { .sun_family = AF_UNIX };
            int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "ito-view-v1-0-%d", (int)pid);
            int fd = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK(fd >= 0);
            CHECK(connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                                                 (size_t)n)) == 0);
            char b[64];
            ssize_t r = read(fd, b, sizeof b);
            _exit(r == 0 ? 0 : 1);
        }
        int st;
        CHECK(waitpid(c, &st, 0) == c);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "another user got an answer (or could not connect): status %d\n", st);
            return 1;
        }
    }
    finish(pid, f);

    /* Off. */
    setenv("ITO_VIEW", "0", 1);
    pid = start("target", &f);
    wait_line(f, "ready");
    CHECK(connect_view(pid) < 0 && errno == ECONNREFUSED);
    finish(pid, f);
    unsetenv("ITO_VIEW");

    /* The child of fork. Not under the sanitizers: their allocators are not
     * fork-safe in a process with threads (tests/runtime/fork.c). */
    if (!TEST_SANITIZED) {
        pid = start("fork", &f);
        char line[128];
        pid_t child = 0;
        for (int i = 0; i < 2; i++) {
            CHECK(fgets(line, sizeof line, f));
            int c;
            if (sscanf(line, "child %d", &c) == 1)
                child = c;
            else
                CHECK(!strcmp(line, "ready\n"));
        }
        CHECK(child > 0);
        check_view(pid, 2);
        static char text[65536];
        char want[64];
        snprintf(want, sizeof want, "pid %d\n", (int)child);
        ask(child, text, sizeof text);
        if (!strstr(text, want) || !strstr(text, "\nend\n")) {
            fprintf(stderr, "the child of fork did not answer under its pid %d:\n%s\n", (int)child, text);
            return 1;
        }
        kill(child, SIGKILL);
        finish(pid, f);
    }
    return 0;
}
