/* The server card (server_card.c): the MCP Server Card draft's (SEP-2127)
 * description of this server, served at GET /mcp/server-card when the
 * configuration file has server_card = {...}. Experimental, as the draft is. */
#ifndef MCP_SERVER_CARD_H
#define MCP_SERVER_CARD_H

#include <lua.h>

#include "http.h"

#define MCP_SERVER_CARD_PATH "/mcp/server-card"
#define MCP_SERVER_CARD_TYPE "application/mcp-server-card+json"
#define MCP_SERVER_CARD_SCHEMA "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"

/* Is a card configured (and so is MCP_SERVER_CARD_PATH served)? */
int mcp_server_card_on(void);
/* The HTTP transport listens: host and port for the card's default URL. */
void mcp_server_card_listening(const char *host, int port);
/* Answer a request for MCP_SERVER_CARD_PATH: GET or HEAD (200, or 304 for
 * a matching If-None-Match), OPTIONS (the CORS preflight), else 405. */
void mcp_server_card_answer(mcp_http_conn *c, const mcp_http_request *r);
void mcp_server_card_free(void);
/* core.server_card(fields | nil): lua/mcp/server.lua sets the card at load
 * and reload. */
void mcp_server_card_open_lib(lua_State *L);

#endif
