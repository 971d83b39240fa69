/* The plugin author's commands: luamcp list, call, check and new. */
#ifndef MCP_CLI_H
#define MCP_CLI_H

/* argv[1] is the command; returns the exit status. */
int mcp_cli_main(int argc, char **argv);

#endif
