# ratios.awk reads the output of several runs of the bench package, one
# round per process (each starts with a "goos:" line), and prints, for each
# ratio BENCHMARKS.md quotes, the median over the rounds and the range.
# Each ratio divides two ns/op figures of the same round.
#
#   awk -f bench/ratios.awk raw.txt

/^goos:/ { round++ }
/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^Benchmark/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i + 1) == "ns/op") ns[round, name] = $i
		if ($(i + 1) == "B/pending") bp[round, name] = $i
	}
}

function ratio(label, a, b,    r, n, v, vals, i, j, t) {
	n = 0
	for (r = 1; r <= round; r++) {
		if ((r, a) in ns && (r, b) in ns && ns[r, b] > 0) {
			vals[++n] = ns[r, a] / ns[r, b]
		}
	}
	if (n == 0) return
	for (i = 2; i <= n; i++) {        # insertion sort: n is small
		t = vals[i]
		for (j = i - 1; j > 0 && vals[j] > t; j--) vals[j + 1] = vals[j]
		vals[j + 1] = t
	}
	med = (n % 2) ? vals[(n + 1) / 2] : (vals[n / 2] + vals[n / 2 + 1]) / 2
	printf "%-48s %6.2f  (%.2f - %.2f, %d rounds)\n", label, med, vals[1], vals[n], n
}

END {
	L = "Lifecycle/impl="
	split("100 10000 1000000", inf, " ")
	for (k = 1; k <= 3; k++) {
		i = inf[k]
		ratio("scheduler / floor, inflight " i, L "scheduler/inflight=" i, L "floor/inflight=" i)
		ratio("naive / scheduler, inflight " i, L "naive/inflight=" i, L "scheduler/inflight=" i)
	}
	ratio("parallel: scheduler / floor", "LifecycleParallel/impl=scheduler", "LifecycleParallel/impl=floor")
	ratio("parallel: naive / scheduler", "LifecycleParallel/impl=naive", "LifecycleParallel/impl=scheduler")
	ratio("scheduler, inflight 10000 / 100", L "scheduler/inflight=10000", L "scheduler/inflight=100")
	ratio("scheduler, inflight 1000000 / 100", L "scheduler/inflight=1000000", L "scheduler/inflight=100")
	ratio("floor, inflight 1000000 / 100", L "floor/inflight=1000000", L "floor/inflight=100")
	ratio("naive, inflight 1000000 / 100", L "naive/inflight=1000000", L "naive/inflight=100")
	ratio("peers 1000 / 10", "Peers/peers=1000", "Peers/peers=10")
	ratio("peers 10000 / 10", "Peers/peers=10000", "Peers/peers=10")
	ratio("peers 10 / scheduler inflight 10000", "Peers/peers=10", L "scheduler/inflight=10000")
	ratio("offer, senders 100 / 1", "Offer/senders=100", "Offer/senders=1")
	ratio("offer, senders 10000 / 1", "Offer/senders=10000", "Offer/senders=1")
	ratio("disconnect, pending 10000 / 100", "Disconnect/pending=10000", "Disconnect/pending=100")
	ratio("disconnect, pending 1000000 / 100", "Disconnect/pending=1000000", "Disconnect/pending=100")
	ratio("disconnect 100 / scheduler inflight 10000", "Disconnect/pending=100", L "scheduler/inflight=10000")
	ratio("timeout fire, inflight 10000 / 100", "TimeoutFire/inflight=10000", "TimeoutFire/inflight=100")
	ratio("timeout fire, inflight 1000000 / 100", "TimeoutFire/inflight=1000000", "TimeoutFire/inflight=100")
	ratio("timeout fire 10000 / scheduler inflight 10000", "TimeoutFire/inflight=10000", L "scheduler/inflight=10000")
	print ""
	print "B/pending (first round; the fill is the same every round):"
	for (k = 1; k <= 3; k++) {
		i = inf[k]
		printf "  inflight %-8s floor %7s  naive %7s  scheduler %7s\n", i, bp[1, L "floor/inflight=" i], bp[1, L "naive/inflight=" i], bp[1, L "scheduler/inflight=" i]
	}
}
