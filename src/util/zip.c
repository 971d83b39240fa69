/* A zip writer (APPNOTE.TXT 6.3): local header and data per entry, then
 * the central directory and its end record. Sizes and the CRC-32 are known
 * before each header is written: the whole entry is in memory. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "buf.h"
#include "zip.h"

#define VERSION_NEEDED 20              /* 2.0: deflate */
#define MADE_BY ((3 << 8) | 20)        /* Unix, 2.0: the external attributes hold st_mode */
#define FLAG_UTF8 0x0800

struct mcp_zip {
  FILE *f;
  mcp_buf central;                     /* the central directory, written at the end */
  uint32_t offset;                     /* where the next local header goes */
  uint16_t count;
  uint16_t dos_time, dos_date;
  int failed;
};

static void put16(mcp_buf *b, unsigned v) {
  unsigned char p[2] = { v & 0xff, (v >> 8) & 0xff };
  mcp_buf_add(b, p, 2);
}

static void put32(mcp_buf *b, uint32_t v) {
  unsigned char p[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff };
  mcp_buf_add(b, p, 4);
}

mcp_zip *mcp_zip_open(const char *path, time_t mtime) {
  struct tm tm;
  mcp_zip *z = calloc(1, sizeof *z);
  if (z == NULL) return NULL;
  if ((z->f = fopen(path, "wb")) == NULL) {
    free(z);
    return NULL;
  }
  gmtime_r(&mtime, &tm);
  if (tm.tm_year < 80) tm = (struct tm){ .tm_year = 80, .tm_mday = 1 };   /* DOS time starts in 1980 */
  z->dos_time = (uint16_t)(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
  z->dos_date = (uint16_t)((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
  return z;
}

/* data deflated (raw, no zlib header) into *out; 0, or -1. */
static int deflate_all(const void *data, size_t len, unsigned char **out, size_t *outlen) {
  z_stream s = { 0 };
  uLong bound;
  if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
  bound = deflateBound(&s, (uLong)len);
  if ((*out = malloc(bound)) == NULL) {
    deflateEnd(&s);
    return -1;
  }
  s.next_in = (Bytef *)data;
  s.avail_in = (uInt)len;
  s.next_out = *out;
  s.avail_out = (uInt)bound;
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) {
    deflateEnd(&s);
    free(*out);
    return -1;
  }
  *outlen = s.total_out;
  deflateEnd(&s);
  return 0;
}

/* The header fields a local header and a central entry share, from "version needed". */
static void common(mcp_buf *b, const mcp_zip *z, unsigned method, uint32_t crc, size_t csize,
                   size_t len, size_t namelen) {
  put16(b, VERSION_NEEDED);
  put16(b, FLAG_UTF8);
  put16(b, method);
  put16(b, z->dos_time);
  put16(b, z->dos_date);
  put32(b, crc);
  put32(b, (uint32_t)csize);
  put32(b, (uint32_t)len);
  put16(b, (unsigned)namelen);
  put16(b, 0);                          /* extra field */
}

int mcp_zip_add(mcp_zip *z, const char *name, const void *data, size_t len, unsigned mode) {
  size_t namelen = strlen(name), csize = len;
  unsigned char *packed = NULL;
  const void *body = data;
  unsigned method = 0;                  /* stored */
  uint32_t crc;
  mcp_buf h = MCP_BUF_INIT;
  int r = 0;
  if (z->failed) return -1;
  if (len > UINT32_MAX - 1024 || namelen > UINT16_MAX || z->count == UINT16_MAX) {
    errno = EFBIG;
    return -1;
  }
  crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), data, (uInt)len);
  if (len > 0 && deflate_all(data, len, &packed, &csize) == 0 && csize < len) {
    method = 8;
    body = packed;
  } else {
    csize = len;
  }
  if ((uint64_t)z->offset + 30 + namelen + csize > UINT32_MAX) {
    free(packed);
    errno = EFBIG;
    return -1;
  }
  put32(&h, 0x04034b50);
  common(&h, z, method, crc, csize, len, namelen);
  mcp_buf_add(&h, name, namelen);
  if (fwrite(h.data, 1, h.len, z->f) != h.len || (csize > 0 && fwrite(body, 1, csize, z->f) != csize))
    r = -1, z->failed = 1;

  put32(&z->central, 0x02014b50);
  put16(&z->central, MADE_BY);
  common(&z->central, z, method, crc, csize, len, namelen);
  put16(&z->central, 0);                /* comment */
  put16(&z->central, 0);                /* disk */
  put16(&z->central, 0);                /* internal attributes */
  put32(&z->central, (uint32_t)(0100000 | (mode & 07777)) << 16);   /* S_IFREG | mode */
  put32(&z->central, z->offset);
  mcp_buf_add(&z->central, name, namelen);
  z->offset += (uint32_t)(h.len + csize);
  z->count++;
  mcp_buf_free(&h);
  free(packed);
  return r;
}

int mcp_zip_close(mcp_zip *z) {
  mcp_buf end = MCP_BUF_INIT;
  int r = z->failed ? -1 : 0;
  put32(&end, 0x06054b50);
  put16(&end, 0);                       /* this disk */
  put16(&end, 0);                       /* the central directory's disk */
  put16(&end, z->count);
  put16(&end, z->count);
  put32(&end, (uint32_t)z->central.len);
  put32(&end, z->offset);
  put16(&end, 0);                       /* comment */
  if (r == 0 && (fwrite(z->central.data, 1, z->central.len, z->f) != z->central.len ||
                 fwrite(end.data, 1, end.len, z->f) != end.len))
    r = -1;
  if (fclose(z->f) != 0) r = -1;
  mcp_buf_free(&end);
  mcp_buf_free(&z->central);
  free(z);
  return r;
}
