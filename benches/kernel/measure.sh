#!/usr/bin/env bash
# The model beside the running kernel: real dbench (Debian's dbench 4) on a btrfs on a RAM-backed
# loop device, made and mounted as the btrfs dbench thread's script does (mkfs -m single -d
# single, -o ssd), then the model's dbench with the same clients, length and cores; prints
# both tables and each operation's real/model ratio, then single-call costs (opcost.c), a COW's
# cost (cowcost.c) and, with fio, 4 KiB direct writes beside the model's.
# Needs root, btrfs in /proc/filesystems, losetup, mkfs.btrfs, dbench and cc. Timing of a
# real kernel: not deterministic, so no test runs it; docs/validation.md pastes one run.
# Usage: benches/kernel/measure.sh [CLIENTS] [SECONDS] [FSYNCSIM]
set -euo pipefail
clients=${1:-1}
secs=${2:-20}
bin=${3:-target/release/fsyncsim}
here=$(cd "$(dirname "$0")" && pwd)
for t in dbench mkfs.btrfs losetup cc; do
  command -v "$t" >/dev/null || { echo "measure.sh: $t not found (apt-get install dbench btrfs-progs gcc)" >&2; exit 2; }
done
grep -qw btrfs /proc/filesystems || { echo "measure.sh: this kernel has no btrfs" >&2; exit 2; }
[ -x "$bin" ] || { echo "measure.sh: $bin is not an executable fsyncsim (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
loop=""
cleanup() {
  umount "$work/mnt" 2>/dev/null || true
  [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
  umount "$work/ram" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ram" "$work/mnt"
mount -t tmpfs -o size=6g tmpfs "$work/ram"
truncate -s 5G "$work/ram/img"
loop=$(losetup -f --show "$work/ram/img")
mkfs.btrfs -q -f -m single -d single "$loop" >/dev/null 2>&1
mount -o ssd "$loop" "$work/mnt"
echo "kernel $(uname -r), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), btrfs on a RAM-backed loop device"
dbench -D "$work/mnt" -t "$secs" "$clients" >"$work/real.txt" 2>&1
"$bin" workload dbench --clients "$clients" --duration "${secs}s" --warmup 0 \
  --policy linux-5.16 --cpus "$(nproc)" >"$work/model.txt"
table() { sed -n '/^ *Operation/,/^Throughput/p' "$1" | awk '$2 ~ /^[0-9]+$/ {print $1, $3} /^Throughput/ {print "Throughput", $2}'; }
echo "dbench $clients client(s) ${secs} s: AvgLat ms (real kernel | model linux-5.16, $(nproc) cores); throughput MB/s"
join <(table "$work/real.txt" | sort) <(table "$work/model.txt" | sort) |
  awk '{r = ($3 > 0) ? sprintf("%.1f", $2 / $3) : "-"; printf "%-12s %10s %10s %8s\n", $1, $2, $3, r}'
cc -O2 -o "$work/opcost" "$here/opcost.c"
echo "single calls on the same btrfs, ns each (one thread, a directory of 40 files):"
"$work/opcost" "$work/mnt/opcost" 50000 40
# A COW's cost beside its copy (cowcost.c): both replace passes inside one transaction.
mount -o remount,commit=600 "$work/mnt"
mkdir "$work/mnt/cow"
cc -O2 -o "$work/cowcost" "$here/cowcost.c"
echo "xattr replaces in leaves not yet COWed, then in the same leaves COWed (ns each):"
"$work/cowcost" "$work/mnt/cow" 140000 32 create >/dev/null
sync
"$work/cowcost" "$work/mnt/cow" 140000 32 replace
# fsperf's dio4kbs16threads job with one thread (fio lays the files out preallocated, as
# fsperf's does), beside the model's with one thread. From 6.15 (968f19c5b1b7, "btrfs:
# always fallback to buffered write if the inode requires checksum") a direct write to a
# file with data checksums is a buffered write plus writeback: the files are made with
# nodatasum so the kernel takes the direct path 5.10-5.16 took (without the checksums).
if command -v fio >/dev/null; then
  mount -o remount,nodatasum "$work/mnt"
  echo "4 KiB O_DIRECT random writes, 1 thread over 16 x 64 MiB nodatasum files: real kernel, then model linux-5.16"
  fio --name=dio --directory="$work/mnt" --rw=randwrite --bs=4k --direct=1 --ioengine=psync \
    --nrfiles=16 --size=1g --runtime="$secs" --time_based --numjobs=1 2>&1 |
    grep -E '^ +write: IOPS|^ +clat \(' | sed 's/^ */  /'
  "$bin" workload dio4kbs16threads --threads 1 --duration "${secs}s" --policy linux-5.16 |
    grep -E '^ +write: IOPS' | sed 's/^ */  /'
else
  echo "fio not found: the direct-write comparison is skipped (apt-get install fio)"
fi
