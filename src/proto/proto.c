/* Wires proto's files together before the first session starts: rev2026.c,
 * task.c and outgoing.c register their rows into session.c (and task.c its
 * tasks extension into rev2026.c), so that calls between them run one way. */
#include "outgoing.h"
#include "rev2026.h"
#include "session.h"
#include "task_int.h"

void mcp_session_init(mcp_session *s, mcp_session_write_cb write, void *transport) {
  static int wired;
  if (!wired) {                /* the order of the rows: stateless requests first */
    mcp_rev2026_init();
    mcp_task_init();
    mcp_task_methods_init();
    mcp_task_ext_init();
    mcp_out_init();
    wired = 1;
  }
  mcp__session_init(s, write, transport);
}
