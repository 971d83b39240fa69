/* A main for the fuzz targets when the compiler has no libFuzzer (gcc):
 * runs LLVMFuzzerTestOneInput over every file named, and over every file
 * in every directory named, in name order. A crash is the sanitizers' (the
 * targets are built with ASan and UBSan); an input that runs 10 s is one too
 * (libFuzzer's -timeout); no input at all is a failure, so that a corpus
 * that went missing does not pass. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static const char *current;

static void on_alarm(int sig) {
  static const char msg[] = "replay: timeout (10 s) on ";
  (void)sig;
  write(2, msg, sizeof msg - 1);
  write(2, current, strlen(current));
  write(2, "\n", 1);
  abort();
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *data = NULL;
  size_t len = 0, cap = 0, n;
  if (f == NULL) {
    perror(path);
    return -1;
  }
  do {
    if (cap - len < 4096) {
      cap = cap ? cap * 2 : 65536;
      if ((data = realloc(data, cap)) == NULL) abort();
    }
    n = fread(data + len, 1, cap - len, f);
    len += n;
  } while (n > 0);
  fclose(f);
  /* a copy of exactly len bytes, so that ASan sees a read past the input */
  uint8_t *copy = malloc(len ? len : 1);
  if (copy == NULL) abort();
  memcpy(copy, data, len);
  free(data);
  current = path;
  alarm(10);
  LLVMFuzzerTestOneInput(copy, len);
  alarm(0);
  free(copy);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **names = NULL;
  size_t n = 0;
  if (d == NULL) {
    perror(dir);
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if ((names = realloc(names, (n + 1) * sizeof *names)) == NULL) abort();
    if ((names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2)) == NULL) abort();
    sprintf(names[n++], "%s/%s", dir, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    if (run_file(names[i]) != 0) return -1;
    (*count)++;
    free(names[i]);
  }
  free(names);
  return 0;
}

int main(int argc, char **argv) {
  int count = 0;
  signal(SIGALRM, on_alarm);
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    if (S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i], &count) != 0) return 1;
    } else {
      if (run_file(argv[i]) != 0) return 1;
      count++;
    }
  }
  if (count == 0) {
    fprintf(stderr, "%s: no input to replay\n", argv[0]);
    return 1;
  }
  printf("%s: %d inputs replayed\n", argv[0], count);
  return 0;
}
