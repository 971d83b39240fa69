/* The engine of mcp.sqlite: a connection, its queue of jobs run on libuv's
 * thread pool, its statement cache, the transaction a call holds, and the
 * interrupt of a cancelled job (sqlite.c is its Lua binding). A db is one
 * connection and a FIFO of jobs; the loop thread starts one job at a time on
 * the thread pool and the next from the last one's after_work, so a
 * connection is only ever used by one thread at a time (it is opened
 * FULLMUTEX all the same: sqlite3_interrupt comes from the loop thread while
 * a job runs). */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <sqlite3.h>
#include <uv.h>

#include "buf.h"
#include "op.h"
#include "sched.h"
#include "fail.h"
#include "spans.h"
#include "sqlite_int.h"

#define PROGRESS_OPS 1000                /* VM instructions between looks at a job's stop flag */

static const char *const rc_names[] = {
  "SQLITE_OK", "SQLITE_ERROR", "SQLITE_INTERNAL", "SQLITE_PERM", "SQLITE_ABORT", "SQLITE_BUSY",
  "SQLITE_LOCKED", "SQLITE_NOMEM", "SQLITE_READONLY", "SQLITE_INTERRUPT", "SQLITE_IOERR",
  "SQLITE_CORRUPT", "SQLITE_NOTFOUND", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PROTOCOL",
  "SQLITE_EMPTY", "SQLITE_SCHEMA", "SQLITE_TOOBIG", "SQLITE_CONSTRAINT", "SQLITE_MISMATCH",
  "SQLITE_MISUSE", "SQLITE_NOLFS", "SQLITE_AUTH", "SQLITE_FORMAT", "SQLITE_RANGE",
  "SQLITE_NOTADB", "SQLITE_NOTICE", "SQLITE_WARNING",
};

const char *mcp__sqlite_rc_name(int rc) {
  rc &= 0xff;                            /* the primary code of an extended one */
  return rc < (int)(sizeof rc_names / sizeof *rc_names) ? rc_names[rc] : "SQLITE_ERROR";
}

void *mcp__sqlite_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) abort();
  return p;
}

/* The statement cache. */

static void cache_clear(mcp_sqlite *db) {
  for (int i = 0; i < db->ncache; i++) {
    sqlite3_finalize(db->cache[i].st);
    free(db->cache[i].sql);
  }
  db->ncache = 0;
}

static sqlite3_stmt *cache_get(mcp_sqlite *db, const char *sql, size_t len) {
  for (int i = 0; i < db->ncache; i++) {
    cache_ent *e = &db->cache[i];
    if (e->len == len && memcmp(e->sql, sql, len) == 0) {
      e->used = ++db->tick;
      return e->st;
    }
  }
  return NULL;
}

static void cache_put(mcp_sqlite *db, const char *sql, size_t len, sqlite3_stmt *st) {
  cache_ent *e = &db->cache[db->ncache];
  if (db->ncache == CACHE_MAX) {         /* evict the least recently used */
    e = &db->cache[0];
    for (int i = 1; i < CACHE_MAX; i++)
      if (db->cache[i].used < e->used) e = &db->cache[i];
    sqlite3_finalize(e->st);
    free(e->sql);
  } else {
    db->ncache++;
  }
  e->sql = mcp__sqlite_xmalloc(len);
  memcpy(e->sql, sql, len);
  e->len = len;
  e->st = st;
  e->used = ++db->tick;
}

/* Running a job: job_exec runs on the pool (or at once at a top level). */

static void job_fail(sql_job *j, int rc, const char *msg) {
  j->rc = rc;
  free(j->errmsg);
  j->errmsg = mcp__sqlite_xmalloc(strlen(msg) + 1);
  strcpy(j->errmsg, msg);
}

static int on_progress(void *arg) {
  sql_job *j = arg;
  return atomic_load(&j->stop);
}

static int on_busy(void *arg, int n) {
  sql_job *j = arg;
  if (atomic_load(&j->stop)) return 0;
  if (n == 0) j->busy_since = uv_hrtime();
  if (uv_hrtime() - j->busy_since >= (uint64_t)j->db->busy_ms * 1000000u) return 0;
  uv_sleep(n < 10 ? 1 : 5);
  return 1;
}

/* Only whitespace and semicolons from p to end. */
static int blank(const char *p, const char *end) {
  for (; p < end; p++)
    if (!strchr(" \t\r\n\f\v;", *p) || *p == '\0') return 0;
  return 1;
}

