/* luamcp: command line, configuration, start and orderly shutdown. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>
#include <uv.h>

#include "buf.h"
#include "cli.h"
#include "conffile.h"
#include "config.h"
#include "lmcp.h"
#include "log.h"
#include "metrics.h"
#include "probe.h"
#include "sched.h"
#include "stats.h"
#include "rev2026.h"
#include "stdio_transport.h"
#include "store.h"
#include "task.h"
#include "transport_http.h"
#include "auth.h"
#include "watch.h"
#include "httpc.h"
#include "op.h"
#include "proc.h"

static const char usage[] =
  "usage: luamcp [--config FILE] [--plugins DIR]... [--timeout SECONDS] [--grace SECONDS]\n"
  "              [--log-level LEVEL] [--max-line BYTES] [--memory-limit MB]\n"
  "              [--page-size N] [--state-ttl SECONDS] [--http-allow HOST[:PORT]]...\n"
  "              [--http HOST:PORT [--allow-origin ORIGIN]...\n"
  "              [--token TOKEN] [--max-body BYTES] [--max-connections N] [--max-sessions N]\n"
  "              [--idle-timeout SECONDS] [--drain SECONDS]\n"
  "              [--auth-audience URL (--auth-issuer URL | --auth-jwks FILE|URL)\n"
  "               [--auth-introspect URL]]] [--metrics HOST:PORT]\n"
  "              [--store redis://HOST:PORT/DB]\n"
  "              [--access-log FILE] [--log-format text|json] [--watch] [--version] [--help]\n"
  "       luamcp list|call|check|new|path ...   (see luamcp list --help)\n"
  "\n"
  "Serves the Lua plugins in each DIR (default ./plugins) over MCP on stdio,\n"
  "or on Streamable HTTP at http://HOST:PORT/mcp.\n"
  "  --config FILE        read flags and plugins' settings from FILE, a Lua file\n"
  "                       returning a table (see luamcp(1)); a flag given here wins\n"
  "  --plugins DIR        load DIR/*.lua as plugins; DIR/lib/?.lua is on package.path\n"
  "  --timeout SECONDS    default tool timeout (60; 0 = none)\n"
  "  --grace SECONDS      default grace before a cancelled handler is aborted (2)\n"
  "  --log-level LEVEL    stderr threshold: debug info notice warning error ... (info)\n"
  "  --max-line BYTES     largest stdio message (4194304)\n"
  "  --memory-limit MB    Lua memory limit (256; 0 = none)\n"
  "  --page-size N        items per list page (50)\n"
  "  --state-ttl SECONDS  how long an input-required result's requestState is\n"
  "                       accepted back (3600; 2026-07-28 clients)\n"
  "  --http-allow H[:P]   handlers' HTTP requests (ctx:http) may reach only these\n"
  "                       hosts; a name resolving to a loopback, private or\n"
  "                       link-local address is refused unless named as such\n"
  "  --http HOST:PORT     serve Streamable HTTP instead of stdio (port 0: any)\n"
  "  --allow-origin O     also accept this Origin (localhost origins always are)\n"
  "  --token TOKEN        require Authorization: Bearer TOKEN (or $LUAMCP_TOKEN)\n"
  "  --auth-audience URL  OAuth: this server's canonical URI (e.g. https://host/mcp);\n"
  "                       tokens must be issued for it (RFC 8707)\n"
  "  --auth-issuer URL    OAuth: the authorization server; its metadata gives the\n"
  "                       keys JWT access tokens are verified with\n"
  "  --auth-jwks FILE|URL OAuth: the keys, without discovery\n"
  "  --auth-introspect URL OAuth: introspect tokens that are not JWTs (RFC 7662;\n"
  "                       client credentials from $LUAMCP_AUTH_CLIENT=id:secret)\n"
  "  --max-body BYTES     largest POST body (4194304)\n"
  "  --max-connections N  concurrent connections (256)\n"
  "  --max-sessions N     open HTTP sessions (1024)\n"
  "  --idle-timeout SEC   close idle keep-alive connections (60)\n"
  "  --drain SECONDS      on SIGTERM (HTTP), refuse new requests and let calls\n"
  "                       finish this long, then cancel the rest (10; 0 = none)\n"
  "  --metrics HOST:PORT  serve /metrics, /healthz, /readyz on a listener of their\n"
  "                       own, unauthenticated (with --http they are on it too)\n"
  "  --store URL          keep tasks in Redis (redis://HOST:PORT/DB), shared by the\n"
  "                       instances behind one load balancer (see luamcp(1))\n"
  "  --access-log FILE    one JSON line per finished request (- for stderr)\n"
  "  --log-format FMT     the stderr log: text (default) or json, a JSON object a line\n"
  "  --watch              reload plugins when their files (or --config FILE) change\n"
  "  --test-clock         let clients move the clock (notifications/luamcp/advance):\n"
  "                       for plugin tests only\n";

static int l_panic(lua_State *L) {
  mcp_log(MCP_LOG_CRITICAL, "Lua panic: %s", lua_tostring(L, -1));
  return 0;
}

static uv_loop_t *loop;
static lua_State *L;
static uv_signal_t sigterm, sigint;
static uv_timer_t drain_timer;        /* --drain: its end */
static int shutting_down, draining;
static mcp_auth_options auth_opt;
static mcp_http_options http_opt = {
  .max_body = 4u << 20, .max_connections = 256, .max_sessions = 1024, .idle_ms = 60000
};
static int use_http, use_watch;
static const char *config_path;       /* --config */
static const char *store_url;         /* --store */
static mcp_conffile conf;             /* what it sets */
static const char **dirs, **allow;    /* --plugins, --allow-origin */
static int ndirs, nallow;

