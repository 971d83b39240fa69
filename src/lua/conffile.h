/* luamcp --config FILE: the flags a configuration file sets. */
#ifndef MCP_CONFFILE_H
#define MCP_CONFFILE_H

#include <lua.h>

typedef struct {
  char *flag;           /* "--timeout" */
  char *value;          /* NULL for a flag without one (--watch) */
  char *where;          /* "FILE:LINE" of its key, for messages */
} mcp_conffile_opt;

/* Owned by its reader: mcp_conffile_free. */
typedef struct {
  mcp_conffile_opt *opt;
  int n;
} mcp_conffile;

/* Read FILE (lua/mcp/config.lua runs and checks it, in a Lua state of its
 * own, where open_keys opens "mcp.flags", the file's keys: luaopen_mcp_flags
 * of src/flags.c): its flags, in conf, for the caller to apply before its
 * command line. Returns 0, or 2 (an exit status) with the error on stderr. */
int mcp_conffile_read(const char *path, lua_CFunction open_keys, mcp_conffile *conf);
void mcp_conffile_free(mcp_conffile *conf);
/* Say that the file gives flag a bad value, at where ("FILE:LINE"), by its
 * key (max_line for --max-line) and never with the value, which may be a
 * secret; want: what it should be, or "". Returns 2 (the exit status). */
int mcp_conffile_bad(const char *where, const char *flag, const char *want);

#endif
