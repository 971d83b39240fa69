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
#include "cli_registry.h"
#include "conffile.h"
#include "console.h"
#include "config.h"
#include "flags.h"
#include "lmcp.h"
#include "log.h"
#include "metrics.h"
#include "probe.h"
#include "sched.h"
#include "semconv.h"
#include "stats.h"
#include "rev2026.h"
#include "stdio_transport.h"
#include "server_card.h"
#include "slab.h"
#include "store.h"
#include "task.h"
#include "transport_http.h"
#include "auth.h"
#include "watch.h"
#include "httpc.h"
#include "op.h"
#include "proc.h"

/* The usage's lines after the synopsis; the flags' lines come from their table (flags.c). */
static const char usage_head[] =
  "       luamcp list|call|check|new|path|pack|install|uninstall ...   (see luamcp list --help)\n"
  "       luamcp registry ...                   server.json for the MCP registry (see luamcp registry --help)\n"
  "\n"
  "Serves the Lua plugins in each DIR (default ./plugins) over MCP on stdio,\n"
  "or on Streamable HTTP at http://HOST:PORT/mcp.\n";
static const char *usage;

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
static mcp_http_options http_opt;
static int use_http, use_watch;
static const char *config_path;       /* --config */
static const char *store_url;         /* --store */
static mcp_conffile conf;             /* what it sets */
static const char **dirs;             /* --plugins */
static int ndirs;
static const char **watched;          /* --plugins and --sandbox dirs: hot reload's */
static int nwatched;

static void closed_last(void) {
  mcp_otel_close();              /* after the last call's span, before the names its spans borrow go */
  mcp_sched_close();
}

