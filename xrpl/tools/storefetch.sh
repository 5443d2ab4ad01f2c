#!/usr/bin/env bash
# storefetch.sh BIN STORE: one whole fetch from 16 peers served by one
# ledgerpeer -store STORE process (built already: see tools/mainnet), with
# the ledgerpeer and ledgerfetch binaries in BIN and their default flags,
# printing the fetch's time and rate, each process's CPU time a node
# (user and system, from GNU time) and peak RSS, and the load average
# before and after. Run it with two BINs in turn (say main's and a
# branch's) to compare them on one machine under the same load.
# PEER_FLAGS and FETCH_FLAGS, if set, are added to ledgerpeer's and
# ledgerfetch's flags (say PEER_FLAGS="-cpuprofile /tmp/peer.pprof").
set -euo pipefail
bin=${1:?bin}; store=${2:?store}
work=$(mktemp -d)
pp=
cleanup() { [ -n "$pp" ] && kill "$pp" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
first=$((20000 + RANDOM % 10000))
/usr/bin/time -o "$work/peer.time" -f "%U %S %M" "$bin/ledgerpeer" -store "$store" -listen "127.0.0.1:$first-$((first + 15))" ${PEER_FLAGS:-} >"$work/peer.out" 2>"$work/peer.err" &
pp=$!
until grep -q " on " "$work/peer.out" 2>/dev/null; do
	kill -0 "$pp" 2>/dev/null || { cat "$work/peer.err" >&2; exit 1; }
	sleep 0.2
done
line=$(head -1 "$work/peer.out")
root=$(sed -E 's/.*ledger ([0-9a-f]{64}).*/\1/' <<<"$line")
nodes=$(sed -E 's/.*objects, ([0-9]+) nodes.*/\1/' <<<"$line")
addrs=$(sed -E 's/.* on //' <<<"$line")
load0=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/time -o "$work/fetch.time" -f "%U %S %M" "$bin/ledgerfetch" -connect "$addrs" -root "$root" -expect "$nodes" -json ${FETCH_FLAGS:-} >"$work/fetch.json" 2>"$work/fetch.err"
kill -INT "$(pgrep -P "$pp")"
wait "$pp"
pp=
load1=$(cut -d' ' -f1 /proc/loadavg)
rate=$(grep -m1 '"objects_per_second"' "$work/fetch.json" | tr -dc '0-9.')
wall=$(grep -m1 '"wall_seconds"' "$work/fetch.json" | tr -dc '0-9.')
read -r fu fs fm <"$work/fetch.time"
read -r pu ps pm <"$work/peer.time"
awk -v n="$nodes" -v r="$rate" -v w="$wall" -v fu="$fu" -v fs="$fs" -v fm="$fm" -v pu="$pu" -v ps="$ps" -v pm="$pm" -v l0="$load0" -v l1="$load1" 'BEGIN {
	printf "%d nodes in %.1fs, %.0f nodes/s | fetcher %.2f us a node, peak RSS %.0f MB | peers %.2f us a node, peak RSS %.0f MB | load %s to %s\n",
		n, w, r, (fu + fs) * 1e6 / n, fm / 1024, (pu + ps) * 1e6 / n, pm / 1024, l0, l1 }'
