/* SPDX-License-Identifier: MIT */
/* A statically linked program, which ito-run must refuse (tests/posix). */
#include <stdio.h>

int main(void)
{
    puts("a static program ran: ito-run should have refused it");
    return 0;
}
