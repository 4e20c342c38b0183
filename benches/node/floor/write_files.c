// One thread writes N files of 1 MiB as the node stores a PUT (see ../floor.sh); prints its CPU-seconds per GB.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/time.h>
// Write N files of 1 MiB (4 x 256 KiB), each: open(O_CREAT|O_DIRECT?) + writes + fsync + rename + fsync dir.
int main(int argc, char **argv) {
  int n = atoi(argv[1]); int direct = atoi(argv[2]); int dofsync = atoi(argv[3]);
  const char *dir = argv[4];
  void *buf; posix_memalign(&buf, 4096, 262144); memset(buf, 7, 262144);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  char tmp[512], fin[512];
  struct timeval t0, t1; gettimeofday(&t0, 0);
  for (int i = 0; i < n; i++) {
    snprintf(tmp, sizeof tmp, "%s/%d.tmp", dir, i); snprintf(fin, sizeof fin, "%s/%d", dir, i);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
    for (int j = 0; j < 4; j++) if (write(fd, buf, 262144) != 262144) { perror("write"); return 1; }
    if (dofsync) fsync(fd);
    close(fd); rename(tmp, fin);
    if (dofsync) fsync(dfd);
  }
  gettimeofday(&t1, 0);
  struct rusage ru; getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec/1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec/1e6;
  double gb = n * 1048576.0 / 1e9;
  printf("direct=%d fsync=%d: %.3f CPU-s/GB, %.0f MB/s, vcsw %ld ivcsw %ld\n", direct, dofsync, cpu/gb, gb*1000/((t1.tv_sec-t0.tv_sec)+(t1.tv_usec-t0.tv_usec)/1e6), ru.ru_nvcsw, ru.ru_nivcsw);
  return 0;
}
