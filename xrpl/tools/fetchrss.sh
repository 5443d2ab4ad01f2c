#!/usr/bin/env bash
# fetchrss.sh LEAVES PEERS [STORE...]: starts PEERS ledgerpeer processes
# serving a generated ledger of LEAVES leaves, then fetches it with
# ledgerfetch -connect -root once per STORE ("disk": a fresh Pebble store in
# a temporary directory; "mem": in memory), printing each fetch's rate and
# the fetcher's own peak RSS (GNU time's maximum resident set size).
# Binaries are built into $BIN (default: a temporary directory), unless
# both are there already. FETCH_CPUS and PEER_CPUS, if set, pin the fetcher
# and the peers to those CPUs (taskset -c), so that they do not share cores,
# as when the peers are other machines.
set -euo pipefail
leaves=${1:?leaves}; peers=${2:?peers}; shift 2
stores=("${@:-disk}")
bin=${BIN:-$(mktemp -d)}
[ -x "$bin/ledgerfetch" ] && [ -x "$bin/ledgerpeer" ] || go build -o "$bin/" ./xrpl/cmd/ledgerfetch ./xrpl/cmd/ledgerpeer
pin() { local cpus=$1; shift; if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for i in $(seq 1 "$peers"); do
  pin "${PEER_CPUS:-}" "$bin/ledgerpeer" -objects "$leaves" -listen 127.0.0.1:0 > "$work/peer$i.out" 2>&1 &
  pids+=($!)
done
addrs=()
for i in $(seq 1 "$peers"); do
  until grep -q "serving ledger" "$work/peer$i.out" 2>/dev/null; do sleep 1; done
  line=$(head -1 "$work/peer$i.out")
  root=$(awk '{print $4}' <<<"$line"); nodes=$(sed -E 's/.*objects, ([0-9]+) nodes.*/\1/' <<<"$line")
  addrs+=("$(awk '{print $NF}' <<<"$line")")
done
connect=$(IFS=,; echo "${addrs[*]}")
echo "ledger $root: $leaves leaves, $nodes nodes, $peers ledgerpeer processes"
for store in "${stores[@]}"; do
  arg=(); [ "$store" = mem ] && arg=(-store mem)
  pin "${FETCH_CPUS:-}" /usr/bin/time -f "peak RSS %M KB, CPU %U s user %S s sys" "$bin/ledgerfetch" -connect "$connect" -root "$root" -expect "$nodes" "${arg[@]}" \
    > "$work/fetch.out" 2> "$work/fetch.err" || { cat "$work/fetch.err"; exit 1; }
  echo "store $store: $(grep -E "^(INCOMPLETE: )?fetched" "$work/fetch.out"); $(grep "peak RSS" "$work/fetch.err")"
done
