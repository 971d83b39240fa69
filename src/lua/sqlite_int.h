/* Private to mcp.sqlite (sqlite_engine.c and sqlite.c): the connection, its
 * jobs and its statement cache, and what the Lua binding calls of the engine. */
#ifndef MCP_SQLITE_INT_H
#define MCP_SQLITE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>
#include <uv.h>

#include "buf.h"
#include "op.h"
#include "sched.h"

#define CACHE_MAX 64                     /* prepared statements kept per db */

enum { KIND_EXEC, KIND_QUERY };

/* A parameter, or a column name or value of a result. Bytes live in the
 * job's pdata (parameters) or data (results). */
typedef struct {
  int type;                              /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL */
  union {
    sqlite3_int64 i;
    double d;
    struct { size_t off, len; } s;
  } v;
  size_t name, namelen;                  /* a parameter given by name: its name in pdata */
} sql_val;

typedef struct mcp_sqlite mcp_sqlite;

/* One statement, or a script for exec. An op (op.h): the engine is the db's
 * queue, then the thread pool, then after_work; the other holder its Lua
 * handle. Freed by job_free once both let go. */
typedef struct sql_job {
  mcp_op op;                             /* first */
  uv_work_t work;
  mcp_sqlite *db;                        /* valid while the engine holds it */
  struct sql_job *prev, *next;           /* the db's queue */
  int kind;                              /* KIND_* */
  char *sql;
  size_t sqllen;
  sql_val *params;
  int nparams;
  int named;                             /* params by name, not position */
  mcp_buf pdata;                         /* parameter bytes and names: bound SQLITE_STATIC */
  atomic_int stop;                       /* set by the loop thread: cancelled while running */
  uint64_t busy_since;                   /* the pool thread's: when the busy handler began */
  /* the outcome, written by whoever runs it, read after it is done */
  int rc;                                /* SQLITE_OK or the error */
  char *errmsg;
  sqlite3_int64 changes, last_id;
  mcp_buf data;                          /* result bytes: column names, text, blobs */
  sql_val *vals;                         /* ncols names, then nrows rows of ncols values */
  size_t nvals, capvals, nrows;
  int ncols;
  unsigned prepared, hits;               /* statements prepared, found in the cache */
  unsigned queued : 1;
  unsigned running : 1;                  /* on the pool, or its after_work is due */
  unsigned taken : 1;                    /* its rows were pushed (and freed here) */
} sql_job;

/* The transaction a call holds open on a db: an op of that call, so that
 * when the call stops or ends with it open (a cancel, an abort, a handler
 * that never committed) the db rolls it back. Owned by the db (db->tx);
 * freed when the transaction ends or by its cancel. */
typedef struct {
  mcp_op op;                             /* first; op.call is the owner */
  mcp_sqlite *db;
} sql_tx;

typedef struct {
  char *sql;
  size_t len;
  sqlite3_stmt *st;
  uint64_t used;
} cache_ent;

/* A connection. Owned by its Lua handle and by a job or rollback while one
 * runs on the pool: closed (db_try_close) once asked to and idle, freed
 * (db_unref) once closed and its handle is gone. */
struct mcp_sqlite {
  sqlite3 *conn;                         /* NULL once closed */
  char *path;
  sql_job *head, *tail;                  /* queued jobs, FIFO */
  sql_job *running;
  sql_tx *tx;                            /* a call's open transaction, or NULL */
  uv_work_t rollback;                    /* ROLLBACK of a transaction its call left open */
  cache_ent cache[CACHE_MAX];            /* the running job's thread's; LRU by used */
  int ncache, cached;                    /* cached: ncache as of the last job, for info */
  uint64_t tick;
  unsigned busy_ms;
  size_t max_bytes;
  uint64_t prepared, hits;
  unsigned handle : 1;                   /* its Lua handle holds it */
  unsigned closing : 1;
  unsigned rolling_back : 1;
  unsigned rollback_wanted : 1;
};

/* The primary code of rc by name ("SQLITE_BUSY"). */
const char *mcp__sqlite_rc_name(int rc);
/* malloc that aborts when out of memory. */
void *mcp__sqlite_xmalloc(size_t n);
/* A job filled in (kind, text, parameters) becomes an op of call c (NULL:
 * a plugin's top level) on db; then, once its Lua handle holds it, it
 * starts: queued, or run at once at a top level. */
void mcp__sqlite_job_init(mcp_sqlite *db, sql_job *j, mcp_call *c);
void mcp__sqlite_job_start(mcp_sqlite *db, sql_job *j, mcp_call *c);
/* Ask to close: the queued jobs are cancelled; the running one finishes. */
void mcp__sqlite_close(mcp_sqlite *db);
/* Free db once it is closed and its handle is gone. */
void mcp__sqlite_unref(mcp_sqlite *db);

#endif
