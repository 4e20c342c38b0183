// Receive 4000 MiB over loopback TCP into a 256 KiB buffer (see ../floor.sh); prints the receiver's CPU-seconds per GB.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  long total = atol(argv[1]) << 20;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
  bind(ls, (void*)&a, sizeof a); listen(ls, 1); socklen_t al = sizeof a; getsockname(ls, (void*)&a, &al);
  if (fork() == 0) { int c = socket(AF_INET, SOCK_STREAM, 0); connect(c, (void*)&a, sizeof a);
    char *b = malloc(1<<20); memset(b, 1, 1<<20); long s = 0; while (s < total) { long k = write(c, b, 1<<20); if (k <= 0) break; s += k; } close(c); _exit(0); }
  int s = accept(ls, 0, 0); char *b = malloc(262144); long got = 0; long k;
  while ((k = read(s, b, 262144)) > 0) got += k;
  wait(0);
  struct rusage ru; getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec/1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec/1e6;
  printf("recv %.3f CPU-s/GB (%ld bytes)\n", cpu / (got/1e9), got);
}
