/* The plugin author's command line: luamcp list, call, check, new, path,
 * pack, install and uninstall.
 *
 * list, check, new, install and uninstall are written in Lua
 * (lua/mcp/cli.lua). call runs one tool in-process through the real path:
 * a session whose writer is this file is fed initialize and a tools/call
 * with mcp_session_input, so the request table, the state machine and the
 * scheduler run as they do for a client; the loop runs until the call is
 * gone. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>
#include <uv.h>

#include "cli_pack.h"
#include "conffile.h"
#include "config.h"
#include "flags.h"
#include "httpc.h"
#include "op.h"
#include "json.h"
#include "otel.h"
#include "libdir.h"
#include "lmcp.h"
#include "log.h"
#include "proc.h"
#include "sched.h"
#include "session.h"
#include "task.h"

#define CALL_KEY "1"                 /* the id of the tools/call */
#define BAR_WIDTH 30

/* The usage's lines before the flags' (flags.c's table, those of MCP_FLAG_TOOLS). */
static const char usage_head[] =
  "usage: luamcp list [--config FILE] [--plugins DIR]... [--json]\n"
  "       luamcp call TOOL ['JSON arguments'] [--plugins DIR]... [--json] [--timeout SECONDS]\n"
  "                  [--grace SECONDS] [--log-level LEVEL] [--memory-limit MB]\n"
  "       luamcp check [--config FILE] [--plugins DIR]...\n"
  "       luamcp new NAME [--dir DIR] [--spec-dir DIR]\n"
  "       luamcp path [lua|types|plugins]\n"
  "       luamcp pack [--config FILE] [--plugins DIR]... [--sandbox DIR]... [--name NAME]\n"
  "                  [-o FILE.mcpb] [--description TEXT] [--author NAME] [--bundle-version VERSION]\n"
  "       luamcp install CLIENT [--plugins DIR]... [--sandbox DIR]... [--config FILE] [--env K=V]...\n"
  "                  [--name NAME] [--scope user|project] [--config-path FILE] [--dry-run]\n"
  "       luamcp install CLIENT --url URL [--bearer-env VAR] [--name NAME] [--scope user|project] ...\n"
  "       luamcp uninstall CLIENT [--name NAME] [--scope user|project] [--config-path FILE] [--dry-run]\n"
  "\n"
  "  list   the tools, resources and prompts of the plugins, with their schemas\n"
  "  call   run one tool in-process and print its result (Ctrl-C cancels it,\n"
  "         a second Ctrl-C aborts it); exit 0, 1 on an error result, 130 if interrupted\n"
  "  check  load every plugin and report problems as file:line: message\n"
  "  new    write DIR/NAME.lua (default plugins/), SPEC-DIR/NAME_spec.lua (default spec/),\n"
  "         .busted (mcp.test on the specs' path) and .luarc.json (the LuaLS annotations\n"
  "         of the API) unless they exist\n"
  "  path   the directory of luamcp's Lua library (mcp.test is there), of its LuaLS\n"
  "         annotations, or of its example plugins\n"
  "  pack   write an MCP Bundle (NAME.mcpb) of luamcp, its libraries and the plugins,\n"
  "         for Linux x86-64; the configuration file's env() variables become its user_config\n"
  "  install, uninstall CLIENT\n"
  "         add the server to (remove it from) CLIENT's configuration: claude-code,\n"
  "         claude-desktop, cursor, vscode, windsurf, codex, gemini-cli; mcp-json prints\n"
  "         the entry for any other client; installing again updates the entry\n"
  "The server's flags below apply as they do to the server; --config FILE: the server's\n"
  "configuration file: its plugins' settings, directories and these flags apply (a flag\n"
  "given here wins).\n";
static const char *usage;

/* The command and its arguments; the flags are in mcp_flags (flags.h). */
typedef struct {
  const char *cmd;
  const char **dirs;
  int ndirs;
  const char *pos[2];            /* TOOL and ARGS, or NAME */
  int npos;
  int log_level;                 /* -1: not given */
} cli_opts;

static int fail_usage(const char *fmt, const char *arg) {
  return mcp_usage_error(usage, fmt, arg);
}

/* --config FILE, or NULL. */
static const char *config_arg(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 2; i < argc; i += 1 + mcp_flag_takes_value(argv[i]))
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) path = argv[i + 1];
  return path;
}

