/* A small client built on libnfs (an NFS implementation we did not write),
 * for nfs_interop_test: one operation on an NFSv3 export, its result printed
 * as "result=N" (0, or libnfs's negative errno, e.g. -30 for EROFS).
 *
 *   libnfs_client URL OP [ARG...]
 *     URL  nfs://SERVER/EXPORT?nfsport=P&mountport=Q&version=3
 *     OP   mkdir P | rmdir P | unlink P | rename A B | write P TEXT | cat P | stat P
 */
#include <fcntl.h>
#include <sys/time.h>
#include <nfsc/libnfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: libnfs_client URL OP [ARG...]\n");
    return 2;
  }
  struct nfs_context *nfs = nfs_init_context();
  if (nfs == NULL) return 2;
  struct nfs_url *url = nfs_parse_url_dir(nfs, argv[1]);
  if (url == NULL) {
    fprintf(stderr, "bad url: %s\n", nfs_get_error(nfs));
    return 2;
  }
  int rc = nfs_mount(nfs, url->server, url->path);
  if (rc != 0) {
    printf("mount=%d %s\n", rc, nfs_get_error(nfs));
    return 1;
  }
  const char *op = argv[2];
  const char *a = argv[3];
  if (strcmp(op, "mkdir") == 0) {
    rc = nfs_mkdir(nfs, a);
  } else if (strcmp(op, "rmdir") == 0) {
    rc = nfs_rmdir(nfs, a);
  } else if (strcmp(op, "unlink") == 0) {
    rc = nfs_unlink(nfs, a);
  } else if (strcmp(op, "rename") == 0 && argc > 4) {
    rc = nfs_rename(nfs, a, argv[4]);
  } else if (strcmp(op, "write") == 0 && argc > 4) {
    struct nfsfh *fh = NULL;
    rc = nfs_creat(nfs, a, 0644, &fh);
    if (rc == 0) {
      int n = nfs_write(nfs, fh, strlen(argv[4]), argv[4]);
      rc = n < 0 ? n : 0;
      nfs_close(nfs, fh);
    }
  } else if (strcmp(op, "cat") == 0) {
    struct nfsfh *fh = NULL;
    rc = nfs_open(nfs, a, O_RDONLY, &fh);
    if (rc == 0) {
      char buf[4096];
      int n = nfs_read(nfs, fh, sizeof(buf), buf);
      if (n > 0) fwrite(buf, 1, (size_t)n, stdout);
      rc = n < 0 ? n : 0;
      nfs_close(nfs, fh);
    }
  } else if (strcmp(op, "stat") == 0) {
    struct nfs_stat_64 st;
    rc = nfs_stat64(nfs, a, &st);
    if (rc == 0) printf("ino=%llu size=%llu\n", (unsigned long long)st.nfs_ino, (unsigned long long)st.nfs_size);
  } else {
    fprintf(stderr, "unknown op %s\n", op);
    return 2;
  }
  printf("result=%d\n", rc);
  if (rc != 0) printf("error=%s\n", nfs_get_error(nfs));
  nfs_destroy_url(url);
  nfs_destroy_context(nfs);
  return 0;
}