static void closed(void) {
  if (use_watch) mcp_watch_close();
  mcp_ops_shutdown();            /* what the shutdown started (a client's notifications/cancelled) */
  mcp_httpc_close();
  /* The signal watchers stay until the process exits (see count_open). */
  uv_unref((uv_handle_t *)&sigterm);
  uv_unref((uv_handle_t *)&sigint);
  uv_close((uv_handle_t *)&drain_timer, NULL);
  http_close(NULL);              /* the --metrics listener (stdio); none is left over HTTP */
  mcp_task_close();
  mcp_store_close();             /* after the tasks' last writes */
  mcp_sched_close();
}

/* Runs once: either when the last call ends, or at once when none is live. */
static void shutdown_finish(void) {
  static int done;
  if (done) return;
  done = 1;
  mcp_sched_idle_cb = NULL;
  if (!use_http) mcp_stdio_close(closed);
}

static void shutdown_begin(const char *why) {
  if (shutting_down) return;
  shutting_down = 1;
  mcp_sched_idle_cb = NULL;
  uv_timer_stop(&drain_timer);
  mcp_probe_set_ready(0);
  mcp_info("shutting down: %s", why);
  mcp_rev2026_listen_close_all("shutdown");   /* subscriptions/listen end gracefully */
  mcp_ops_shutdown();                          /* plugin-level I/O (shared clients' streams) */
  if (use_http) {
    mcp_http_shutdown(closed);     /* ends every session, then every connection */
    mcp_proc_close_all();          /* upstream children: the loop runs until they are reaped */
    return;
  }
  mcp_stdio_stop_reading();
  mcp_sched_idle_cb = shutdown_finish;
  mcp_sched_close_all(NULL, NULL, "shutdown");
  mcp_proc_close_all();
  if (mcp_sched_live() == 0) shutdown_finish();
}

static void on_eof(void) { shutdown_begin("end of input"); }

/* Stopping the last watcher of a signal gives the signal its default action
 * back, which kills. A supervisor sends SIGTERM more than once (`timeout`
 * sends it to the process, then to its group), so one can come after the
 * shutdown is done, even after main has freed everything: the two watchers
 * are never stopped (only unreferenced, so the loop can end), and a late
 * signal lands in libuv's pipe, unread, instead of turning exit status 0
 * into death by SIGTERM. Every other handle must be closed by now. */
static void count_open(uv_handle_t *h, void *arg) {
  if (h != (uv_handle_t *)&sigterm && h != (uv_handle_t *)&sigint && !uv_is_closing(h)) (*(int *)arg)++;
}

/* Draining (SIGTERM over HTTP, --drain): no new connections or requests,
 * /readyz says 503; the calls running have until the timer to finish,
 * then shutdown cancels the rest (reason "shutdown"). */
static void drain_over(uv_timer_t *t) {
  (void)t;
  shutdown_begin(mcp_sched_live() == 0 ? "drained" : "drain time over");
}

static void drain_idle(void) {
  uv_timer_start(&drain_timer, drain_over, 0, 0);   /* next turn: not under the last call's end */
}