static int is_install(const char *cmd) {
  return strcmp(cmd, "install") == 0 || strcmp(cmd, "uninstall") == 0;
}

/* The flags install and uninstall take: the entry's and their own. The
 * server's other flags belong in its --config file, which the entry names. */
static int install_flag(const mcp_flag *f) {
  static const char *const names[] = {
    "config", "plugins", "sandbox", "env", "name", "scope", "config-path", "url", "bearer-env",
    "dry-run", "help", NULL
  };
  for (int i = 0; names[i] != NULL; i++)
    if (strcmp(f->name, names[i]) == 0) return 1;
  return 0;
}

/* -1 when the command may run, else the exit status. */
static int parse_args(int argc, char **argv, const mcp_conffile *conf, cli_opts *o) {
  static const char *default_dirs[] = { "plugins", NULL };
  const mcp_flag *f;
  int r, no;
  int min = 0, max = 0;                 /* positional arguments */
  o->cmd = argv[1];
  o->log_level = -1;
  if ((r = mcp_flags_apply_file(conf, MCP_FLAG_TOOLS | MCP_FLAG_FILE, argc, argv, 2)) != 0) return r;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = mcp_flag_takes_value(a);
    f = mcp_flag_find(a, &no);
    if (f != NULL && !(f->flags & MCP_FLAG_TOOLS)) f = NULL;
    if (f != NULL && takes && v == NULL) return fail_usage("%s needs a value", a);
    if (f != NULL && is_install(o->cmd) && !install_flag(f))
      return fail_usage("%s is the server's: put it in the --config file the entry names", a);
    if (f != NULL && strcmp(f->name, "help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (f != NULL) {
      if ((r = mcp_flag_apply(f, no, v, NULL, usage)) != 0) return r;
      if (takes) i++;
    } else if (a[0] == '-' && a[1] != '\0' && !(a[1] == '-' && a[2] == '\0')) {
      return fail_usage("unknown option: %s", a);
    } else if (o->npos < 2) {
      o->pos[o->npos++] = a;
    } else {
      return fail_usage("unexpected argument: %s", a);
    }
  }
  o->dirs = mcp_flags.plugins.n > 0 ? mcp_flags.plugins.v : default_dirs;
  o->ndirs = mcp_flags.plugins.n > 0 ? mcp_flags.plugins.n : mcp_flags.sandbox.n > 0 ? 0 : 1;
  if (mcp_flag_was_set(mcp_flag_find("--log-level", &no))) o->log_level = mcp_flags.log_level;
  if (strcmp(o->cmd, "call") == 0) min = 1, max = 2;
  else if (strcmp(o->cmd, "new") == 0) min = max = 1;
  else if (strcmp(o->cmd, "path") == 0) max = 1;
  else if (is_install(o->cmd)) min = max = 1;
  if (o->npos < min) return fail_usage("%s: missing argument", o->cmd);
  if (o->npos > max) return fail_usage("unexpected argument: %s", o->pos[max]);
  return -1;
}

/* The Lua side. */

static int l_panic(lua_State *L) {
  mcp_log(MCP_LOG_CRITICAL, "Lua panic: %s", lua_tostring(L, -1));
  return 0;
}

/* The CLI's file functions fail as nil, "PATH: libuv's message" (r < 0). */
static int uv_fail(lua_State *L, const char *path, int r) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", path, uv_strerror(r));
  return 2;
}

/* mkdir(path): creates path and its parents; true, or nil, message. */
static int l_mkdir(lua_State *L) {
  size_t n;
  const char *path = luaL_checklstring(L, 1, &n);
  char *p = strdup(path);
  int r = 0;
  if (p == NULL) return luaL_error(L, "out of memory");
  for (size_t i = 1; i <= n && r == 0; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    uv_fs_t req;
    p[i] = '\0';
    r = uv_fs_mkdir(NULL, &req, p, 0777, NULL);
    uv_fs_req_cleanup(&req);
    if (r == UV_EEXIST) r = 0;
    p[i] = c;
  }
  free(p);
  if (r < 0) return uv_fail(L, path, r);
  lua_pushboolean(L, 1);
  return 1;
}

/* share_dir(what): the real path of lua, types or plugins (mcp_share_dir),
 * or nil, message. */
static int l_share_dir(lua_State *L) {
  char dir[PATH_MAX];
  int r = mcp_share_dir(luaL_checkstring(L, 1), dir, sizeof dir);
  if (r < 0) return uv_fail(L, dir, r);
  lua_pushstring(L, dir);
  return 1;
}

