/* Outbound allow lists: entries parsed, hosts and ports matched, and the
 * addresses that only an entry naming them may reach (loopback, private,
 * link-local with cloud metadata, unique local, v4-mapped v6); hosts by
 * name alone, as before they are resolved. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "allow.h"
#include "test.h"

static struct sockaddr_storage addr(const char *ip) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  if (strchr(ip, ':')) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &a->sin6_addr);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a->sin_addr);
  }
  return ss;
}

static int special(const char *ip) {
  struct sockaddr_storage ss = addr(ip);
  return mcp_allow_special((struct sockaddr *)&ss);
}

static int by_name(const mcp_allow *a, const char *host, int port) {
  char why[320];
  return mcp_allow_check(a, host, port, NULL, why, sizeof why);
}

static int target_is(const char *host, int port, const char *want) {
  char out[300];
  return mcp_allow_target(host, port, out, sizeof out) == 0 && strcmp(out, want) == 0;
}

static int check(const mcp_allow *a, const char *host, int port, const char *ip) {
  struct sockaddr_storage ss = addr(ip);
  char why[320];
  return mcp_allow_check(a, host, port, (struct sockaddr *)&ss, why, sizeof why);
}

int main(void) {
  const char *specials[] = { "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255",
                             "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
                             "::1", "::", "fe80::1", "fc00::1", "fd12::1", "ff02::1", "::ffff:127.0.0.1",
                             "::ffff:169.254.169.254" };
  const char *publics[] = { "93.184.216.34", "172.32.0.1", "192.169.0.1", "100.128.0.1", "8.8.8.8",
                            "2606:4700::1", "::ffff:8.8.8.8" };
  mcp_allow *a = mcp_allow_new();
  for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) CHECK(special(specials[i]), "%s", specials[i]);
  for (size_t i = 0; i < sizeof publics / sizeof *publics; i++) CHECK(!special(publics[i]), "%s", publics[i]);

  CHECK(mcp_allow_add(a, "API.example.com") == 0, "a name");
  CHECK(mcp_allow_add(a, "files.example.com:8443") == 0, "a name and a port");
  CHECK(mcp_allow_add(a, "10.1.2.3") == 0, "a private literal");
  CHECK(mcp_allow_add(a, "[::1]:9000") == 0, "a v6 literal and a port");
  CHECK(mcp_allow_add(a, "localhost:8080") == 0, "localhost");
  CHECK(mcp_allow_add(a, "") != 0 && mcp_allow_add(a, ":80") != 0 && mcp_allow_add(a, "h:0") != 0 &&
        mcp_allow_add(a, "h:x") != 0 && mcp_allow_add(a, "[::1") != 0 && mcp_allow_add(a, "h:") != 0,
        "malformed entries");

  CHECK(check(a, "api.example.com", 443, "93.184.216.34"), "any port, case-insensitive");
  CHECK(!check(a, "api.example.com", 443, "169.254.169.254"), "a name resolving to metadata");
  CHECK(!check(a, "api.example.com", 443, "127.0.0.1"), "a name resolving to loopback");
  CHECK(check(a, "files.example.com", 8443, "93.184.216.35"), "its port");
  CHECK(!check(a, "files.example.com", 443, "93.184.216.35"), "another port");
  CHECK(!check(a, "evil.example.com", 443, "93.184.216.36"), "another host");
  CHECK(check(a, "10.1.2.3", 80, "10.1.2.3"), "a private address named by its entry");
  CHECK(check(a, "::1", 9000, "::1"), "v6 loopback named by its entry");
  CHECK(check(a, "localhost", 8080, "127.0.0.1") && check(a, "localhost", 8080, "::1"), "localhost");
  CHECK(!check(a, "localhost", 8080, "10.0.0.1"), "localhost resolving elsewhere");

  /* by name alone, before anything is resolved */
  CHECK(by_name(a, "api.example.com", 443) && by_name(a, "API.Example.COM", 80), "a name, any case");
  CHECK(by_name(a, "api.example.com.", 443), "a trailing dot");
  CHECK(by_name(a, "[::1]", 9000) && by_name(a, "0:0::1", 9000) && by_name(a, "[0000::0001]", 9000),
        "a v6 literal in brackets and in any spelling");
  CHECK(!by_name(a, "::2", 9000) && !by_name(a, "::1", 9001), "another v6 address or port");
  CHECK(by_name(a, "10.1.2.3", 80) && !by_name(a, "10.1.2.4", 80), "a v4 literal");
  CHECK(!by_name(a, "files.example.com", 443), "a name on a port not listed");
  CHECK(!by_name(a, "data.example.com", 443) && !by_name(a, "example.com", 443) &&
        !by_name(a, "api.example.com.evil", 443) && !by_name(a, "", 443) && !by_name(a, ".", 443),
        "names not listed");
  CHECK(check(a, "API.example.com.", 443, "93.184.216.34"), "a trailing dot, resolved");
  CHECK(mcp_allow_add(a, "Trailing.Example.:8080") == 0 && by_name(a, "trailing.example", 8080), "an entry's trailing dot");
  CHECK(mcp_allow_add(a, "[0::2]:1") == 0 && by_name(a, "::2", 1) && check(a, "::2", 1, "::2"),
        "an entry's v6 literal in another spelling");
  CHECK(target_is("API.example.com.", 443, "api.example.com:443") && target_is("[::1]", 80, "[::1]:80") &&
        target_is("0:0::1", 8080, "[::1]:8080") && target_is("10.1.2.3", 80, "10.1.2.3:80"),
        "the entry that would allow a target");

  mcp_allow_clear(a);
  CHECK(!check(a, "api.example.com", 443, "93.184.216.34"), "an empty list allows nothing");
  CHECK(!by_name(a, "api.example.com", 443), "an empty list allows nothing by name");
  mcp_allow_free(a);
  TEST_END("test_allow");
}
