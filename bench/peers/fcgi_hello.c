/* The plain C libfcgi peer of bench/suites/fastcgi.sh: N threads in FCGX_Accept_r answering
 * "Hello, World!". Listens on fd 0 (spawn-fcgi) or on argv[2] ("/path" or ":port"). Usage: fcgi_hello N [SOCK] */
#include <fcgiapp.h>
#include <pthread.h>
#include <stdlib.h>

static int listen_fd = 0;

static void* serve(void* arg) {
  FCGX_Request r;
  (void)arg;
  FCGX_InitRequest(&r, listen_fd, 0);
  while (FCGX_Accept_r(&r) == 0)
    FCGX_PutS("Status: 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!", r.out);
  return NULL;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 16;
  pthread_t t[256];
  FCGX_Init();
  if (argc > 2) listen_fd = FCGX_OpenSocket(argv[2], 1024);
  if (n < 1 || n > 256 || listen_fd < 0) return 1;
  for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, serve, NULL);
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  return 0;
}