/* install: copy_mode(from, to): to gets from's permission bits (a backup of
 * a 0600 file stays 0600); true, or nil, message. */
static int l_copy_mode(lua_State *L) {
  const char *from = luaL_checkstring(L, 1), *to = luaL_checkstring(L, 2);
  uv_fs_t req;
  int r = uv_fs_stat(NULL, &req, from, NULL);
  if (r >= 0) {
    int mode = (int)(req.statbuf.st_mode & 07777);
    uv_fs_req_cleanup(&req);
    r = uv_fs_chmod(NULL, &req, to, mode, NULL);
  }
  uv_fs_req_cleanup(&req);
  if (r < 0) return uv_fail(L, to, r);
  lua_pushboolean(L, 1);
  return 1;
}

/* install: realpath(path): the real path, or nil, message. */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int r = uv_fs_realpath(NULL, &req, path, NULL);
  if (r >= 0) lua_pushstring(L, (const char *)req.ptr);
  uv_fs_req_cleanup(&req);
  return r < 0 ? uv_fail(L, path, r) : 1;
}

/* install: exe_path(): the real path of this binary. */
static int l_exe_path(lua_State *L) {
  char exe[PATH_MAX];
  size_t n = sizeof exe;
  int r = uv_exepath(exe, &n);
  if (r < 0) return luaL_error(L, "cannot find this binary: %s", uv_strerror(r));
  lua_settop(L, 0);
  lua_pushcfunction(L, l_realpath);
  lua_pushstring(L, exe);
  lua_call(L, 1, 2);
  return 2;
}

/* install: sysname(): "Linux", "Darwin", "Windows_NT"... */
static int l_sysname(lua_State *L) {
  uv_utsname_t u;
  if (uv_os_uname(&u) < 0) lua_pushliteral(L, "Linux");
  else lua_pushstring(L, u.sysname);
  return 1;
}

static const luaL_Reg cli_funcs[] = {
  {"mkdir", l_mkdir},
  {"share_dir", l_share_dir},
  {"realpath", l_realpath},
  {"copy_mode", l_copy_mode},
  {"exe_path", l_exe_path},
  {"sysname", l_sysname},
  {NULL, NULL}
};

/* stack: -> mcp.cli module */
static int open_cli(lua_State *L) {
  mcp_lua_open(L);
  luaL_requiref(L, "mcp.flags", luaopen_mcp_flags, 0);   /* the configuration file's keys */
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "mcp.cli");
  lua_call(L, 1, 1);
  luaL_setfuncs(L, cli_funcs, 0);
  mcp_cli_pack_open(L);
  return 1;
}