static void drain_begin(void) {
  draining = 1;
  mcp_info("SIGTERM: draining: no new requests; %d calls have %g s to finish", mcp_sched_live(),
           mcp_cfg.drain);
  mcp_probe_set_ready(0);
  mcp_http_drain();
  uv_timer_start(&drain_timer, drain_over, (uint64_t)(mcp_cfg.drain * 1000), 0);
  mcp_sched_idle_cb = drain_idle;
  if (mcp_sched_live() == 0) drain_idle();
}

static void on_signal(uv_signal_t *h, int signum) {
  (void)h;
  if (signum == SIGTERM && use_http && mcp_cfg.drain > 0 && !draining && !shutting_down) drain_begin();
  else shutdown_begin(signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static int fail_usage(const char *fmt, const char *arg) {
  return mcp_usage_error(usage, fmt, arg);
}

static int takes_value(const char *a) {
  static const char *const with_value[] = {
    "--config", "--plugins", "--timeout", "--grace", "--log-level", "--max-line", "--memory-limit",
    "--page-size", "--http", "--state-ttl", "--http-allow", "--allow-origin", "--token", "--max-body",
    "--max-connections", "--idle-timeout", "--max-sessions", "--access-log", "--log-format", "--drain",
    "--metrics", "--auth-issuer", "--auth-jwks", "--auth-audience", "--auth-introspect", "--store", NULL
  };
  for (int i = 0; with_value[i] != NULL; i++)
    if (strcmp(a, with_value[i]) == 0) return 1;
  return 0;
}

/* Is flag on the command line? Then it wins over the configuration file
 * (a repeated flag's values replace the file's). */
static int on_command_line(int argc, char **argv, const char *flag) {
  for (int i = 1; i < argc; i += 1 + takes_value(argv[i]))
    if (strcmp(argv[i], flag) == 0) return 1;
  return 0;
}

/* A bad value: on the command line, said with the usage; from the
 * configuration file, at its key's line and without the value, which may
 * be a secret. Returns the exit status. */
static int bad_value(const char *flag, const char *v, const char *where, const char *want) {
  char what[300];
  if (where != NULL) return mcp_conffile_bad(where, flag, want);
  snprintf(what, sizeof what, "bad %s%s: %.200s", flag, want, v);
  return fail_usage("%s", what);
}

/* One flag, from the command line (where NULL) or the configuration file
 * (where "FILE:LINE"). 0, or the exit status. */
static int apply(const char *a, const char *v, const char *where) {
  double d;
  int r;
  if (strcmp(a, "--plugins") == 0) {
    dirs[ndirs++] = v;
  } else if ((r = mcp_config_option(a, v)) != 0) {
    if (r < 0) return bad_value(a, v, where, "");
  } else if ((r = mcp_config_server_option(a, v)) != 0) {
    if (r < 0)
      return bad_value(a, v, where, strcmp(a, "--metrics") == 0 ? " (want HOST:PORT)"
                                    : strcmp(a, "--log-format") == 0 ? " (want text or json)" : "");
  } else if (strcmp(a, "--log-level") == 0) {
    int lv = mcp_log_level_parse(v);
    if (lv < 0) return bad_value(a, v, where, "");
    mcp_log_threshold = (mcp_log_level)lv;
  } else if (strcmp(a, "--http") == 0) {
    static char host[256];
    const char *colon = strrchr(v, ':');
    if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof host || !mcp_parse_number(colon + 1, &d) ||
        d > 65535)
      return bad_value(a, v, where, " (want HOST:PORT)");
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = '\0';
    if (host[0] == '[') {                 /* [::1]:8080 */
      memmove(host, host + 1, strlen(host));
      host[strcspn(host, "]")] = '\0';
    }
    http_opt.host = host;
    http_opt.port = (int)d;
    use_http = 1;
  } else if (strcmp(a, "--allow-origin") == 0) {
    allow[nallow++] = v;
  } else if (strcmp(a, "--token") == 0) {
    http_opt.token = v;
  } else if (strcmp(a, "--auth-issuer") == 0) {
    auth_opt.issuer = v;
  } else if (strcmp(a, "--auth-jwks") == 0) {
    auth_opt.jwks = v;
  } else if (strcmp(a, "--auth-audience") == 0) {
    auth_opt.audience = v;
  } else if (strcmp(a, "--auth-introspect") == 0) {
    auth_opt.introspect = v;
  } else if (strcmp(a, "--max-body") == 0) {
    if (!mcp_parse_number(v, &d) || d < 1024) return bad_value(a, v, where, "");
    http_opt.max_body = (size_t)d;
  } else if (strcmp(a, "--max-connections") == 0) {
    if (!mcp_parse_number(v, &d) || d < 1) return bad_value(a, v, where, "");
    http_opt.max_connections = (int)d;
  } else if (strcmp(a, "--max-sessions") == 0) {
    if (!mcp_parse_number(v, &d) || d < 1) return bad_value(a, v, where, "");
    http_opt.max_sessions = (int)d;
  } else if (strcmp(a, "--idle-timeout") == 0) {
    if (!mcp_parse_number(v, &d) || d <= 0) return bad_value(a, v, where, "");
    http_opt.idle_ms = (unsigned)(d * 1000);
  } else if (strcmp(a, "--store") == 0) {
    if (strncmp(v, "redis://", 8) != 0) return bad_value(a, v, where, " (want redis://HOST:PORT/DB)");
    store_url = v;
  } else if (strcmp(a, "--watch") == 0) {
    use_watch = 1;
  } else if (strcmp(a, "--test-clock") == 0) {
    mcp_cfg.test_clock = 1;
  } else if (strcmp(a, "--config") != 0) {  /* --config was read first */
    return fail_usage("unknown option: %s", a);
  }
  return 0;
}

/* The flags: --help, --version and --config first; then the configuration
 * file's, then the command line's. 0, or the exit status. */
static int parse_flags(int argc, char **argv) {
  int r;
  for (int i = 1; i < argc; i += 1 + takes_value(argv[i])) {
    const char *a = argv[i];
    if (takes_value(a) && i + 1 >= argc) return fail_usage("%s needs a value", a);
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      return -1;
    } else if (strcmp(a, "--version") == 0) {
      printf("luamcp %s\n", LUAMCP_VERSION);
      return -1;
    } else if (strcmp(a, "--config") == 0) {
      config_path = argv[i + 1];
    }
  }
  if (config_path != NULL && (r = mcp_conffile_read(config_path, &conf)) != 0) return r;
  if ((dirs = calloc((size_t)(argc + conf.n + 1), sizeof *dirs)) == NULL ||
      (allow = calloc((size_t)(argc + conf.n + 1), sizeof *allow)) == NULL)
    abort();
  for (int i = 0; i < conf.n; i++) {
    const mcp_conffile_opt *o = &conf.opt[i];
    if (!on_command_line(argc, argv, o->flag) && (r = apply(o->flag, o->value, o->where)) != 0) return r;
  }
  for (int i = 1; i < argc; i += 1 + takes_value(argv[i]))
    if ((r = apply(argv[i], i + 1 < argc ? argv[i + 1] : NULL, NULL)) != 0) return r;
  return 0;
}

