/* The request table and the cancellation state machine. No Lua, no I/O:
 * callers feed events in and perform the actions that come out. */
#ifndef MCP_REQUEST_H
#define MCP_REQUEST_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  MCP_REQ_QUEUED,       /* received, handler not started */
  MCP_REQ_RUNNING,      /* handler running (or waiting) */
  MCP_REQ_CANCELLING,   /* cancel asked: handler cleaning up; no response will be sent */
  MCP_REQ_TIMING_OUT,   /* deadline passed: handler cleaning up; a timeout result will be sent */
  MCP_REQ_HELD,         /* no handler runs: the C path's op answers it (a forwarded call), or starts it */
  MCP_REQ_COMPLETED,    /* terminal: result sent */
  MCP_REQ_FAILED,       /* terminal: error result sent */
  MCP_REQ_CANCELLED,    /* terminal: no response */
  MCP_REQ_TIMED_OUT,    /* terminal: timeout result sent */
  MCP_REQ_NSTATES
} mcp_req_state;

#define mcp_req_state_terminal(s) ((s) >= MCP_REQ_COMPLETED)

typedef enum {
  MCP_EV_START,         /* the scheduler starts the handler */
  MCP_EV_RETURN,        /* the handler returned */
  MCP_EV_RAISE,         /* the handler raised an error (or the cancellation) */
  MCP_EV_CANCEL,        /* notifications/cancelled from the client */
  MCP_EV_TIMEOUT,       /* the request's deadline passed */
  MCP_EV_GRACE,         /* the grace after a cancel or timeout expired */
  MCP_EV_CLOSE,         /* shutdown, session ended, stream closed */
  MCP_EV_HOLD,          /* the C path took it without a handler (its op answers it) */
  MCP_EV_NEVENTS
} mcp_req_event;

typedef enum {
  MCP_CANCEL_COOPERATIVE,  /* flag set, waits woken, grace, then abort */
  MCP_CANCEL_ABORT,        /* stopped at once */
  MCP_CANCEL_IGNORE,       /* runs to completion (only shutdown stops it) */
  MCP_CANCEL_NMODES
} mcp_cancel_mode;

/* Actions a transition asks of the caller, in the order it must do them. */
enum {
  MCP_ACT_START   = 1 << 0,  /* resume the handler for the first time */
  MCP_ACT_SIGNAL  = 1 << 1,  /* set the cancelled flag, stop its ops, wake the handler's wait */
  MCP_ACT_GRACE   = 1 << 2,  /* start the grace timer */
  MCP_ACT_ABORT   = 1 << 3,  /* stop the handler now; its <close> variables run */
  MCP_ACT_RESULT  = 1 << 4,  /* respond with the handler's result */
  MCP_ACT_ERROR   = 1 << 5,  /* respond with the handler's error */
  MCP_ACT_TIMEOUT = 1 << 6,  /* respond with a timeout result */
  MCP_ACT_FINISH  = 1 << 7,  /* leave the table; free once the handler is gone */
  MCP_ACT_IGNORED = 1 << 8   /* nothing changes; the event is logged at debug */
};

typedef struct mcp_transition {
  uint8_t next;      /* mcp_req_state */
  uint16_t actions;  /* MCP_ACT_* */
} mcp_transition;

extern const mcp_transition mcp_req_fsm[MCP_CANCEL_NMODES][MCP_REQ_NSTATES][MCP_EV_NEVENTS];

/* One in-flight request. Embedded in its owner (a call), which calls
 * mcp_req_init and mcp_req_close; the table only links it. */
typedef struct mcp_req mcp_req;
struct mcp_req {
  mcp_req *hnext;        /* bucket chain (mcp_reqtab) */
  uint32_t hash;
  uint8_t state;         /* mcp_req_state */
  uint8_t mode;          /* mcp_cancel_mode */
  uint8_t linked;        /* in a table */
  uint8_t key_kept;      /* key is in its owner's memory (mcp_req_init_in) */
  char *key;             /* the id as exact JSON text: 7 and "7" differ */
  size_t keylen;
  char *reason;          /* why it was cancelled or timed out; NULL before (shared: read only) */
};

void mcp_req_init(mcp_req *req, const char *key, size_t keylen, mcp_cancel_mode mode);
/* The same, with the key copied into store (keylen + 1 bytes of the
 * owner's, kept as long as req: no allocation of its own). */
void mcp_req_init_in(mcp_req *req, char *store, const char *key, size_t keylen, mcp_cancel_mode mode);
/* The integer of an integer id's key (its JSON text: '-'? digits, within
 * int64, as the parsers checked it), with no strtoll. */
static inline long long mcp_key_integer(const char *key) {
  unsigned long long u = 0;
  int neg = *key == '-';
  for (key += neg; *key >= '0' && *key <= '9'; key++) u = u * 10 + (unsigned)(*key - '0');
  return neg ? (long long)(0 - u) : (long long)u;
}
void mcp_req_close(mcp_req *req);
/* Apply an event: moves the state, records the first reason, returns MCP_ACT_*. */
unsigned mcp_req_fire(mcp_req *req, mcp_req_event ev, const char *reason);

const char *mcp_req_state_name(int state);
const char *mcp_req_event_name(int ev);
const char *mcp_cancel_mode_name(int mode);
int mcp_cancel_mode_parse(const char *name);   /* -1 if unknown */

/* The table of in-flight requests of one session, keyed by exact id, and a
 * small ring of recently finished ids so that late cancels log precisely. */
#define MCP_REQTAB_RECENT 64

typedef struct {
  uint32_t hash;
  uint8_t state;
  char key[40];          /* a prefix of the key; with the hash, good enough for logs */
} mcp_req_recent;

typedef struct {
  mcp_req **buckets;
  size_t nbuckets, count;
  mcp_req_recent recent[MCP_REQTAB_RECENT];
  unsigned recent_next;
} mcp_reqtab;

void mcp_reqtab_init(mcp_reqtab *t);
void mcp_reqtab_close(mcp_reqtab *t);           /* the table must be empty */
mcp_req *mcp_reqtab_find(mcp_reqtab *t, const char *key, size_t keylen);
int mcp_reqtab_insert(mcp_reqtab *t, mcp_req *req);   /* -1: id already in flight */
void mcp_reqtab_remove(mcp_reqtab *t, mcp_req *req);  /* remembers its final state */
/* The final state of a recently finished id, or -1 when it is not remembered. */
int mcp_reqtab_recent(const mcp_reqtab *t, const char *key, size_t keylen);

#endif
