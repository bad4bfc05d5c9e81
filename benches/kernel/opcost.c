// Wall time of single file-system calls on the running kernel, one thread, each averaged
// over N calls, in directories of D files: what benches/kernel/measure.sh prints beside the
// model. Usage: opcost DIR N D (DIR is created; N >= 10, 1 <= D <= 100000).
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void make_files(const char *prefix, int d) {
  char p[64];
  for (int i = 0; i < d; i++) {
    snprintf(p, sizeof p, "%s%05d.DOC", prefix, i);
    close(open(p, O_CREAT | O_RDWR, 0644));
  }
}

static void report(const char *what, double t0, long n) {
  printf("%-20s %8.0f ns\n", what, (now_ns() - t0) / n);
}

static void namespace_calls(int n) {
  char p[64], q[64];
  double t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "NEW%07d.DOC", i);
    close(open(p, O_CREAT | O_EXCL | O_RDWR, 0644));
  }
  report("create + close", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "NEW%07d.DOC", i);
    snprintf(q, sizeof q, "REN%07d.DOC", i);
    rename(p, q);
  }
  report("rename", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "REN%07d.DOC", i);
    unlink(p);
  }
  report("unlink", t0, n);
}

static void lookup_calls(int n, int d) {
  char p[64];
  struct stat st;
  struct statfs sf;
  double t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "BASE%05d.DOC", i % d);
    stat(p, &st);
  }
  report("stat", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "MISS%05d.DOC", i % d);
    stat(p, &st);
  }
  report("stat (missing)", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++) {
    snprintf(p, sizeof p, "BASE%05d.DOC", i % d);
    close(open(p, O_RDWR));
  }
  report("open + close", t0, n);
  int fd = open("BASE00000.DOC", O_RDWR);
  t0 = now_ns();
  for (int i = 0; i < n; i++)
    fstat(fd, &st);
  report("fstat", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++)
    statfs(".", &sf);
  report("statfs", t0, n);
  t0 = now_ns();
  for (int i = 0; i < n; i++)
    getppid();
  report("getppid", t0, n);
  close(fd);
}

static void readdir_calls(int n, int d) {
  long entries = 0;
  double t0 = now_ns();
  for (int i = 0; i < n; i++) {
    DIR *dir = opendir(".");
    if (!dir)
      return;
    while (readdir(dir))
      entries++;
    closedir(dir);
  }
  double t = now_ns() - t0;
  char what[32];
  snprintf(what, sizeof what, "read dir of %d", d);
  printf("%-20s %8.0f ns (%.0f ns per entry)\n", what, t / n, t / (entries ? entries : 1));
}

int main(int argc, char **argv) {
  if (argc != 4 || atoi(argv[2]) < 10 || atoi(argv[3]) < 1 || atoi(argv[3]) > 100000) {
    fprintf(stderr, "usage: opcost DIR N D (N >= 10 calls, 1 <= D <= 100000 files)\n");
    return 2;
  }
  int n = atoi(argv[2]), d = atoi(argv[3]);
  if (mkdir(argv[1], 0755) || chdir(argv[1])) {
    perror(argv[1]);
    return 2;
  }
  if (mkdir("ns", 0755) || mkdir("rd", 0755) || chdir("ns"))
    return 2;
  make_files("BASE", d);
  sync();
  namespace_calls(n);
  lookup_calls(n, d);
  if (chdir("../rd"))
    return 2;
  make_files("BASE", d);
  sync();
  readdir_calls(n / 10, d);
  return 0;
}
