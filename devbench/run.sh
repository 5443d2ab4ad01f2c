#!/bin/sh
# The device's benchmark run: old (707f64d, the session's start) and new
# (this tree) bench binaries, interleaved.
set -u
cd "$(dirname "$0")"
nproc > $OUT/nproc.txt; uptime > $OUT/uptime.txt
for r in 1 2 3; do
  for b in old new; do
    GOMAXPROCS=2 ./$b.test -test.run '^$' -test.bench 'BenchmarkLifecycle/impl=.*/inflight=(100|1000000)$' -test.benchtime 1s >> $OUT/lifecycle-$b.txt 2>&1
  done
done
./new.test -test.run '^$' -test.bench 'BenchmarkPipelined' -test.count 3 -test.cpu 2 >> $OUT/pipelined.txt 2>&1
for b in old new; do
  ./$b.test -test.run '^$' -test.bench 'BenchmarkLifecycleParallel' -test.cpu 1,2,4,8,16 -test.benchtime 1s >> $OUT/parallel-$b.txt 2>&1
done
./new.test -test.run '^$' -test.bench 'BenchmarkPipelined' -test.cpu 1,2,4,8,16 >> $OUT/pipelined-cpu.txt 2>&1
uptime >> $OUT/uptime.txt
