/* luamcp registry (cli_registry.c): the MCP registry's server.json. */
#ifndef MCP_CLI_REGISTRY_H
#define MCP_CLI_REGISTRY_H

/* argv[1] is "registry". The exit status. */
int mcp_cli_registry_main(int argc, char **argv);

#endif