/* stack: -> server module */
static int load_server(lua_State *Ls) {
  mcp_lua_open(Ls);
  lua_getglobal(Ls, "require");
  lua_pushliteral(Ls, "mcp.server");
  lua_call(Ls, 1, 1);                          /* stack: server */
  lua_pushboolean(Ls, use_watch);
  lua_setfield(Ls, -2, "watching");
  lua_pushstring(Ls, config_path);             /* nil without --config */
  lua_setfield(Ls, -2, "config_file");
  lua_getfield(Ls, -1, "load");
  lua_createtable(Ls, ndirs, 0);
  for (int i = 0; i < ndirs; i++) {
    lua_pushstring(Ls, dirs[i]);
    lua_rawseti(Ls, -2, i + 1);
  }
  lua_call(Ls, 1, 0);                          /* server.load{dirs} */
  return 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "list") == 0 || strcmp(argv[1], "call") == 0 ||
                   strcmp(argv[1], "check") == 0 || strcmp(argv[1], "new") == 0 ||
                   strcmp(argv[1], "path") == 0))
    return mcp_cli_main(argc, argv);            /* the plugin author's commands: cli.c */
  int status = 0, r, open = 0;
  if ((r = parse_flags(argc, argv)) != 0) return r < 0 ? 0 : r;
  if (ndirs == 0) dirs[ndirs++] = "plugins";
  allow[nallow] = NULL;
  http_opt.allow_origins = allow;
  http_opt.nallow_origins = nallow;
  if (http_opt.token == NULL) http_opt.token = getenv("LUAMCP_TOKEN");
  if (http_opt.token != NULL && http_opt.token[0] == '\0') http_opt.token = NULL;
  if (mcp_auth_wanted(&auth_opt)) {
    if (!use_http) return fail_usage("%s", "--auth-* options need --http");
    if (http_opt.token != NULL) return fail_usage("%s", "--token and --auth-* options exclude each other");
    auth_opt.introspect_client = getenv("LUAMCP_AUTH_CLIENT");
    http_opt.auth = 1;
  }

  signal(SIGPIPE, SIG_IGN);
  loop = uv_default_loop();
  L = lua_newstate(mcp_sched_alloc, NULL);
  if (L == NULL) return 1;
  lua_atpanic(L, l_panic);
  *(void **)lua_getextraspace(L) = NULL;   /* new threads copy it: no call */

  lua_pushcfunction(L, load_server);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    mcp_log(MCP_LOG_CRITICAL, "cannot start: %s", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  mcp_sched_init(loop, L, luaL_ref(L, LUA_REGISTRYINDEX));
  if (http_opt.auth) {
    char why[300];
    if (mcp_auth_start(loop, &auth_opt, why, sizeof why) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "cannot start: %s", why);
      mcp_auth_close();
      lua_close(L);
      return 1;
    }
  }
  if (use_watch && (mcp_watch_start(loop, dirs, ndirs, 100, mcp_sched_rescan) != 0 ||
                    (config_path != NULL && mcp_watch_file(loop, config_path) != 0))) {
    lua_close(L);
    return 1;
  }
  if (mcp_cfg.access_log != NULL && mcp_stats_access_log(mcp_cfg.access_log) != 0) {
    mcp_log(MCP_LOG_CRITICAL, "cannot open the access log %s: %s", mcp_cfg.access_log, strerror(errno));
    lua_close(L);
    return 1;
  }
  if (store_url != NULL) {
    char err[300];
    if (mcp_task_store_open(store_url, err, sizeof err) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "--store %s: %s", store_url, err);
      lua_close(L);
      return 2;
    }
  }
  uv_signal_init(loop, &sigterm);
  uv_signal_init(loop, &sigint);
  uv_timer_init(loop, &drain_timer);
  uv_signal_start(&sigterm, on_signal, SIGTERM);
  uv_signal_start(&sigint, on_signal, SIGINT);
  if (use_http) {
    if ((r = mcp_http_start(loop, &http_opt)) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "cannot listen on %s:%d: %s", http_opt.host, http_opt.port,
              uv_strerror(r));
      status = 1;
      shutdown_begin("listen failed");
    } else {
      mcp_info("listening on http://%s%s%s:%d/mcp (luamcp %s)", strchr(http_opt.host, ':') ? "[" : "",
               http_opt.host, strchr(http_opt.host, ':') ? "]" : "", mcp_http_port(), LUAMCP_VERSION);
    }
  } else if (mcp_stdio_start(loop, on_eof) != 0) {
    status = 1;
    shutdown_begin("stdio failed");
  } else {
    mcp_info("serving on stdio (luamcp %s, Lua memory limit %zu MB)", LUAMCP_VERSION,
             mcp_cfg.memory_limit >> 20);
  }
  if (status == 0 && mcp_cfg.metrics_port >= 0) {
    if ((r = mcp_probe_listen(loop, mcp_cfg.metrics_host, mcp_cfg.metrics_port)) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "cannot listen on %s:%d for --metrics: %s", mcp_cfg.metrics_host,
              mcp_cfg.metrics_port, uv_strerror(r));
      status = 1;
      shutdown_begin("listen failed");
    } else {
      mcp_info("metrics on http://%s%s%s:%d/metrics", strchr(mcp_cfg.metrics_host, ':') ? "[" : "",
               mcp_cfg.metrics_host, strchr(mcp_cfg.metrics_host, ':') ? "]" : "", mcp_probe_port());
    }
  }
  if (status == 0) mcp_probe_set_ready(1);   /* the plugins are loaded */
  uv_run(loop, UV_RUN_DEFAULT);

  if (!use_http) mcp_stdio_free();
  mcp_auth_close();
  lua_close(L);
  mcp_policy_clear();
  mcp_stats_close();
  mcp_metrics_close();
  mcp_scratch_free();
  uv_walk(loop, count_open, &open);
  if (open > 0) mcp_warn("event loop ended with %d handles still open", open);
  mcp_conffile_free(&conf);
  free(dirs);
  free(allow);
  return status;
}
