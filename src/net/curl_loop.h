/* libcurl's multi interface on the loop: curl's sockets polled with
 * uv_poll, its timer a uv_timer. httpc.c (ctx:http) and otel.c (the span
 * exporter) each own one. */
#ifndef MCP_CURL_LOOP_H
#define MCP_CURL_LOOP_H

#include <curl/curl.h>
#include <uv.h>

typedef struct mcp_curl_loop mcp_curl_loop;
struct mcp_curl_loop {
  CURLM *multi;
  uv_loop_t *loop;
  uv_timer_t timer;              /* curl's timeout */
  int running;                   /* transfers curl has going */
  int depth;                     /* inside curl_multi_socket_action (callbacks run there) */
  /* After curl acted, outside any nested action: read what finished
   * (curl_multi_info_read) and end it. */
  void (*done)(mcp_curl_loop *cl);
};

/* Create cl's multi handle on loop (curl_global_init first); done may be NULL. */
void mcp_curl_loop_init(mcp_curl_loop *cl, uv_loop_t *loop, void (*done)(mcp_curl_loop *cl));
/* The multi handle goes (its easy handles removed before), the timer closes. */
void mcp_curl_loop_close(mcp_curl_loop *cl);

#endif