static sql_val *val_new(sql_job *j) {
  if (j->nvals == j->capvals) {
    size_t cap = j->capvals ? j->capvals * 2 : 16;
    sql_val *v = realloc(j->vals, cap * sizeof *v);
    if (v == NULL) abort();
    j->vals = v;
    j->capvals = cap;
  }
  memset(&j->vals[j->nvals], 0, sizeof *j->vals);
  return &j->vals[j->nvals++];
}

static void val_bytes(sql_job *j, sql_val *v, int type, const void *p, size_t n) {
  v->type = type;
  v->v.s.off = j->data.len;
  v->v.s.len = n;
  if (n > 0) mcp_buf_add(&j->data, p, n);
}

static int row_add(sql_job *j, sqlite3_stmt *st) {
  char msg[96];
  for (int c = 0; c < j->ncols; c++) {
    sql_val *v = val_new(j);
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER:
      v->type = SQLITE_INTEGER;
      v->v.i = sqlite3_column_int64(st, c);
      break;
    case SQLITE_FLOAT:
      v->type = SQLITE_FLOAT;
      v->v.d = sqlite3_column_double(st, c);
      break;
    case SQLITE_TEXT: {
      const unsigned char *p = sqlite3_column_text(st, c);
      val_bytes(j, v, SQLITE_TEXT, p, (size_t)sqlite3_column_bytes(st, c));
      break;
    }
    case SQLITE_BLOB: {
      const void *p = sqlite3_column_blob(st, c);
      val_bytes(j, v, SQLITE_BLOB, p, (size_t)sqlite3_column_bytes(st, c));
      break;
    }
    default:
      v->type = SQLITE_NULL;
    }
  }
  j->nrows++;
  if (j->data.len + j->nvals * sizeof *j->vals > j->db->max_bytes) {
    snprintf(msg, sizeof msg, "result larger than max_bytes (%zu)", j->db->max_bytes);
    job_fail(j, SQLITE_TOOBIG, msg);
    return SQLITE_TOOBIG;
  }
  return SQLITE_OK;
}

static int bind_val(sql_job *j, sqlite3_stmt *st, int i, const sql_val *v) {
  const char *p = v->v.s.len ? j->pdata.data + v->v.s.off : "";   /* not NULL: that binds NULL */
  switch (v->type) {
  case SQLITE_INTEGER: return sqlite3_bind_int64(st, i, v->v.i);
  case SQLITE_FLOAT: return sqlite3_bind_double(st, i, v->v.d);
  case SQLITE_TEXT: return sqlite3_bind_text64(st, i, p, v->v.s.len, SQLITE_STATIC, SQLITE_UTF8);
  case SQLITE_BLOB: return sqlite3_bind_blob64(st, i, p, v->v.s.len, SQLITE_STATIC);
  default: return sqlite3_bind_null(st, i);
  }
}

static const sql_val *param_named(sql_job *j, const char *name) {
  size_t n = strlen(name);
  for (int k = 0; k < j->nparams; k++) {
    const sql_val *v = &j->params[k];
    if (v->namelen == n && memcmp(j->pdata.data + v->name, name, n) == 0) return v;
  }
  return NULL;
}

/* Bind the job's parameters; a statement without any takes none. */
static int stmt_bind(sql_job *j, sqlite3_stmt *st) {
  int n = sqlite3_bind_parameter_count(st), rc = SQLITE_OK;
  char msg[128];
  if (n == 0 || j->nparams == 0) return SQLITE_OK;
  if (!j->named) {
    if (j->nparams > n) {
      snprintf(msg, sizeof msg, "%d parameters given, the statement takes %d", j->nparams, n);
      job_fail(j, SQLITE_RANGE, msg);
      return SQLITE_RANGE;
    }
    for (int i = 0; i < j->nparams && rc == SQLITE_OK; i++) rc = bind_val(j, st, i + 1, &j->params[i]);
  } else {
    for (int i = 1; i <= n && rc == SQLITE_OK; i++) {
      const char *name = sqlite3_bind_parameter_name(st, i);
      const sql_val *v;
      if (name == NULL || name[0] == '?') {
        snprintf(msg, sizeof msg, "parameter %d has no name, and params are given by name", i);
        job_fail(j, SQLITE_RANGE, msg);
        return SQLITE_RANGE;
      }
      if ((v = param_named(j, name + 1)) != NULL) rc = bind_val(j, st, i, v);
    }
  }
  if (rc != SQLITE_OK) job_fail(j, rc, sqlite3_errmsg(sqlite3_db_handle(st)));
  return rc;
}

