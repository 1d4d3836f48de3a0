#!/bin/sh
# stand-in for perftest's ib_write_lat: the server waits a moment (as the real one until its
# client is done); the client prints a real-format table
# whose row is the -s size (t_typical 5 µs + 1 µs per 4 KiB)
size=64; last=""; for arg in "$@"; do [ "$prev" = "-s" ] && size=$arg; prev=$arg; last=$arg; done
case "$last" in *.*.*.*) ;; *) echo ' * Waiting for client to connect... *'; exec sleep 1;; esac
t=$(awk "BEGIN { printf \"%.2f\", 5 + $size / 4096 }")
echo ' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]'
echo " $size       1000          $t           $t         $t                $t             0.01            $t                    $t"
echo '---------------------------------------------------------------------------------------'
