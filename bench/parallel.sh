#!/bin/sh
# parallel.sh runs BenchmarkLifecycleParallel (and BenchmarkPipelined) for
# every implementation at -cpu 1,2,4,8,16 from a prebuilt test binary, for a
# machine with many cores (issue 27 §4). Build the binary where the source
# is, copy it and this script over, and run it there:
#
#   CGO_ENABLED=0 go test -c -o bench.test ./bench
#   sh bench/parallel.sh ./bench.test [count] > parallel.txt
#
# count is how many times each benchmark runs (default 4). The output is
# the testing package's, for benchstat; nproc and the load come first, as
# comments benchstat skips.
set -eu
bin=${1:?usage: parallel.sh path/to/bench.test [count]}
count=${2:-4}
echo "# nproc $(nproc); $(uptime)"
"$bin" -test.run '^$' -test.bench '^Benchmark(LifecycleParallel|Pipelined)$' \
	-test.cpu 1,2,4,8,16 -test.count "$count" -test.benchtime 1s
echo "# $(uptime)"
