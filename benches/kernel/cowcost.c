// The cost of a leaf COW on the running kernel, as a cross-check of the model's
// alloc_tree_block_ps and free_tree_block_ps (models/src/btrfs/costs.rs); not a test.
// Makes FILES empty files in DIR with an xattr on every STRIDE/2-th one, then (after a
// commit: run `sync` between the phases, mount with commit=600 so none falls inside the
// second) replaces the xattrs of offset 0 (their leaves not yet COWed in the transaction),
// then of offset STRIDE/2 (the same leaves, COWed). Usage, as root, on a fresh btrfs:
//   cowcost DIR 140000 32 create; sync
//   echo 1 > /sys/kernel/tracing/events/btrfs/btrfs_cow_block/enable   # counts the COWs
//   perf record -e cpu-clock -g cowcost DIR 140000 32 replace
//   perf report --children   # btrfs_force_cow_block against copy_extent_buffer_full
// Kernels from 6.x insert the new xattr item before deleting the old, so the first pass
// also splits and pushes leaves: its time minus the second's is more than the COW alone.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pass(const char *dir, int n, int stride, int off, int flags, const char *what) {
  char p[256];
  int k = 0;
  double t0 = now_ns();
  for (int i = off; i < n; i += stride, k++) {
    snprintf(p, sizeof p, "%s/f%07d", dir, i);
    if (setxattr(p, "user.a", flags ? "w" : "v", 1, flags)) {
      perror(p);
      exit(1);
    }
  }
  printf("%-40s %6d calls %8.0f ns each\n", what, k, (now_ns() - t0) / k);
}

int main(int argc, char **argv) {
  if (argc != 5 || atoi(argv[2]) < 1 || atoi(argv[3]) < 2) {
    fprintf(stderr, "usage: cowcost DIR FILES STRIDE create|replace\n");
    return 2;
  }
  const char *dir = argv[1];
  int n = atoi(argv[2]), stride = atoi(argv[3]);
  if (!strcmp(argv[4], "create")) {
    char p[256];
    for (int i = 0; i < n; i++) {
      snprintf(p, sizeof p, "%s/f%07d", dir, i);
      int fd = open(p, O_CREAT | O_WRONLY, 0644);
      if (fd < 0) {
        perror(p);
        return 1;
      }
      close(fd);
    }
    pass(dir, n, stride, 0, 0, "xattr insert, offset 0");
    pass(dir, n, stride, stride / 2, 0, "xattr insert, offset S/2");
    return 0;
  }
  pass(dir, n, stride, 0, XATTR_REPLACE, "replace, leaves not COWed yet");
  pass(dir, n, stride, stride / 2, XATTR_REPLACE, "replace, same leaves COWed");
  return 0;
}
