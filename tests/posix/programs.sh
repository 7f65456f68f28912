#!/bin/sh
# SPDX-License-Identifier: MIT
# Unmodified Debian programs on ito threads (ito-run), their results checked
# by the plain tools outside ito: parallel compressors (pigz, xz -T, zstd -T)
# whose output must decompress to the input and equal the C library run's,
# and a multithreaded server (redis-server --io-threads) driven by its own
# benchmark client, whose counts must come out exact.
# Usage: programs.sh ITO-RUN  (exit 77: a program is missing)
set -eu
run=$1
for p in pigz xz zstd redis-server redis-benchmark redis-cli; do
  command -v $p >/dev/null 2>&1 || { echo "programs.sh: $p not installed (scripts/deps.sh test)"; exit 77; }
done
dir=$(mktemp -d /tmp/ito-programs-XXXXXX)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# 24 MB of text that compresses like text (no RNG from outside: same every run).
awk 'BEGIN { srand(7); for (i = 0; i < 400000; i++) {
       printf "%08d the quick brown fox %d jumps over %x lazy dogs %f\n", i, int(rand()*1e6), i*2654435761%4294967296, rand() } }' \
  > "$dir/in.txt"

check() {   # name compress-command decompress-command
  name=$1; comp=$2; decomp=$3
  sh -c "$comp" < "$dir/in.txt" > "$dir/$name.glibc"
  "$run" sh -c "$comp" < "$dir/in.txt" > "$dir/$name.ito"
  sh -c "$decomp" < "$dir/$name.ito" | cmp -s - "$dir/in.txt" || { echo "$name: ito's output does not decompress to the input"; exit 1; }
  cmp -s "$dir/$name.glibc" "$dir/$name.ito" || { echo "$name: ito's output differs from the C library run's"; exit 1; }
  echo "$name: ok"
}
check pigz "pigz -p 4 -c" "gzip -dc"
check xz "xz -T4 -3 -c" "xz -dc"
check zstd "zstd -T4 -q -c" "zstd -dc"

# redis: a port of our own; the client runs outside ito.
port=$(( 20000 + $$ % 20000 ))
"$run" redis-server --port $port --io-threads 2 --io-threads-do-reads yes --save "" --appendonly no \
  --daemonize no --logfile "$dir/redis.log" &
server=$!
i=0
until redis-cli -p $port ping 2>/dev/null | grep -q PONG; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "redis-server did not come up"; cat "$dir/redis.log"; exit 1; }
  sleep 0.1
done
n=20000
redis-benchmark -p $port -q -n $n -c 20 --threads 2 -t set,get,incr,lpush > "$dir/bench.txt" 2>&1
tr '\r' '\n' < "$dir/bench.txt" | grep "requests per second" || true
got=$(redis-cli -p $port get counter:__rand_int__)
[ "$got" = "$n" ] || { echo "redis: INCR counted $got, not $n"; exit 1; }
got=$(redis-cli -p $port llen mylist)
[ "$got" = "$n" ] || { echo "redis: LPUSH left $got items, not $n"; exit 1; }
redis-cli -p $port set ito works > /dev/null
[ "$(redis-cli -p $port get ito)" = "works" ] || { echo "redis: SET/GET"; exit 1; }
redis-cli -p $port shutdown nosave > /dev/null 2>&1 || true
wait "$server" || true
server=
echo "redis-server --io-threads 2: ok"