static void push_string_list(lua_State *L, const mcp_flag_list *l, const char *field) {
  lua_createtable(L, l->n, 0);
  for (int i = 0; i < l->n; i++) {
    lua_pushstring(L, l->v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, field);
}

/* stack: opts -> opts: install's and uninstall's {client, plugins, env,
 * scope, install_name, config_path, url, bearer_env, dry_run} (the
 * directories as given: the default one is install's to choose). */
static void push_install_opts(lua_State *L, const cli_opts *o) {
  int no;
  lua_pushstring(L, o->pos[0]);
  lua_setfield(L, -2, "client");
  push_string_list(L, &mcp_flags.plugins, "plugins");
  push_string_list(L, &mcp_flags.env, "env");
  if (mcp_flag_was_set(mcp_flag_find("--scope", &no)))
    lua_pushstring(L, mcp_flags.scope == 0 ? "user" : "project"), lua_setfield(L, -2, "scope");
  if (mcp_flags.name) lua_pushstring(L, mcp_flags.name), lua_setfield(L, -2, "install_name");
  if (mcp_flags.config_path) lua_pushstring(L, mcp_flags.config_path), lua_setfield(L, -2, "config_path");
  if (mcp_flags.url) lua_pushstring(L, mcp_flags.url), lua_setfield(L, -2, "url");
  if (mcp_flags.bearer_env) lua_pushstring(L, mcp_flags.bearer_env), lua_setfield(L, -2, "bearer_env");
  lua_pushboolean(L, mcp_flags.dry_run);
  lua_setfield(L, -2, "dry_run");
}

/* The options as a Lua table: {dirs = {...}, json =, name =, dir =, spec_dir =}. */
static void push_opts(lua_State *L, const cli_opts *o) {
  lua_createtable(L, 0, 6);
  lua_createtable(L, o->ndirs, 0);
  for (int i = 0; i < o->ndirs; i++) {
    lua_pushstring(L, o->dirs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_createtable(L, mcp_flags.sandbox.n, 0);
  for (int i = 0; i < mcp_flags.sandbox.n; i++) {
    lua_pushstring(L, mcp_flags.sandbox.v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "sandbox");
  lua_setfield(L, -2, "dirs");
  lua_pushboolean(L, mcp_flags.json);
  lua_setfield(L, -2, "json");
  lua_pushstring(L, o->cmd);
  lua_setfield(L, -2, "cmd");
  for (int i = 0; i < o->npos; i++) {
    lua_pushstring(L, o->pos[i]);
    lua_setfield(L, -2, i == 0 ? "name" : "arguments");
  }
  if (mcp_flags.dir) lua_pushstring(L, mcp_flags.dir), lua_setfield(L, -2, "dir");
  if (mcp_flags.spec_dir) lua_pushstring(L, mcp_flags.spec_dir), lua_setfield(L, -2, "spec_dir");
  if (mcp_flags.config) lua_pushstring(L, mcp_flags.config), lua_setfield(L, -2, "config");
  if (strcmp(o->cmd, "pack") == 0) {
    lua_createtable(L, 0, 5);
    if (mcp_flags.name) lua_pushstring(L, mcp_flags.name), lua_setfield(L, -2, "name");
    if (mcp_flags.pack.output) lua_pushstring(L, mcp_flags.pack.output), lua_setfield(L, -2, "output");
    if (mcp_flags.pack.description) lua_pushstring(L, mcp_flags.pack.description), lua_setfield(L, -2, "description");
    if (mcp_flags.pack.author) lua_pushstring(L, mcp_flags.pack.author), lua_setfield(L, -2, "author");
    if (mcp_flags.pack.version) lua_pushstring(L, mcp_flags.pack.version), lua_setfield(L, -2, "version");
    lua_setfield(L, -2, "pack");
  }
  if (is_install(o->cmd)) push_install_opts(L, o);
}

/* stdout is set aside, as the server does, so that what a plugin or its
 * children write goes to stderr and stdout carries only what the command prints. */
static FILE *out;

static int set_stdout_aside(void) {
  int fd;
  fflush(stdout);
  fd = fcntl(1, F_DUPFD_CLOEXEC, 3);             /* children must not inherit it */
  if (fd < 0 || dup2(2, 1) < 0 || (out = fdopen(fd, "w")) == NULL) {
    fprintf(stderr, "luamcp: stdout: cannot set aside: %s\n", strerror(errno));
    return -1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  return 0;
}

static lua_State *new_state(void) {
  lua_State *L = lua_newstate(mcp_sched_alloc, NULL);
  if (L == NULL) return NULL;
  lua_atpanic(L, l_panic);
  *(void **)lua_getextraspace(L) = NULL;   /* new threads copy it: no call */
  return L;
}

/* stack: cli opts -> code text */
static int run_cmd(lua_State *L) {
  const char *cmd = lua_tostring(L, lua_upvalueindex(1));
  lua_getfield(L, 1, cmd);
  lua_pushvalue(L, 2);
  lua_call(L, 1, 2);
  return 2;
}

/* list, check, new, install, uninstall: cli[cmd](opts) returns the exit
 * code and what to print. */
static int run_lua_cmd(const cli_opts *o) {
  lua_State *L = new_state();
  int code;
  if (L == NULL) return 1;
  lua_pushstring(L, o->cmd);
  lua_pushcclosure(L, run_cmd, 1);
  lua_pushcfunction(L, open_cli);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "luamcp: cannot start: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  push_opts(L, o);
  if (lua_pcall(L, 2, 2, 0) != LUA_OK) {
    fprintf(stderr, "luamcp: %s: %s\n", o->cmd, lua_tostring(L, -1));
    code = 1;
  } else {
    size_t n;
    const char *text = lua_tolstring(L, -1, &n);
    code = (int)lua_tointeger(L, -2);
    if (text != NULL) fwrite(text, 1, n, out);
  }
  lua_close(L);
  mcp_policy_clear();
  return code;
}

/* call */

static struct {
  uv_loop_t *loop;
  lua_State *L;
  int cli_ref;
  mcp_session session;
  uv_signal_t sigint;
  uv_timer_t ticker;             /* redraws "cancelling..." on a terminal */
  int closing;                   /* handles still to close */
  int tty;                       /* stderr is a terminal */
  int bar;                       /* a progress bar or status line is drawn */
  int interrupts;
  uint64_t interrupted_at;
  char *response;                /* the tools/call response, as JSON text */
  char *init_error;              /* the initialize error response */
} C;

static void status_clear(void) {
  if (C.bar) fputs("\r\033[K", stderr);
  C.bar = 0;
}

static void show_progress(json_t *params) {
  json_t *p = json_object_get(params, "progress"), *t = json_object_get(params, "total");
  const char *msg = json_string_value(json_object_get(params, "message"));
  double prog = json_number_value(p), total = json_number_value(t);
  if (!C.tty) {
    if (json_is_number(t)) fprintf(stderr, "progress: %g/%g%s%s\n", prog, total, msg ? " " : "", msg ? msg : "");
    else fprintf(stderr, "progress: %g%s%s\n", prog, msg ? " " : "", msg ? msg : "");
    return;
  }
  status_clear();
  if (json_is_number(t) && total > 0) {
    int fill = (int)(prog / total * BAR_WIDTH + 0.5);
    char bar[BAR_WIDTH + 1];
    if (fill < 0) fill = 0;
    if (fill > BAR_WIDTH) fill = BAR_WIDTH;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
    bar[BAR_WIDTH] = '\0';
    fprintf(stderr, "[%s] %3.0f%% %g/%g %.60s", bar, prog / total * 100, prog, total, msg ? msg : "");
  } else {
    fprintf(stderr, "[%g] %.60s", prog, msg ? msg : "");
  }
  C.bar = 1;
}

static void show_log(json_t *params) {
  const char *level = json_string_value(json_object_get(params, "level"));
  const char *logger = json_string_value(json_object_get(params, "logger"));
  json_t *data = json_object_get(params, "data");
  mcp_buf b = MCP_BUF_INIT;
  if (json_is_string(data)) mcp_buf_add(&b, json_string_value(data), json_string_length(data));
  else if (data != NULL) mcp_json_dump(data, &b);
  status_clear();
  fprintf(stderr, "[%s] %s%s%.*s\n", level ? level : "?", logger ? logger : "", logger ? ": " : "",
          (int)b.len, b.data ? b.data : "");
  mcp_buf_free(&b);
}

static void show_cancelling(void) {
  if (!C.tty) return;
  status_clear();
  fprintf(stderr, "cancelling... %.1fs (Ctrl-C again to abort)",
          (double)(uv_hrtime() - C.interrupted_at) / 1e9);
  C.bar = 1;
}

static void on_tick(uv_timer_t *t) {
  (void)t;
  show_cancelling();
}

/* The session's writer: notifications are shown as they come; the
 * response is kept for the end. */
static void cli_write(mcp_session *s, void *stream, const char *data, size_t len, int last) {
  char err[128];
  json_t *msg, *id;
  const char *method;
  (void)s; (void)stream; (void)last;
  if (data == NULL) return;
  if ((msg = mcp_json_parse(data, len, err, sizeof err)) == NULL) return;
  method = json_string_value(json_object_get(msg, "method"));
  id = json_object_get(msg, "id");
  if (method != NULL && strcmp(method, "notifications/progress") == 0) {
    show_progress(json_object_get(msg, "params"));
  } else if (method != NULL && strcmp(method, "notifications/message") == 0) {
    show_log(json_object_get(msg, "params"));
  } else if (method == NULL && json_is_integer(id) && json_integer_value(id) == 1) {
    free(C.response);
    C.response = strndup(data, len);
  } else if (method == NULL && json_object_get(msg, "error") != NULL) {
    free(C.init_error);
    C.init_error = strndup(data, len);
  }
  json_decref(msg);
}

static void handle_closed(uv_handle_t *h) {
  (void)h;
  if (--C.closing == 0) {
    mcp_task_close();
    mcp_otel_close();            /* the call's spans leave before the exit, as the server's */
    mcp_sched_close();
  }
}

/* The call is gone: close what keeps the loop alive. */
static void finish(mcp_session *s) {
  (void)s;
  if (C.closing) return;
  C.closing = 2;
  mcp_ops_shutdown();
  mcp_httpc_close();
  mcp_proc_close_all();          /* a mount's upstream: the loop ends once it is reaped */
  uv_close((uv_handle_t *)&C.sigint, handle_closed);
  uv_close((uv_handle_t *)&C.ticker, handle_closed);
}

static void feed(const char *text) {
  mcp_session_input(&C.session, text, strlen(text), NULL);
}

/* The first Ctrl-C cancels through the state machine, as a client would;
 * the second fires the grace event so the handler is aborted now (a tool
 * whose policy ignores cancels is first moved to cleaning up, as shutdown
 * does). */
static void on_sigint(uv_signal_t *h, int signum) {
  mcp_req *r = mcp_reqtab_find(&C.session.reqs, CALL_KEY, strlen(CALL_KEY));
  (void)h; (void)signum;
  if (r == NULL) return;
  if (++C.interrupts == 1) {
    C.interrupted_at = uv_hrtime();
    status_clear();
    fprintf(stderr, "cancelling... (%sCtrl-C again to abort)\n",
            r->mode == MCP_CANCEL_IGNORE ? "the tool ignores cancels; " : "");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
         "\"params\":{\"requestId\":" CALL_KEY ",\"reason\":\"interrupted\"}}");
    if (C.tty && mcp_reqtab_find(&C.session.reqs, CALL_KEY, strlen(CALL_KEY)) != NULL)
      uv_timer_start(&C.ticker, on_tick, 100, 100);
    return;
  }
  status_clear();
  fprintf(stderr, "aborting...\n");
  if (r->state == MCP_REQ_RUNNING) mcp_call_fire((mcp_call *)r, MCP_EV_CLOSE, "interrupted");
  r = mcp_reqtab_find(&C.session.reqs, CALL_KEY, strlen(CALL_KEY));
  if (r != NULL) mcp_call_fire((mcp_call *)r, MCP_EV_GRACE, NULL);
}

/* stack: cli opts -> server module */
static int load_plugins(lua_State *L) {
  lua_getfield(L, 1, "load");
  lua_pushvalue(L, 2);
  lua_call(L, 1, 1);
  return 1;
}

/* stack: cli opts -> the tools/call request as JSON text */
static int call_request(lua_State *L) {
  lua_getfield(L, 1, "call_request");
  lua_pushvalue(L, 2);
  lua_call(L, 1, 1);
  return 1;
}

/* stack: cli response opts interrupted -> code out err */
static int call_output(lua_State *L) {
  lua_getfield(L, 1, "call_output");
  lua_insert(L, 2);
  lua_call(L, 3, 3);
  return 3;
}

static int run_call(const cli_opts *o) {
  lua_State *L;
  char *request = NULL;
  int code = 1;
  L = C.L = new_state();
  if (L == NULL) return 1;
  lua_pushcfunction(L, open_cli);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "luamcp: cannot start: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  C.cli_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* The arguments first: a usage error needs no plugins, and says what is
   * wrong with them in one line (the usage would bury it). */
  lua_pushcfunction(L, call_request);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.cli_ref);
  push_opts(L, o);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK || !lua_isstring(L, -1)) {
    fprintf(stderr, "luamcp: call: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 2;
  }
  request = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  lua_pushcfunction(L, load_plugins);
  lua_rawgeti(L, LUA_REGISTRYINDEX, C.cli_ref);
  push_opts(L, o);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    fprintf(stderr, "luamcp: cannot start: %s\n", lua_tostring(L, -1));
    free(request);
    lua_close(L);
    mcp_policy_clear();
    return 1;
  }
  C.loop = uv_default_loop();
  C.tty = isatty(2);
  mcp_sched_init(C.loop, L, luaL_ref(L, LUA_REGISTRYINDEX));
  if (mcp_otel_init(C.loop, &mcp_flags.otel) != 0) {   /* OTEL_* and --config's otel, as the server */
    free(request);
    lua_close(L);
    mcp_policy_clear();
    return 2;
  }
  mcp_session_init(&C.session, cli_write, NULL);
  C.session.on_drained = finish;
  uv_signal_init(C.loop, &C.sigint);
  uv_signal_start(&C.sigint, on_sigint, SIGINT);
  uv_timer_init(C.loop, &C.ticker);

  /* as a host that renders MCP Apps: the author lists and calls UI-only tools too */
  feed("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"extensions\":"
       "{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":[\"text/html;profile=mcp-app\"]}}},"
       "\"clientInfo\":{\"name\":\"luamcp call\",\"version\":\"" LUAMCP_VERSION "\"}}}");
  feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  if (o->log_level >= 0) {
    char set[160];
    snprintf(set, sizeof set, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\","
             "\"params\":{\"level\":\"%s\"}}", mcp_log_level_name((mcp_log_level)o->log_level));
    feed(set);
  }
  feed(request);
  free(request);
  if (C.session.ncalls == 0) finish(&C.session);
  uv_run(C.loop, UV_RUN_DEFAULT);
  status_clear();

  if (C.init_error != NULL && C.response == NULL) {
    fprintf(stderr, "luamcp: %s\n", C.init_error);
  } else {
    lua_pushcfunction(L, call_output);
    lua_rawgeti(L, LUA_REGISTRYINDEX, C.cli_ref);
    if (C.response) lua_pushstring(L, C.response); else lua_pushnil(L);
    push_opts(L, o);
    lua_pushinteger(L, C.interrupts);
    if (lua_pcall(L, 4, 3, 0) != LUA_OK) {
      fprintf(stderr, "luamcp: %s\n", lua_tostring(L, -1));
    } else {
      size_t n;
      const char *text = lua_tolstring(L, -2, &n);
      code = (int)lua_tointeger(L, -3);
      if (text != NULL) fwrite(text, 1, n, out);
      if ((text = lua_tolstring(L, -1, &n)) != NULL) fwrite(text, 1, n, stderr);
    }
  }
  mcp_session_close(&C.session);
  lua_close(L);
  mcp_policy_clear();
  mcp_scratch_free();
  free(C.response);
  free(C.init_error);
  if (uv_loop_close(C.loop) != 0) mcp_warn("event loop closed with handles still open");
  return C.interrupts > 0 ? 130 : code;
}

/* path [lua|types|plugins]: one directory of the installed tree, for
 * scripts (the specs of luamcp new find mcp.test with it). */
static int run_path(const cli_opts *o) {
  const char *what = o->npos > 0 ? o->pos[0] : "lua";
  char dir[PATH_MAX];
  int r;
  if (strcmp(what, "lua") != 0 && strcmp(what, "types") != 0 && strcmp(what, "plugins") != 0)
    return fail_usage("path: unknown directory %s (lua, types or plugins)", what);
  if ((r = mcp_share_dir(what, dir, sizeof dir)) < 0) {
    fprintf(stderr, "luamcp: path: %s: %s\n", dir, uv_strerror(r));
    return 1;
  }
  printf("%s\n", dir);
  return 0;
}

int mcp_cli_main(int argc, char **argv) {
  static mcp_conffile conf;
  const char *config = config_arg(argc, argv);
  cli_opts o = { 0 };
  int r;
  mcp_flags_defaults();
  usage = mcp_flags_usage(MCP_FLAG_TOOLS, usage_head);
  /* install passes --config FILE on to the entry: the server reads it */
  if (config != NULL && !(argc > 1 && is_install(argv[1])) &&
      (r = mcp_conffile_read(config, luaopen_mcp_flags, &conf)) != 0) return r;
  if ((r = parse_args(argc, argv, &conf, &o)) >= 0) {
    mcp_conffile_free(&conf);
    mcp_flags_free();
    return r;
  }
  /* The server's own lines (plugins loaded, session started) are noise here. */
  mcp_log_threshold = o.log_level >= 0 ? (mcp_log_level)o.log_level : MCP_LOG_WARNING;
  mcp_log_plugin_threshold = o.log_level >= 0 ? (mcp_log_level)o.log_level : MCP_LOG_INFO;   /* print() shows */
  signal(SIGPIPE, SIG_IGN);
  if (strcmp(o.cmd, "path") == 0) {
    mcp_conffile_free(&conf);
    mcp_flags_free();
    return run_path(&o);
  }
  if (strcmp(o.cmd, "new") != 0 && !is_install(o.cmd) && set_stdout_aside() != 0) return 1;
  if (out == NULL) out = stdout;
  /* list and pack run as a request too: a mount's lists are fetched inside a call */
  r = strcmp(o.cmd, "call") == 0 || strcmp(o.cmd, "list") == 0 || strcmp(o.cmd, "pack") == 0
    ? run_call(&o) : run_lua_cmd(&o);
  fflush(out);
  mcp_conffile_free(&conf);
  mcp_flags_free();
  return r;
}