static int stmt_run(sql_job *j, sqlite3_stmt *st) {
  int rc;
  if (j->kind == KIND_QUERY) {
    j->ncols = sqlite3_column_count(st);
    for (int c = 0; c < j->ncols; c++) {
      const char *name = sqlite3_column_name(st, c);
      if (name == NULL) name = "";
      val_bytes(j, val_new(j), SQLITE_TEXT, name, strlen(name));
    }
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (j->kind == KIND_QUERY && row_add(j, st) != SQLITE_OK) return j->rc;
  }
  if (rc == SQLITE_DONE) return SQLITE_OK;
  job_fail(j, rc, sqlite3_errmsg(sqlite3_db_handle(st)));
  return rc;
}

/* Each statement of the text in turn (query: one). A text that is one
 * statement is prepared once and kept in the cache. */
static void job_exec(sql_job *j) {
  mcp_sqlite *db = j->db;
  sqlite3 *conn = db->conn;
  const char *sql = j->sql, *end = j->sql + j->sqllen;
  sqlite3_int64 before = sqlite3_total_changes64(conn);
  int first = 1;
  sqlite3_progress_handler(conn, PROGRESS_OPS, on_progress, j);
  sqlite3_busy_handler(conn, on_busy, j);
  while (j->rc == SQLITE_OK && !atomic_load(&j->stop) && !blank(sql, end)) {
    sqlite3_stmt *st = first ? cache_get(db, j->sql, j->sqllen) : NULL;
    const char *tail = end;
    int cached = st != NULL, keep = 0, rc;
    if (cached) {
      j->hits++;
    } else {
      rc = sqlite3_prepare_v3(conn, sql, (int)(end - sql), SQLITE_PREPARE_PERSISTENT, &st, &tail);
      if (rc != SQLITE_OK) {
        job_fail(j, rc, sqlite3_errmsg(conn));
        break;
      }
      if (st == NULL) break;             /* only comments were left */
      j->prepared++;
      keep = first && blank(tail, end);
    }
    if (!first && j->kind == KIND_QUERY) {
      job_fail(j, SQLITE_MISUSE, "a query is one statement (db:exec runs several)");
      sqlite3_finalize(st);
      break;
    }
    if (stmt_bind(j, st) == SQLITE_OK) stmt_run(j, st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (keep) cache_put(db, j->sql, j->sqllen, st);
    else if (!cached) sqlite3_finalize(st);
    sql = tail;
    first = 0;
  }
  j->changes = sqlite3_total_changes64(conn) - before;
  j->last_id = sqlite3_last_insert_rowid(conn);
}

static void job_work(uv_work_t *w) { job_exec(w->data); }

/* Run: the text and the parameters are not needed any more. */
static void job_inputs_free(sql_job *j) {
  free(j->sql);
  free(j->params);
  mcp_buf_free(&j->pdata);
  j->sql = NULL;
  j->params = NULL;
  j->nparams = 0;
}

/* The db's queue and its transaction. */

static void db_next(mcp_sqlite *db);

static void queue_unlink(mcp_sqlite *db, sql_job *j) {
  if (j->prev) j->prev->next = j->next; else db->head = j->next;
  if (j->next) j->next->prev = j->prev; else db->tail = j->prev;
  j->prev = j->next = NULL;
  j->queued = 0;
}

static void tx_cancel(mcp_op *op);
static void tx_free(mcp_op *op) { free(op); }
static int tx_push(lua_State *L, mcp_op *op) {
  (void)op;
  lua_pushboolean(L, 1);
  return 1;
}
static const mcp_op_type tx_type = { "sql transaction", tx_cancel, tx_push, tx_free };

/* The transaction ended (committed, rolled back, or the db closes). */
static void tx_end(mcp_sqlite *db) {
  sql_tx *tx = db->tx;
  db->tx = NULL;
  tx->db = NULL;
  mcp_op_done(&tx->op);
  mcp_op_release(&tx->op);
}

/* Its call stops or ends with the transaction open: roll it back before
 * anything else runs. */
static void tx_cancel(mcp_op *op) {
  sql_tx *tx = (sql_tx *)op;
  mcp_sqlite *db = tx->db;
  db->tx = NULL;
  db->rollback_wanted = 1;
  mcp_op_release(op);
  db_next(db);
}

/* After a job of call c (NULL: a cancelled one): a transaction it opened
 * becomes c's, one that is over frees the db for every call. */
static void tx_update(mcp_sqlite *db, mcp_call *c) {
  sql_tx *tx;
  if (sqlite3_get_autocommit(db->conn)) {
    if (db->tx != NULL) tx_end(db);
    return;
  }
  if (db->tx != NULL) return;
  if (c == NULL) {
    db->rollback_wanted = 1;
    return;
  }
  tx = calloc(1, sizeof *tx);
  if (tx == NULL) abort();
  tx->db = db;
  mcp_op_init(&tx->op, &tx_type, c);
  db->tx = tx;
}

static void db_try_close(mcp_sqlite *db) {
  if (db->conn == NULL || db->running != NULL || db->rolling_back) return;
  cache_clear(db);
  sqlite3_close_v2(db->conn);
  db->conn = NULL;
}

void mcp__sqlite_unref(mcp_sqlite *db) {
  if (db->handle || db->conn != NULL) return;
  free(db->path);
  free(db);
}

void mcp__sqlite_close(mcp_sqlite *db) {
  db->closing = 1;
  while (db->head != NULL) mcp_op_cancel(&db->head->op, "database closed");
  if (db->tx != NULL) tx_end(db);
  db->rollback_wanted = 0;               /* closing rolls back */
  db_try_close(db);
}

/* The db is idle: start what is next, or finish closing (may free db). */
static void db_settle(mcp_sqlite *db) {
  if (!db->closing) {
    db_next(db);
    return;
  }
  db_try_close(db);
  mcp__sqlite_unref(db);
}

static void rollback_work(uv_work_t *w) {
  mcp_sqlite *db = w->data;
  sqlite3_progress_handler(db->conn, 0, NULL, NULL);
  sqlite3_busy_timeout(db->conn, (int)db->busy_ms);
  sqlite3_exec(db->conn, "ROLLBACK", NULL, NULL, NULL);   /* an error: nothing to roll back */
}

static void rollback_after(uv_work_t *w, int status) {
  mcp_sqlite *db = w->data;
  (void)status;
  db->rolling_back = 0;
  db_settle(db);
}

static void job_after(uv_work_t *w, int status) {
  sql_job *j = w->data;
  mcp_sqlite *db = j->db;
  (void)status;
  j->running = 0;
  db->running = NULL;
  db->prepared += j->prepared;
  db->hits += j->hits;
  db->cached = db->ncache;
  job_inputs_free(j);
  if (!db->closing) tx_update(db, j->op.cancelled ? NULL : j->op.call);
  if (j->op.span) mcp_span_sql_end(&j->op, j->rc);
  mcp_op_done(&j->op);
  mcp_op_release(&j->op);                /* may free j */
  db_settle(db);
}

/* The first queued job that may run: any, or only the transaction owner's. */
static void db_next(mcp_sqlite *db) {
  mcp_call *owner;
  sql_job *j;
  if (db->conn == NULL || db->closing || db->running != NULL || db->rolling_back) return;
  if (db->rollback_wanted) {
    db->rollback_wanted = 0;
    db->rolling_back = 1;
    db->rollback.data = db;
    if (uv_queue_work(mcp_sched_loop(), &db->rollback, rollback_work, rollback_after) != 0) abort();
    return;
  }
  owner = db->tx != NULL ? db->tx->op.call : NULL;
  for (j = db->head; j != NULL && owner != NULL && j->op.call != owner; j = j->next) {}
  if (j == NULL) return;
  queue_unlink(db, j);
  j->running = 1;
  db->running = j;
  if (uv_queue_work(mcp_sched_loop(), &j->work, job_work, job_after) != 0) abort();
}

/*
 * Cancelling a job. A queued job is only unlinked: it never reaches the
 * connection. The running one is stopped where it runs, on a pool thread,
 * while this is the loop thread.
 *
 * sqlite3_interrupt alone is not enough, because of a race. It sets a flag on
 * the connection that every running statement checks; but a statement that
 * *starts* while no other is active clears that flag first (sqlite3_step,
 * and the parser, so that an old interrupt cannot kill a new statement). The
 * pool thread may be between the moment it picked the job up and the
 * sqlite3_step of its statement (preparing it, binding, or between two
 * statements of a script) when the cancel comes: the interrupt would then be
 * lost, and a query running for minutes would hold the connection and a pool
 * thread. So the job also has its own stop flag, set before the interrupt:
 * the progress handler (every PROGRESS_OPS VM instructions) and the busy
 * handler read it, and job_exec reads it between statements. It belongs to
 * this job alone, so nothing is ever left set for another.
 *
 * The converse: the interrupt may come just after the job's last statement
 * ended, on the pool, before its after_work. The flag then stays set with no
 * statement to stop; the next job (only ever started from that after_work)
 * begins with no statement active, so its first statement clears it. Every
 * job resets its statements before it ends, so none stays active between
 * jobs and this holds. A later statement of the db, of this call or another,
 * is never hit.
 *
 * Either way the waiter is woken at once by op.c (nil, "cancelled: ..."),
 * and the job is the pool's until job_after releases it.
 */
static void job_cancel(mcp_op *op) {
  sql_job *j = (sql_job *)op;
  if (j->queued) {
    queue_unlink(j->db, j);
    mcp_op_release(op);
  } else if (j->running) {
    atomic_store(&j->stop, 1);
    sqlite3_interrupt(j->db->conn);
  }
}

static int job_push(lua_State *L, mcp_op *op) {
  sql_job *j = (sql_job *)op;
  const sql_val *v;
  int base;
  if (j->rc != SQLITE_OK) return mcp_push_fail(L, mcp_code_sqlite(j->rc), "%s (%s)", j->errmsg, mcp__sqlite_rc_name(j->rc));
  if (j->kind == KIND_EXEC) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, j->changes);
    lua_setfield(L, -2, "changes");
    lua_pushinteger(L, j->last_id);
    lua_setfield(L, -2, "last_insert_id");
    return 1;
  }
  if (j->taken) return luaL_error(L, "sql: the rows were taken already");
  luaL_checkstack(L, j->ncols + 4, "result columns");
  base = lua_gettop(L);
  for (int c = 0; c < j->ncols; c++)     /* stack: names... */
    lua_pushlstring(L, j->data.data + j->vals[c].v.s.off, j->vals[c].v.s.len);
  lua_createtable(L, j->nrows < INT_MAX ? (int)j->nrows : 0, 0);   /* stack: names... rows */
  v = j->vals + j->ncols;
  for (size_t r = 0; r < j->nrows; r++) {
    lua_createtable(L, 0, j->ncols);     /* stack: names... rows row */
    for (int c = 0; c < j->ncols; c++, v++) {
      if (v->type == SQLITE_NULL) continue;
      lua_pushvalue(L, base + 1 + c);
      if (v->type == SQLITE_INTEGER) lua_pushinteger(L, v->v.i);
      else if (v->type == SQLITE_FLOAT) lua_pushnumber(L, v->v.d);
      else lua_pushlstring(L, v->v.s.len ? j->data.data + v->v.s.off : "", v->v.s.len);
      lua_rawset(L, -3);
    }
    lua_rawseti(L, -2, (lua_Integer)r + 1);
  }
  lua_replace(L, base + 1);
  lua_settop(L, base + 1);
  j->taken = 1;                          /* Lua has them: free the copy now, not at __gc */
  mcp_buf_free(&j->data);
  free(j->vals);
  j->vals = NULL;
  j->nvals = j->capvals = j->nrows = 0;
  return 1;
}

