/* The server in a fuzz target's process, for the targets that need the
 * real dispatch: the Lua state with mcp.server and test/fuzz/plugins, the
 * scheduler on a loop of its own. Started on first use; lives as long as
 * the process (the fuzzer's). */
#ifndef FUZZ_SERVER_H
#define FUZZ_SERVER_H

#include <uv.h>

uv_loop_t *fuzz_server(void);

#endif
