#!/bin/sh
# SPDX-License-Identifier: MIT
# ito-ctl shows the ito processes sharing the machine: two computing
# processes of one domain both appear, with their processors; an idle one
# killed with SIGKILL is gone from the next table (ito-ctl divides again,
# which drops the dead); a domain no process has used is reported as such
# (exit status 2).
# Usage: ito_ctl.sh ITO_CTL TEST_ALLOC_PROCESSES
set -u
ctl=$1 prog=$2
export ITO_ALLOC_DOMAIN=test-ito_ctl-$$
ITO_ALLOC_DOMAIN=$ITO_ALLOC_DOMAIN "$prog" compute & a=$!
ITO_ALLOC_DOMAIN=$ITO_ALLOC_DOMAIN "$prog" compute & b=$!
ITO_ALLOC_DOMAIN=$ITO_ALLOC_DOMAIN "$prog" idle & c=$!
trap 'kill -9 $a $b $c 2>/dev/null; rm -f /dev/shm/ito-alloc-$(id -u)-$ITO_ALLOC_DOMAIN-v1' EXIT
ok=0
for i in $(seq 1 200); do
    out=$("$ctl" --once 2>&1)
    if echo "$out" | grep -q "^ *$a " && echo "$out" | grep -q "^ *$b " && echo "$out" | grep -q "^ *$c .* 0 " &&
       echo "$out" | grep -q "3 processes"; then
        ok=1
        break
    fi
    sleep 0.05
done
echo "$out"
[ $ok = 1 ] || { echo "ito_ctl: the three processes did not all appear, the idle one wanting 0"; exit 1; }
kill -9 $c
wait $c 2>/dev/null
out=$("$ctl" --once 2>&1)
echo "$out"
if echo "$out" | grep -q "^ *$c " || ! echo "$out" | grep -q "2 processes"; then
    echo "ito_ctl: the killed idle process is still listed"
    exit 1
fi
"$ctl" --once --domain never-used-$$ >/dev/null 2>&1
[ $? = 2 ] || { echo "ito_ctl: a domain nobody used should give exit status 2"; exit 1; }
"$ctl" --bogus >/dev/null 2>&1
[ $? = 1 ] || { echo "ito_ctl: a bad option should give exit status 1"; exit 1; }
echo "ito_ctl: ok"