static void job_free(mcp_op *op) {
  sql_job *j = (sql_job *)op;
  free(j->sql);
  free(j->params);
  mcp_buf_free(&j->pdata);
  mcp_buf_free(&j->data);
  free(j->vals);
  free(j->errmsg);
  free(j);
}

static const mcp_op_type job_type = { "sql", job_cancel, job_push, job_free };

/* At a plugin's top level nothing can wait: the job runs here and now,
 * unless statements of requests are using the db. */
static void job_now(mcp_sqlite *db, sql_job *j) {
  if (db->running || db->head || db->tx || db->rolling_back || db->rollback_wanted) {
    job_fail(j, SQLITE_BUSY, "database is busy: requests are using it");
  } else {
    job_exec(j);
    job_inputs_free(j);
    db->prepared += j->prepared;
    db->hits += j->hits;
    db->cached = db->ncache;
  }
  mcp_op_done(&j->op);
  mcp_op_release(&j->op);
}

void mcp__sqlite_job_init(mcp_sqlite *db, sql_job *j, mcp_call *c) {
  j->db = db;
  j->work.data = j;
  mcp_op_init(&j->op, &job_type, c);
}

void mcp__sqlite_job_start(mcp_sqlite *db, sql_job *j, mcp_call *c) {
  if (c == NULL) {
    job_now(db, j);
    return;
  }
  j->queued = 1;
  j->prev = db->tail;
  if (db->tail) db->tail->next = j; else db->head = j;
  db->tail = j;
  db_next(db);
}