static void closed(void) {
  if (use_watch) mcp_watch_close();
  mcp_ops_shutdown();            /* what the shutdown started (a client's notifications/cancelled) */
  mcp_httpc_close();
  /* The signal watchers stay until the process exits (see count_open). */
  uv_unref((uv_handle_t *)&sigterm);
  uv_unref((uv_handle_t *)&sigint);
  uv_close((uv_handle_t *)&drain_timer, NULL);
  mcp_http_close(NULL);              /* the --metrics listener (stdio); none is left over HTTP */
  mcp_console_close();
  mcp_task_close();
  mcp_store_close();             /* after the tasks' last writes */
  mcp_otel_flush(closed_last);   /* the export in flight answered first */
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

/* The flags: --help, --version and --config first; then the configuration
 * file's, then the command line's. 0, -1 (exit 0), or the exit status. */
static int parse_flags(int argc, char **argv) {
  const mcp_flag *f;
  int r, no;
  usage = mcp_flags_usage(MCP_FLAG_SERVER, usage_head);
  for (int i = 1; i < argc; i += 1 + mcp_flag_takes_value(argv[i])) {
    const char *a = argv[i];
    if ((f = mcp_flag_find(a, &no)) == NULL || !(f->flags & MCP_FLAG_SERVER)) continue;
    if (mcp_flag_takes_value(a) && i + 1 >= argc) return fail_usage("%s needs a value", a);
    if (strcmp(f->name, "help") == 0) {
      fputs(usage, stdout);
      return -1;
    } else if (strcmp(f->name, "version") == 0) {
      printf("luamcp %s\n", LUAMCP_VERSION);
      return -1;
    } else if (strcmp(f->name, "config") == 0) {
      config_path = argv[i + 1];
    }
  }
  if (config_path != NULL && (r = mcp_conffile_read(config_path, luaopen_mcp_flags, &conf)) != 0) return r;
  if ((r = mcp_flags_apply_file(&conf, MCP_FLAG_SERVER | MCP_FLAG_FILE, argc, argv, 1)) != 0) return r;
  for (int i = 1; i < argc; i += 1 + mcp_flag_takes_value(argv[i])) {
    if ((f = mcp_flag_find(argv[i], &no)) == NULL || !(f->flags & MCP_FLAG_SERVER))
      return fail_usage("unknown option: %s", argv[i]);
    if ((r = mcp_flag_apply(f, no, i + 1 < argc ? argv[i + 1] : NULL, NULL, usage)) != 0) return r;
  }
  return 0;
}

/* What the flags set, where the server's parts read it. */
static void take_flags(void) {
  static const char *default_dirs[] = { "plugins", NULL }, *no_origins[] = { NULL };
  mcp_log_threshold = mcp_log_plugin_threshold = (mcp_log_level)mcp_flags.log_level;
  dirs = mcp_flags.plugins.n > 0 ? mcp_flags.plugins.v : default_dirs;
  ndirs = mcp_flags.plugins.n > 0 || mcp_flags.sandbox.n == 0 ? (mcp_flags.plugins.n > 0 ? mcp_flags.plugins.n : 1) : 0;
  watched = malloc((size_t)(ndirs + mcp_flags.sandbox.n + 1) * sizeof *watched);
  if (watched == NULL) abort();
  for (int i = 0; i < ndirs; i++) watched[nwatched++] = dirs[i];
  for (int i = 0; i < mcp_flags.sandbox.n; i++) watched[nwatched++] = mcp_flags.sandbox.v[i];
  watched[nwatched] = NULL;
  use_watch = mcp_flags.watch;
  store_url = mcp_flags.store;
  use_http = mcp_flags.http.port >= 0;
  http_opt.host = mcp_flags.http.host;
  http_opt.port = mcp_flags.http.port;
  http_opt.allow_origins = mcp_flags.origins.n > 0 ? mcp_flags.origins.v : no_origins;
  http_opt.nallow_origins = mcp_flags.origins.n;
  http_opt.token = mcp_flags.token;
  http_opt.max_body = mcp_flags.max_body;
  http_opt.max_connections = mcp_flags.max_connections;
  http_opt.max_sessions = mcp_flags.max_sessions;
  http_opt.idle_ms = (unsigned)(mcp_flags.idle_timeout * 1000);
  auth_opt.issuer = mcp_flags.auth_issuer;
  auth_opt.jwks = mcp_flags.auth_jwks;
  auth_opt.audience = mcp_flags.auth_audience;
  auth_opt.introspect = mcp_flags.auth_introspect;
}

/* stack: -> server module */
static int load_server(lua_State *Ls) {
  mcp_lua_open(Ls);
  luaL_requiref(Ls, "mcp.flags", luaopen_mcp_flags, 0);   /* the configuration file's keys */
  lua_pop(Ls, 1);
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
  lua_createtable(Ls, mcp_flags.sandbox.n, 0);
  for (int i = 0; i < mcp_flags.sandbox.n; i++) {
    lua_pushstring(Ls, mcp_flags.sandbox.v[i]);
    lua_rawseti(Ls, -2, i + 1);
  }
  lua_setfield(Ls, -2, "sandbox");
  lua_call(Ls, 1, 0);                          /* server.load{dirs..., sandbox = {dirs...}} */
  return 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "list") == 0 || strcmp(argv[1], "call") == 0 ||
                   strcmp(argv[1], "check") == 0 || strcmp(argv[1], "new") == 0 ||
                   strcmp(argv[1], "path") == 0 || strcmp(argv[1], "pack") == 0 ||
                   strcmp(argv[1], "install") == 0 || strcmp(argv[1], "uninstall") == 0))
    return mcp_cli_main(argc, argv);            /* the plugin author's commands: cli.c */
  if (argc > 1 && strcmp(argv[1], "registry") == 0)
    return mcp_cli_registry_main(argc, argv);   /* server.json for the MCP registry: cli_registry.c */
  int status = 0, r, open = 0;
  mcp_flags_defaults();
  if ((r = parse_flags(argc, argv)) != 0) {
    mcp_conffile_free(&conf);
    mcp_flags_free();
    return r < 0 ? 0 : r;
  }
  take_flags();
  if (http_opt.token == NULL) http_opt.token = getenv("LUAMCP_TOKEN");
  if (http_opt.token != NULL && http_opt.token[0] == '\0') http_opt.token = NULL;
  if (mcp_auth_wanted(&auth_opt)) {
    if (!use_http) return fail_usage("%s", "--auth-* options need --http");
    if (http_opt.token != NULL) return fail_usage("%s", "--token and --auth-* options exclude each other");
    auth_opt.introspect_client = getenv("LUAMCP_AUTH_CLIENT");
    http_opt.auth = 1;
  }

  if (mcp_flags.console) {
    char why[300];
    if (!use_http) return fail_usage("%s", "--console needs --http");
    if (mcp_console_init(&http_opt, mcp_flags.console_scope, why, sizeof why) != 0)
      return fail_usage("%s", why);
  }

  signal(SIGPIPE, SIG_IGN);
  loop = uv_default_loop();
  L = lua_newstate(mcp_sched_alloc, NULL);
  if (L == NULL) return 1;
  lua_atpanic(L, l_panic);
  *(void **)lua_getextraspace(L) = NULL;   /* new threads copy it: no call */

  if (!use_http && mcp_stdio_set_aside() != 0) {   /* stdout is the protocol's from the first plugin on */
    lua_close(L);
    return 1;
  }
  lua_pushcfunction(L, load_server);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    mcp_log(MCP_LOG_CRITICAL, "cannot start: %s", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  mcp_sched_init(loop, L, luaL_ref(L, LUA_REGISTRYINDEX));
  if (mcp_otel_init(loop, &mcp_flags.otel) != 0) {
    lua_close(L);
    return 2;
  }
  if (http_opt.auth) {
    char why[300];
    if (mcp_auth_start(loop, &auth_opt, why, sizeof why) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "cannot start: %s", why);
      mcp_auth_close();
      lua_close(L);
      return 1;
    }
  }
  if (use_watch && (mcp_watch_start(loop, watched, nwatched, 100, mcp_sched_rescan) != 0 ||
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
      if (mcp_flags.console) mcp_console_announce(http_opt.host, mcp_http_port());
    }
  } else if (mcp_stdio_start(loop, on_eof) != 0) {
    status = 1;
    shutdown_begin("stdio failed");
  } else {
    mcp_info("serving on stdio (luamcp %s, Lua memory limit %zu MB)", LUAMCP_VERSION,
             mcp_cfg.memory_limit >> 20);
  }
  if (status == 0 && mcp_cfg.metrics.port >= 0) {
    if ((r = mcp_probe_listen(loop, mcp_cfg.metrics.host, mcp_cfg.metrics.port)) != 0) {
      mcp_log(MCP_LOG_CRITICAL, "cannot listen on %s:%d for --metrics: %s", mcp_cfg.metrics.host,
              mcp_cfg.metrics.port, uv_strerror(r));
      status = 1;
      shutdown_begin("listen failed");
    } else {
      mcp_info("metrics on http://%s%s%s:%d/metrics", strchr(mcp_cfg.metrics.host, ':') ? "[" : "",
               mcp_cfg.metrics.host, strchr(mcp_cfg.metrics.host, ':') ? "]" : "", mcp_probe_port());
    }
  }
  if (status == 0) mcp_probe_set_ready(1);   /* the plugins are loaded */
  uv_run(loop, UV_RUN_DEFAULT);

  if (!use_http) mcp_stdio_free();
  mcp_auth_close();
  lua_close(L);
  mcp_slab_close();
  mcp_server_card_free();
  mcp_policy_clear();
  mcp_stats_close();
  mcp_semconv_close();
  mcp_metrics_close();
  mcp_scratch_free();
  uv_walk(loop, count_open, &open);
  if (open > 0) mcp_warn("event loop ended with %d handles still open", open);
  mcp_conffile_free(&conf);
  mcp_flags_free();
  free(watched);
  return status;
}
