/* One uv_timer for every deadline: a binary min-heap of entries embedded in
 * their owners (calls), the timer armed for the earliest. Setting or moving
 * one is O(log n), clearing one O(1) amortized (its slot is left empty), and
 * nothing is allocated per entry. */
#ifndef MCP_DEADLINE_H
#define MCP_DEADLINE_H

#include <stdint.h>

#include <uv.h>

typedef struct mcp_deadline {
  uint64_t due;              /* on the clock given to mcp_deadlines_init; 0 = none */
  int32_t index;             /* in the heap, or -1 */
  uint32_t fire;             /* its own callback, by number (mcp_deadline_init); 0: mcp_deadlines_init's */
} mcp_deadline;

#define MCP_DEADLINE_INIT { 0, -1, 0 }

/* d, not armed, with its own callback (NULL: mcp_deadlines_init's). An
 * entry keeps the callback's number among the few there are (16 bytes an
 * entry: a call embeds two). */
void mcp_deadline_init(mcp_deadline *d, void (*fire)(struct mcp_deadline *d));

/* cb runs for each entry that comes due (but one with its own fire), already
 * out of the heap (it may set it again). clock gives the time in ns. */
void mcp_deadlines_init(uv_loop_t *loop, uint64_t (*clock)(void), void (*cb)(mcp_deadline *d));
/* Arm d for due (0: disarm). */
void mcp_deadline_set(mcp_deadline *d, uint64_t due);
/* Fire every entry due now (after the clock moved), earliest first. */
void mcp_deadlines_run(void);
void mcp_deadlines_close(void);

#endif
