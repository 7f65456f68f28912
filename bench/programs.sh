#!/bin/sh
# SPDX-License-Identifier: MIT
# programs.sh — an unmodified Debian program on the C library's threads or on
# ito's (ito-run), timed; one JSON line, like the programs of bench/.
#
#   programs.sh --ito-run PATH --impl pthread|ito-pthread --work pigz|xz|zstd|redis --threads T
#
# pigz, xz, zstd: compress 48 MB of generated text with T threads; wall time
# in ms. redis: redis-server --io-threads T under the given threads,
# redis-benchmark (always on the C library's threads) with SET and GET from 50
# clients; ns per request (the inverse of the mean throughput). A program
# that is not installed is reported as skipped (scripts/deps.sh run).
set -eu
run= impl= work= threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --ito-run) run=$2; shift 2 ;;
    --impl) impl=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "{\"error\":\"unknown argument $1\"}"; exit 2 ;;
  esac
done
case "$impl" in
  pthread) pre= ;;
  ito-pthread) pre=$run ;;
  *) echo '{"error":"--impl must be pthread or ito-pthread"}'; exit 2 ;;
esac
need=$work; [ "$work" = redis ] && need="redis-server redis-benchmark redis-cli"
for p in $need; do
  command -v "$p" >/dev/null 2>&1 || { echo "{\"exp\":\"programs\",\"impl\":\"$impl\",\"skipped\":true,\"skip_reason\":\"$p not installed\"}"; exit 0; }
done
now_ns() { date +%s%N; }
json() { echo "{\"exp\":\"programs\",\"impl\":\"$impl\",\"work\":\"$work\",\"threads\":$threads,$1}"; }

if [ "$work" != redis ]; then
  input=/tmp/ito-bench-programs-48M.txt
  if [ ! -s "$input" ]; then
    awk 'BEGIN { srand(7); for (i = 0; i < 800000; i++) {
           printf "%08d the quick brown fox %d jumps over %x lazy dogs %f\n", i, int(rand()*1e6), i*2654435761%4294967296, rand() } }' \
      > "$input.tmp" && mv "$input.tmp" "$input"
  fi
  case "$work" in
    pigz) cmd="pigz -p $threads -c" ;;
    xz) cmd="xz -T$threads -3 -c" ;;
    zstd) cmd="zstd -T$threads -3 -q -c" ;;
    *) echo '{"error":"--work must be pigz, xz, zstd or redis"}'; exit 2 ;;
  esac
  t0=$(now_ns)
  $pre sh -c "$cmd" < "$input" > /dev/null
  t1=$(now_ns)
  json "\"ms\":$(awk "BEGIN { printf \"%.3f\", ($t1 - $t0) / 1e6 }")"
  exit 0
fi

port=$(( 30000 + $$ % 20000 ))
log=$(mktemp /tmp/ito-bench-redis-XXXXXX)
$pre redis-server --port $port --io-threads $threads --io-threads-do-reads yes --save "" --appendonly no \
  --daemonize no --logfile "$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
i=0
until redis-cli -p $port ping 2>/dev/null | grep -q PONG; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo '{"error":"redis-server did not start"}'; exit 1; }
  sleep 0.1
done
rps=$(redis-benchmark -p $port -q -n 100000 -c 50 --threads 2 -t set,get 2>/dev/null | tr '\r' '\n' |
      awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^requests/) { s += $i; n++ } }
           END { if (n) printf "%.1f", s / n }')
redis-cli -p $port shutdown nosave > /dev/null 2>&1 || true
wait $server 2>/dev/null || true
[ -n "$rps" ] || { echo '{"error":"no throughput from redis-benchmark"}'; exit 1; }
json "\"requests_per_s\":$rps,\"ns_per_request\":$(awk "BEGIN { printf \"%.1f\", 1e9 / $rps }")"
