/* The flags of luamcp and of luamcp list/call/check/new/path/pack/install: one table
 * (flags.c), from which come the help text, which flags take a value,
 * applying a value, the configuration file's keys and --no-FLAG. */
#ifndef MCP_FLAGS_H
#define MCP_FLAGS_H

#include <stddef.h>

#include <lua.h>

#include "conffile.h"
#include "config.h"
#include "otel.h"

/* What a flag's value is; each kind has one parser in flags.c. */
typedef enum {
  MCP_KIND_ACTION,     /* --help, --version: no value, the caller acts */
  MCP_KIND_BOOL,       /* int: 1, or 0 with --no-FLAG */
  MCP_KIND_STRING,     /* const char *, at least lo bytes long */
  MCP_KIND_LIST,       /* mcp_flag_list: each string given */
  MCP_KIND_HOSTS,      /* an entry of the --http-allow list: HOST[:PORT] */
  MCP_KIND_SECONDS,    /* double, in [lo, hi] */
  MCP_KIND_BYTES,      /* size_t: a whole number of units (bytes, MB) in [lo, hi] */
  MCP_KIND_COUNT,      /* int: a whole number in [lo, hi] */
  MCP_KIND_HOSTPORT,   /* mcp_hostport: HOST:PORT or [V6]:PORT */
  MCP_KIND_URL,        /* const char *: SCHEME://... of one of choices */
  MCP_KIND_ENUM        /* int: the index of one of choices */
} mcp_flag_kind;

/* Who takes a flag, and how. */
enum {
  MCP_FLAG_SERVER = 1,     /* luamcp (the server) */
  MCP_FLAG_TOOLS = 2,      /* luamcp list, call, check, new, path, pack, install, uninstall */
  MCP_FLAG_ABOVE = 4,      /* a number must be above lo, not at it */
  MCP_FLAG_REPEAT = 8,     /* may be given again, each value kept (a list in the file) */
  MCP_FLAG_FILE = 16       /* the configuration file's only (otel = {...}): no flag, no help line */
};

/* One row per flag (Redis's standardConfig). */
typedef struct {
  const char *name;                /* "max-line": --max-line */
  const char *key;                 /* in the configuration file ("max_line"), or NULL */
  mcp_flag_kind kind;
  unsigned flags;                  /* MCP_FLAG_* */
  const char *arg;                 /* the value in the help ("BYTES") */
  double lo, hi;                   /* bounds of a number; a string's least length */
  double def;                      /* a number's default (in units), an enum's index */
  double unit;                     /* bytes in one unit (--memory-limit: MB) */
  const char *const *choices;      /* an enum's names, a URL's schemes; NULL-terminated */
  void *var;                       /* where the value goes (see mcp_flag_kind) */
  const char *help;
} mcp_flag;

typedef struct {
  const char **v;                  /* NULL-terminated (v[n]) once one is added */
  int n, cap;
} mcp_flag_list;

/* What the flags set beyond mcp_cfg: read by main.c and cli.c. */
typedef struct {
  const char *config;              /* --config FILE */
  mcp_flag_list plugins;           /* --plugins DIR... */
  mcp_flag_list sandbox;           /* --sandbox DIR...: sandboxed plugins */
  mcp_flag_list origins;           /* --allow-origin ORIGIN... */
  mcp_hostport http;               /* --http; port -1: stdio */
  const char *token;               /* --token */
  const char *auth_issuer, *auth_jwks, *auth_audience, *auth_introspect;
  size_t max_body;
  int max_connections, max_sessions;
  double idle_timeout;             /* seconds */
  const char *store;               /* --store URL */
  int watch;
  int console;                     /* --console */
  const char *console_scope;       /* --console-scope */
  int log_level;                   /* an mcp_log_level */
  int json;                        /* list, call: --json */
  const char *dir, *spec_dir;      /* new: --dir, --spec-dir */
  /* install, uninstall */
  const char *name;                /* --name (pack too) */
  mcp_flag_list env;               /* --env K=V... */
  int scope;                       /* --scope: 0 user, 1 project */
  const char *config_path;         /* --config-path */
  const char *url, *bearer_env;    /* --url, --bearer-env */
  int dry_run;                     /* --dry-run */
  struct {                         /* pack: -o/--output, --description, --author, --bundle-version */
    const char *output, *description, *author, *version;
  } pack;
  mcp_otel_opts otel;              /* otel = {...} in the file; the OTEL_* variables otherwise */
} mcp_opts;

extern mcp_opts mcp_flags;

/* Every flag's default into its variable. */
void mcp_flags_defaults(void);
/* The row of "--max-line", "--no-watch" (*no = 1; booleans only) or "-h"; NULL if none. */
const mcp_flag *mcp_flag_find(const char *arg, int *no);
/* 1 if arg is a flag that takes a value (of any command). */
int mcp_flag_takes_value(const char *arg);
/* Is f among argv[first..] (as --FLAG or --no-FLAG)? */
int mcp_flag_given(const mcp_flag *f, int argc, char **argv, int first);
/* Has f been applied (from the command line or the file)? */
int mcp_flag_was_set(const mcp_flag *f);
/* Apply a value of f (value NULL for a boolean or action): from the
 * command line (where NULL: an error shows usage) or the configuration
 * file (where "FILE:LINE": an error never shows the value). 0, or the exit
 * status (2) with the error on stderr. */
int mcp_flag_apply(const mcp_flag *f, int no, const char *value, const char *where, const char *usage);
/* The configuration file's flags that scope takes and argv[first..] does not give. 0, or 2. */
int mcp_flags_apply_file(const mcp_conffile *conf, unsigned scope, int argc, char **argv, int first);
/* The help text of scope's flags, after head (usage lines and a paragraph):
 * static, built once. */
const char *mcp_flags_usage(unsigned scope, const char *head);
void mcp_flags_free(void);
/* stack: -> {key = "number"|"string"|"boolean"|"list"}: the configuration
 * file's keys, for lua/mcp/config.lua (require "mcp.flags"). */
int luaopen_mcp_flags(lua_State *L);

#endif
