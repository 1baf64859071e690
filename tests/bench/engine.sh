#!/usr/bin/env bash
# Hold-model benchmark: our engine at 10^4 and 10^6 pending events, SimGrid 3.32 at 10^4 actors, same run.
# Extra lines: skewed increment distributions (bimodal: 90% 1-100 ns, 10% +500 us timers; packet: also 30%
# at +0), which a queue tuned to a well-spread distribution would handle badly.
set -euo pipefail
here=$(dirname "$0")
ours_10k=$("$BENCH_HOLD" 10000 20000000)
ours_1m=$("$BENCH_HOLD" 1000000 20000000)
bimodal_10k=$("$BENCH_HOLD" 10000 20000000 bimodal)
bimodal_1m=$("$BENCH_HOLD" 1000000 20000000 bimodal)
packet_1m=$("$BENCH_HOLD" 1000000 20000000 packet)
sg=$("$SIMGRID_HOLD" "$here/one_host.xml" 10000 100 --log=root.thresh:critical 2>/dev/null)
echo "$ours_10k"
echo "$ours_1m"
echo "$bimodal_10k"
echo "$bimodal_1m"
echo "$packet_1m"
echo "$sg"
rate() { sed -n 's/.*rate=\([0-9.]*\) M.*/\1/p' <<<"$1"; }
awk -v a="$(rate "$ours_10k")" -v s="$(rate "$sg")" \
  'BEGIN { printf "engine/simgrid ratio at 10,000 pending: %.1fx (%.2f vs %.3f M events/s)\n", a / s, a, s }'
