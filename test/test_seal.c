/* crypto.c's SHA-256 and HMAC-SHA-256 (libcrypto's, which the server
 * uses) against the published test vectors (FIPS 180-4 examples, RFC 4231),
 * its random bytes and comparison, Base64 against RFC 4648 section 10, and
 * sealed tokens: they open to their payload, and any change, or another
 * key, makes them fail. */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "crypto.h"
#include "seal.h"
#include "test.h"

static const char *hex(const uint8_t *d, size_t n) {
  static char out[2 * 64 + 1];
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
  return out;
}

static const char *sha(const char *s, size_t n) {
  uint8_t d[MCP_SHA256_LEN];
  mcp_sha256(s, n, d);
  return hex(d, sizeof d);
}

static void test_sha256(void) {
  static char million[1000000];
  const char *abc56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(strcmp(sha("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "%s", sha("", 0));
  CHECK(strcmp(sha("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "abc");
  CHECK(strcmp(sha(abc56, strlen(abc56)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0, "448 bits");
  memset(million, 'a', sizeof million);
  CHECK(strcmp(sha(million, sizeof million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "a million a");
  /* lengths at the padding boundary (55, 56, 64 bytes; digests from Python hashlib) */
  CHECK(strcmp(sha(million, 55), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318") == 0, "55 a");
  CHECK(strcmp(sha(million, 56), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a") == 0, "56 a");
  CHECK(strcmp(sha(million, 64), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb") == 0, "64 a");
}

static void test_hmac(void) {
  uint8_t key[131], d[MCP_SHA256_LEN];
  memset(key, 0x0b, 20);
  mcp_hmac_sha256(key, 20, "Hi There", 8, d);
  CHECK(strcmp(hex(d, 32), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") == 0, "RFC 4231 case 1");
  mcp_hmac_sha256((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28, d);
  CHECK(strcmp(hex(d, 32), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0, "RFC 4231 case 2");
  memset(key, 0xaa, sizeof key);
  mcp_hmac_sha256(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, d);
  CHECK(strcmp(hex(d, 32), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0, "RFC 4231 case 6");
}

static void test_hmac_keys(void) {
  /* an empty key; and a key longer than the block is the same as its digest */
  uint8_t key[200], k[MCP_SHA256_LEN], d1[MCP_SHA256_LEN], d2[MCP_SHA256_LEN];
  mcp_hmac_sha256("", 0, "", 0, d1);
  CHECK(strcmp(hex(d1, 32), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad") == 0, "empty key");
  memset(key, 0x5a, sizeof key);
  mcp_hmac_sha256(key, sizeof key, "x", 1, d1);
  mcp_sha256(key, sizeof key, k);
  mcp_hmac_sha256(k, sizeof k, "x", 1, d2);
  CHECK(memcmp(d1, d2, sizeof d1) == 0, "long key");
}

static void test_random_equal(void) {
  uint8_t a[32], b[32], zero[32] = {0};
  CHECK(mcp_random(a, sizeof a) == 0 && mcp_random(b, sizeof b) == 0, "random");
  CHECK(memcmp(a, b, sizeof a) != 0 && memcmp(a, zero, sizeof a) != 0, "random bytes differ");
  CHECK(mcp_random(a, 0) == 0, "no bytes");
  memcpy(b, a, sizeof a);
  CHECK(mcp_equal(a, b, sizeof a), "equal");
  b[31] ^= 1;
  CHECK(!mcp_equal(a, b, sizeof a), "last byte differs");
  b[31] ^= 1, b[0] ^= 0x80;
  CHECK(!mcp_equal(a, b, sizeof a), "first byte differs");
  CHECK(mcp_equal(a, b, 0), "no bytes are equal");
}

static const char *b64(const char *s, int url) {
  static char out[64];
  mcp_buf b = MCP_BUF_INIT;
  mcp_base64_encode(&b, s, strlen(s), url);
  snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
  mcp_buf_free(&b);
  return out;
}

static const char *unb64(const char *s, int url) {
  static char out[64];
  mcp_buf b = MCP_BUF_INIT;
  if (mcp_base64_decode(&b, s, strlen(s), url) != 0) strcpy(out, "<bad>");
  else snprintf(out, sizeof out, "%.*s", (int)b.len, b.data ? b.data : "");
  mcp_buf_free(&b);
  return out;
}

static void test_base64(void) {
  static const char *const v[][2] = {
    {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    CHECK(strcmp(b64(v[i][0], 0), v[i][1]) == 0, "encode %s", v[i][0]);
    CHECK(strcmp(unb64(v[i][1], 0), v[i][0]) == 0, "decode %s", v[i][1]);
    CHECK(strcmp(unb64(b64(v[i][0], 1), 1), v[i][0]) == 0, "url round trip %s", v[i][0]);
  }
  CHECK(strcmp(b64("f", 1), "Zg") == 0, "url: no padding");
  CHECK(strcmp(b64("\xfb\xff", 1), "-_8") == 0, "url alphabet: %s", b64("\xfb\xff", 1));
  CHECK(strcmp(b64("\xfb\xff", 0), "+/8=") == 0, "standard alphabet");
  CHECK(strcmp(unb64("Zg", 0), "<bad>") == 0, "standard: padding required");
  CHECK(strcmp(unb64("Zg==", 1), "<bad>") == 0, "url: no padding");
  CHECK(strcmp(unb64("-_8", 0), "<bad>") == 0, "standard: no url digits");
  CHECK(strcmp(unb64("+/8=", 1), "<bad>") == 0, "url: no standard digits");
  CHECK(strcmp(unb64("Zm9v!", 0), "<bad>") == 0, "not a digit");
  CHECK(strcmp(unb64("Z", 1), "<bad>") == 0, "a lone digit");
  CHECK(strcmp(unb64("Zh==", 0), "<bad>") == 0, "leftover bits set");
  CHECK(strcmp(unb64("Zg=", 0), "<bad>") == 0, "padding that does not complete a quantum");
  CHECK(strcmp(unb64("Zg=v", 0), "<bad>") == 0, "padding inside");
  CHECK(strcmp(unb64("Z===", 0), "<bad>") == 0, "three pads");
}

static int opens(const char *token, char *out, size_t cap) {
  mcp_buf b = MCP_BUF_INIT;
  int r = mcp_seal_open(&b, token, strlen(token));
  if (r == 0) snprintf(out, cap, "%.*s", (int)b.len, b.data ? b.data : "");
  mcp_buf_free(&b);
  return r;
}

static void test_seal(void) {
  const char *payload = "{\"v\":1,\"a\":{\"user_name\":{\"action\":\"accept\"}}}";
  mcp_buf t = MCP_BUF_INIT;
  char out[256], *tok;
  mcp_seal(&t, payload, strlen(payload));
  mcp_buf_addc(&t, '\0');
  tok = t.data;
  CHECK(opens(tok, out, sizeof out) == 0 && strcmp(out, payload) == 0, "opens to its payload");
  CHECK(strchr(tok, '+') == NULL && strchr(tok, '/') == NULL && strchr(tok, '=') == NULL, "URL-safe: %s", tok);
  for (size_t i = 0; tok[i]; i++) {               /* every single-character change is caught */
    char was = tok[i];
    tok[i] = was == 'A' ? 'B' : 'A';
    CHECK(opens(tok, out, sizeof out) != 0, "changed at %zu", i);
    tok[i] = was;
  }
  snprintf(out, sizeof out, "%s-TAMPERED", tok);
  CHECK(opens(out, out, sizeof out) != 0, "appended to");
  CHECK(opens("", out, sizeof out) != 0, "empty");
  CHECK(opens("e30", out, sizeof out) != 0, "no mac");
  {                                               /* a token made with another key */
    uint8_t other[MCP_SHA256_LEN], mac[MCP_SHA256_LEN];
    mcp_buf f = MCP_BUF_INIT;
    memset(other, 7, sizeof other);
    mcp_hmac_sha256(other, sizeof other, payload, strlen(payload), mac);
    mcp_base64_encode(&f, payload, strlen(payload), 1);
    mcp_buf_addc(&f, '.');
    mcp_base64_encode(&f, mac, sizeof mac, 1);
    mcp_buf_addc(&f, '\0');
    CHECK(opens(f.data, out, sizeof out) != 0, "another key");
    mcp_buf_free(&f);
  }
  mcp_buf_free(&t);
}

static void test_shared_key(void) {
  /* $LUAMCP_STATE_KEY: the key is its SHA-256; a token made with it opens */
  const char *payload = "{}";
  uint8_t k[MCP_SHA256_LEN], mac[MCP_SHA256_LEN];
  mcp_buf f = MCP_BUF_INIT;
  char out[64];
  mcp_sha256("s3cret", 6, k);
  mcp_hmac_sha256(k, sizeof k, payload, 2, mac);
  mcp_base64_encode(&f, payload, 2, 1);
  mcp_buf_addc(&f, '.');
  mcp_base64_encode(&f, mac, sizeof mac, 1);
  mcp_buf_addc(&f, '\0');
  CHECK(opens(f.data, out, sizeof out) == 0 && strcmp(out, "{}") == 0, "shared key");
  mcp_buf_free(&f);
}

int main(void) {
  test_sha256();
  test_hmac();
  test_hmac_keys();
  test_random_equal();
  test_base64();
  setenv("LUAMCP_STATE_KEY", "s3cret", 1);      /* read on first use of the key */
  test_shared_key();
  test_seal();
  TEST_END("test_seal");
}
