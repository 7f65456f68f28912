#!/bin/sh
# ito-ctl shows the ito processes sharing the machine: two computing
# processes of one domain both appear, with their processors; a domain no
# process has used is reported as such (exit status 2).
# Usage: ito_ctl.sh ITO_CTL TEST_ALLOC_PROCESSES
set -u
ctl=$1 prog=$2
export ITO_ALLOC_DOMAIN=test-ito_ctl-$$
ITO_ALLOC_DOMAIN=$ITO_ALLOC_DOMAIN "$prog" compute & a=$!
ITO_ALLOC_DOMAIN=$ITO_ALLOC_DOMAIN "$prog" compute & b=$!
trap 'kill -9 $a $b 2>/dev/null; rm -f /dev/shm/ito-alloc-$(id -u)-$ITO_ALLOC_DOMAIN-v1' EXIT
ok=0
for i in $(seq 1 200); do
    out=$("$ctl" --once 2>&1)
    if echo "$out" | grep -q "^ *$a " && echo "$out" | grep -q "^ *$b " && echo "$out" | grep -q "2 processes"; then
        ok=1
        break
    fi
    sleep 0.05
done
echo "$out"
[ $ok = 1 ] || { echo "ito_ctl: the two processes did not both appear"; exit 1; }
"$ctl" --once --domain never-used-$$ >/dev/null 2>&1
[ $? = 2 ] || { echo "ito_ctl: a domain nobody used should give exit status 2"; exit 1; }
"$ctl" --bogus >/dev/null 2>&1
[ $? = 1 ] || { echo "ito_ctl: a bad option should give exit status 1"; exit 1; }
echo "ito_ctl: ok"
