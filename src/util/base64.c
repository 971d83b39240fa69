/* Base64 (RFC 4648 sections 4 and 5). */
#include "base64.h"

static const char std_digits[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_digits[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void mcp_base64_encode(mcp_buf *out, const void *data, size_t len, int url) {
  const unsigned char *p = data;
  const char *d = url ? url_digits : std_digits;
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
    char q[4] = { d[v >> 18], d[(v >> 12) & 63], d[(v >> 6) & 63], d[v & 63] };
    mcp_buf_add(out, q, 4);
  }
  if (i < len) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0);
    mcp_buf_addc(out, d[v >> 18]);
    mcp_buf_addc(out, d[(v >> 12) & 63]);
    if (i + 1 < len) mcp_buf_addc(out, d[(v >> 6) & 63]);
    else if (!url) mcp_buf_addc(out, '=');
    if (!url) mcp_buf_addc(out, '=');
  }
}

static int digit(char c, int url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == (url ? '-' : '+')) return 62;
  if (c == (url ? '_' : '/')) return 63;
  return -1;
}

int mcp_base64_decode(mcp_buf *out, const char *text, size_t len, int url) {
  size_t start = out->len;
  unsigned acc = 0;
  int bits = 0;
  if (!url) {                                     /* padded to whole quanta */
    if (len % 4 != 0) return -1;
    for (int pad = 0; pad < 2 && len > 0 && text[len - 1] == '='; pad++) len--;
  }
  for (size_t i = 0; i < len; i++) {
    int d = digit(text[i], url);
    if (d < 0) {
      out->len = start;
      return -1;
    }
    acc = acc << 6 | (unsigned)d;
    if ((bits += 6) >= 8) {
      bits -= 8;
      mcp_buf_addc(out, (char)(acc >> bits & 0xff));
    }
  }
  /* a lone digit, or leftover bits that are not zero, is no encoding */
  if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0) {
    out->len = start;
    return -1;
  }
  return 0;
}
