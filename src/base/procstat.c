/* SPDX-License-Identifier: MIT */
#include "base/procstat.h"
#include "base/libc.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *ito__procstat_read(pid_t tid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = ito__sys_read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    /* "tid (comm) S ...": the name may hold ')' and spaces, so the last ')'. */
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

const char *ito__procstat_field(const char *fields, int n)
{
    const char *p = fields;
    for (int f = 3; f < n; f++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
    }
    return *p ? p : NULL;
}

bool ito__procstat_asleep(pid_t tid)
{
    char buf[512];
    const char *state = ito__procstat_read(tid, buf, sizeof buf);
    return state && (*state == 'S' || *state == 'D');
}
