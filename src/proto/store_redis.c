/* The task store on Redis (store.h), through hiredis's asynchronous API
 * polled on the loop (redis_uv.c): two connections (commands; pub/sub), a heartbeat
 * key per instance, and Lua scripts that make each task operation one
 * atomic round trip.
 *
 * Keys (in the URL's DB): luamcp:task:ID (a hash: the record, expiring with
 * the task's ttl), luamcp:live (the ids of tasks not terminal, for the
 * sweep), luamcp:instance:IID (the heartbeat, HEARTBEAT_TTL_MS). Channels
 * (global in Redis, so they name the DB): luamcp:DB:notify ("n" + a
 * DetailedTask, for every instance's listeners) and luamcp:DB:i:IID (to the
 * owner: "c" + id, a cancel; "u" + id + " " + inputResponses; "a" + id, its
 * task was failed for want of a heartbeat: the owner lives, so it was cut
 * off, and stops the handler). LUA_COMMON derives the latter's prefix from
 * the former (luamcp:DB:notify less "notify").
 *
 * Races, and how they are resolved:
 * - A cancel on one instance races the task's completion on its owner.
 *   Every write of a record is the PUT script, which refuses to change a
 *   record that is terminal; the cancel is the CANCEL script, which acts only
 *   on one that is not. Redis runs scripts one at a time, so exactly one of
 *   them wins. If the cancel wins, the owner's completion is refused and the
 *   reply (adopt) makes the owner's copy cancelled too; the result is
 *   dropped, as it is for a local cancel. If the completion wins, the cancel
 *   finds a terminal task and does nothing (the extension's ack either way).
 * - The record and its message: a script publishes only after it wrote, in
 *   the same atomic step, so a listener told of a state can read it back.
 *   The owner's writes go in order on one connection, so notifications of a
 *   task arrive in the order of its states.
 * - An instance dying mid-write: a script runs whole or not at all, so a
 *   record is never half written; what the dead instance did not write is
 *   lost with it, and its heartbeat key expires. A reader (GET, CANCEL,
 *   UPDATE) or the sweep that finds a task not terminal whose owner has no
 *   heartbeat fails it, with the reason, in the same script (no window for
 *   a second reader to do it again).
 * - An owner that was only cut off (its heartbeat expired, it lives): its
 *   tasks may be failed meanwhile. When it is back, resync writes its tasks
 *   again; PUT refuses the terminal ones and adopt stops their handlers, so
 *   the store's word stands and no task comes back to life. The reap also
 *   tells the owner ("a"): one that lives hears it when it is back and
 *   stops the handler at once, not when it would have finished.
 * - Redis restarted empty: resync writes every local task again. Until
 *   every instance is back, another's task is not in the store: the first
 *   instance back after a loss finds the store's mark (luamcp:up) gone and
 *   sets luamcp:refill for as long as the others may take to come back
 *   (REFILL_MS); a task missing meanwhile is "the store is being refilled:
 *   retry" (-32603), not "not found" (-32602), which a client would take as
 *   the task's end. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "crypto.h"
#include "log.h"
#include "metrics.h"
#include "redis_uv.h"
#include "store.h"

#define HEARTBEAT_MS      1000       /* the heartbeat key is refreshed this often */
#define HEARTBEAT_TTL_MS  5000       /* and outlives a missed beat or four */
#define SWEEP_EVERY       2          /* heartbeats between two sweeps */
#define STALL_MS          3000       /* no reply for this long with commands pending: reconnect */
#define BACKOFF_MIN_MS    100
#define BACKOFF_MAX_MS    5000
#define REFILL_MS         (BACKOFF_MAX_MS + HEARTBEAT_MS)   /* every instance reconnected */
#define REFILLING "task store unavailable: Redis restarted empty and its tasks are being written again; retry"

void *mcp_store;

typedef struct {
  redisAsyncContext *ac;
  int up;                        /* connected and its DB selected (or subscribed) */
  uint64_t since_ns;             /* when the connect began */
} conn;

static struct {
  uv_loop_t *loop;
  mcp_store_hooks hooks;
  char url[300];
  char ip[64];                   /* HOST, resolved once */
  int port, db;
  char iid[80];                  /* this instance */
  char k_instance[120];          /* luamcp:instance:IID */
  char ch_notify[64], ch_owner_prefix[64], ch_self[160];
  conn cmd, sub;
  uv_timer_t beat, retry;
  unsigned beats;
  unsigned backoff_ms;
  int inflight;
  uint64_t progress_ns;          /* the last reply, or when inflight left 0 */
  char down[200];                /* why the store is unavailable; "" when up */
  int closing;
  int was_down;                  /* resync once both connections are up again */
  unsigned long long ncommands, nfailed, ndown;   /* for /metrics */
  int warned;                    /* the loss was logged as a warning */
} S;

/* Scripts. Shared Lua: the record as a table, a stopped owner's task failed. */
#define LUA_COMMON \
  "local function isterm(s) return s=='completed' or s=='failed' or s=='cancelled' end\n" \
  "local function load(k) local a=redis.call('HGETALL',k) if #a==0 then return nil end\n" \
  "  local h={} for i=1,#a,2 do h[a[i]]=a[i+1] end return h end\n" \
  "local function render(h) local s='{\"taskId\":\"'..h.id..'\",\"status\":\"'..h.status..'\",'\n" \
  "  if h.message~='' then s=s..'\"statusMessage\":'..cjson.encode(h.message)..',' end\n" \
  "  return s..'\"createdAt\":\"'..h.created..'\",\"lastUpdatedAt\":\"'..h.updated..'\",\"ttlMs\":'\n" \
  "    ..h.ttl..',\"pollIntervalMs\":1000'..h.detail..'}' end\n" \
  "local function save(k,h) redis.call('HSET',k,'status',h.status,'message',h.message,\n" \
  "  'updated',h.updated,'detail',h.detail) if isterm(h.status) then redis.call('SREM','luamcp:live',h.id) end\n" \
  "  if h.ext=='1' then redis.call('PUBLISH',NOTIFY,'n'..h.scope..'\\n'..render(h)) end end\n" \
  "local function reap(k,h,now) if isterm(h.status) or redis.call('EXISTS','luamcp:instance:'..h.owner)==1\n" \
  "  then return false end\n" \
  "  h.status='failed' h.message='the instance running the task ('..h.owner..') stopped: no heartbeat'\n" \
  "  h.updated=now h.detail=',\"error\":{\"code\":-32603,\"message\":'..cjson.encode(h.message)..'}'\n" \
  "  save(k,h) redis.call('PUBLISH',NOTIFY:sub(1,-7)..'i:'..h.owner,'a'..h.id) return true end\n"

/* KEYS: task. ARGV: notify channel, now, then the fields as name value pairs,
 * expire ms, payload ("" for none). */
static const char lua_put[] =
  "local NOTIFY=ARGV[1]\n" LUA_COMMON
  "local cur=redis.call('HGET',KEYS[1],'status')\n"
  "if cur and isterm(cur) then return {cur, redis.call('HGET',KEYS[1],'message') or ''} end\n"
  "local n=#ARGV redis.call('HSET',KEYS[1],unpack(ARGV,3,n-2))\n"
  "redis.call('PEXPIRE',KEYS[1],ARGV[n-1])\n"
  "local h=load(KEYS[1])\n"
  "if isterm(h.status) then redis.call('SREM','luamcp:live',h.id) else redis.call('SADD','luamcp:live',h.id) end\n"
  "if ARGV[n]~='' then redis.call('PUBLISH',NOTIFY,ARGV[n]) end\n"
  "return {'ok'}\n";

/* A task not in the store: "refilling" while luamcp:refill lives. */
#define LUA_MISSING "local function missing(r) if redis.call('EXISTS','luamcp:refill')==1 then return {'refilling'} end\n" \
  "  return r end\n"

/* KEYS: task. ARGV: notify channel, now. The record (after a reap), or nil. */
static const char lua_get[] =
  "local NOTIFY=ARGV[1]\n" LUA_COMMON LUA_MISSING
  "local h=load(KEYS[1]) if not h then return missing(false) end\n"
  "reap(KEYS[1],h,ARGV[2])\n"
  "return redis.call('HGETALL',KEYS[1])\n";

/* KEYS: task. ARGV: notify channel, now, scope, subject, owner channel
 * prefix, then cancel: message; update: "u", responses. */
static const char lua_cancel[] =
  "local NOTIFY=ARGV[1]\n" LUA_COMMON LUA_MISSING
  "local h=load(KEYS[1])\n"
  "if not h then return missing({'notfound'}) end\n"
  "if h.scope~=ARGV[3] or h.subject~=ARGV[4] then return {'notfound'} end\n"
  "if reap(KEYS[1],h,ARGV[2]) or isterm(h.status) then return {'terminal',h.status} end\n"
  "if ARGV[6]=='u' then\n"
  "  local n=redis.call('PUBLISH',ARGV[5]..h.owner,'u'..h.id..' '..ARGV[7])\n"
  "  if n==0 then return {'unreachable',h.owner} end return {'ok',h.owner} end\n"
  "h.status='cancelled' h.message=ARGV[6] h.updated=ARGV[2] h.detail=''\n"
  "save(KEYS[1],h)\n"
  "redis.call('PUBLISH',ARGV[5]..h.owner,'c'..h.id)\n"
  "return {'ok',h.owner}\n";

/* ARGV: notify channel, now. Fails the live tasks of stopped instances. */
static const char lua_sweep[] =
  "local NOTIFY=ARGV[1]\n" LUA_COMMON
  "local n=0\n"
  "for _,id in ipairs(redis.call('SMEMBERS','luamcp:live')) do\n"
  "  local k='luamcp:task:'..id local h=load(k)\n"
  "  if not h or isterm(h.status) then redis.call('SREM','luamcp:live',id)\n"
  "  elseif reap(k,h,ARGV[2]) then n=n+1 end\n"
  "end\n"
  "return n\n";

static void connect_all(void);
static void conn_free(void *c);
static void schedule_retry(void);
static void close_done(void);

/* Wall-clock ISO 8601 with milliseconds, as task.c writes its times. */
static void now_iso(char *out, size_t cap) {
  uv_timeval64_t tv;
  struct tm tm;
  time_t sec;
  char s[32];
  uv_gettimeofday(&tv);
  sec = (time_t)tv.tv_sec;
  gmtime_r(&sec, &tm);
  strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, cap, "%s.%03dZ", s, (int)(tv.tv_usec / 1000));
}

const char *mcp_store_instance(void) { return S.iid; }

static void set_down(const char *what, const char *why) {
  char msg[sizeof S.down];
  snprintf(msg, sizeof msg, "%s%s%s", what, why ? ": " : "", why ? why : "");
  /* A warning when it goes; then, while it stays away, what changes. */
  if (strcmp(msg, S.down) != 0 && !S.closing)
    mcp_log(S.warned ? MCP_LOG_INFO : MCP_LOG_WARNING, "task store %s: %s (retrying)", S.url, msg);
  S.warned = 1;
  if (!S.was_down) S.ndown++;
  snprintf(S.down, sizeof S.down, "%s", msg);
  S.was_down = 1;
}

/* A script's {'refilling'}: the task is missing while the store refills. */
static int refilling(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->str != NULL &&
         strcmp(r->element[0]->str, "refilling") == 0;
}

/* Commands: each carries a pending op (freed in on_reply). */

enum { OP_PLAIN, OP_PUT, OP_GET, OP_CANCEL };

typedef struct {
  int kind;
  mcp_store_cb cb;
  void *ud;
  char id[40];
  char status[20];             /* OP_PUT: the status written */
} store_op;

static void record_from(const redisReply *r, mcp_store_task *t) {
  memset(t, 0, sizeof *t);
  t->id = t->status = t->message = t->created = t->updated = t->owner = t->scope = t->subject =
    t->detail = "";
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    const char *k = r->element[i]->str, *v = r->element[i + 1]->str;
    if (k == NULL || v == NULL) continue;
    if (strcmp(k, "id") == 0) t->id = v;
    else if (strcmp(k, "status") == 0) t->status = v;
    else if (strcmp(k, "message") == 0) t->message = v;
    else if (strcmp(k, "created") == 0) t->created = v;
    else if (strcmp(k, "updated") == 0) t->updated = v;
    else if (strcmp(k, "ttl") == 0) t->ttl_ms = strtoll(v, NULL, 10);
    else if (strcmp(k, "ext") == 0) t->ext = v[0] == '1';
    else if (strcmp(k, "owner") == 0) t->owner = v;
    else if (strcmp(k, "scope") == 0) t->scope = v;
    else if (strcmp(k, "subject") == 0) t->subject = v;
    else if (strcmp(k, "detail") == 0) t->detail = v;
  }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv) {
  redisReply *r = reply;
  store_op *op = priv;
  const char *err = NULL;
  char why[240];
  (void)ac;
  S.inflight--;
  S.progress_ns = uv_hrtime();
  if (r == NULL || r->type == REDIS_REPLY_ERROR) S.nfailed++;
  if (r == NULL) {
    snprintf(why, sizeof why, "task store unavailable: %s", S.down[0] ? S.down : "connection lost");
    err = why;
  } else if (r->type == REDIS_REPLY_ERROR) {
    snprintf(why, sizeof why, "task store error: %.200s", r->str);
    mcp_error("task store %s: %s", S.url, why);
    err = why;
  }
  if (op == NULL) return;
  switch (op->kind) {
    case OP_PUT:
      if (err) mcp_warn("task %s: not written to the store: %s", op->id, err);
      else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->str &&
               strcmp(r->element[0]->str, op->status) != 0)
        S.hooks.adopt(op->id, r->element[0]->str, r->element[1]->str ? r->element[1]->str : "");
      if (op->cb != NULL) op->cb(op->ud, err, NULL, "ok");
      break;
    case OP_GET:
      if (!err && refilling(r)) err = REFILLING;
      if (err || r->type != REDIS_REPLY_ARRAY) {
        op->cb(op->ud, err, NULL, NULL);
      } else {
        mcp_store_task t;
        record_from(r, &t);
        op->cb(op->ud, NULL, &t, NULL);
      }
      break;
    case OP_CANCEL:
      if (!err && refilling(r)) err = REFILLING;
      if (err || r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->str == NULL)
        op->cb(op->ud, err ? err : "task store error: unexpected reply", NULL, NULL);
      else
        op->cb(op->ud, NULL, NULL, r->element[0]->str);
      break;
    default:
      break;
  }
  free(op);
}

/* Send argv on the command connection. Not up: the op fails at once (its
 * callback runs now, as an answer given at once would). */
static void submit(store_op *op, int argc, const char **argv, const size_t *lens) {
  if (!S.cmd.up || redisAsyncCommandArgv(S.cmd.ac, on_reply, op, argc, argv, lens) != REDIS_OK) {
    S.inflight++;
    on_reply(NULL, NULL, op);
    return;
  }
  if (S.inflight++ == 0) S.progress_ns = uv_hrtime();
  S.ncommands++;
}

void mcp_store_collect(mcp_buf *b) {
  mcp_metric_head(b, "luamcp_task_store_up", "gauge",
                  "1 while the task store (--store) answers, 0 while it is being reconnected.");
  mcp_metric_sample(b, "luamcp_task_store_up", NULL, S.cmd.up && S.sub.up ? 1 : 0);
  mcp_metric_head(b, "luamcp_task_store_commands_total", "counter", "Commands sent to the task store.");
  mcp_metric_sample(b, "luamcp_task_store_commands_total", NULL, (double)S.ncommands);
  mcp_metric_head(b, "luamcp_task_store_failures_total", "counter",
                  "Task store commands that failed (no connection, an error reply).");
  mcp_metric_sample(b, "luamcp_task_store_failures_total", NULL, (double)S.nfailed);
  mcp_metric_head(b, "luamcp_task_store_disconnects_total", "counter",
                  "Times the task store was lost (each retried with backoff).");
  mcp_metric_sample(b, "luamcp_task_store_disconnects_total", NULL, (double)S.ndown);
}

static store_op *op_new(int kind, const char *id, mcp_store_cb cb, void *ud) {
  store_op *op = calloc(1, sizeof *op);
  if (op == NULL) abort();
  op->kind = kind;
  op->cb = cb;
  op->ud = ud;
  snprintf(op->id, sizeof op->id, "%s", id);
  return op;
}

static void task_key(char *out, size_t cap, const char *id) { snprintf(out, cap, "luamcp:task:%s", id); }

void mcp_store_task_put(const mcp_store_task *t, long long expire_ms, const char *notify,
                        mcp_store_cb cb, void *ud) {
  char key[80], ttl[24], exp[24];
  char *payload = NULL;
  const char *argv[32];
  size_t lens[32];
  int n = 0;
  store_op *op;
  if (!S.cmd.up) {                   /* written again by resync */
    if (cb != NULL) cb(ud, "task store unavailable", NULL, NULL);
    return;
  }
  task_key(key, sizeof key, t->id);
  snprintf(ttl, sizeof ttl, "%lld", t->ttl_ms);
  snprintf(exp, sizeof exp, "%lld", expire_ms > 0 ? expire_ms : 1);
  if (notify != NULL) {              /* "n" scope "\n" params: listeners filter on the scope */
    size_t sl = strlen(t->scope), len = strlen(notify);
    payload = malloc(sl + len + 3);
    if (payload == NULL) abort();
    payload[0] = 'n';
    memcpy(payload + 1, t->scope, sl);
    payload[1 + sl] = '\n';
    memcpy(payload + 2 + sl, notify, len + 1);
  }
#define ARG(s) (argv[n] = (s), lens[n] = strlen(argv[n]), n++)
  ARG("EVAL"); ARG(lua_put); ARG("1"); ARG(key); ARG(S.ch_notify); ARG("");
  ARG("id"); ARG(t->id); ARG("status"); ARG(t->status); ARG("message"); ARG(t->message);
  ARG("created"); ARG(t->created); ARG("updated"); ARG(t->updated); ARG("ttl"); ARG(ttl);
  ARG("ext"); ARG(t->ext ? "1" : "0"); ARG("owner"); ARG(t->owner); ARG("scope"); ARG(t->scope);
  ARG("subject"); ARG(t->subject); ARG("detail"); ARG(t->detail);
  ARG(exp); ARG(payload ? payload : "");
  op = op_new(OP_PUT, t->id, cb, ud);
  snprintf(op->status, sizeof op->status, "%s", t->status);
  submit(op, n, argv, lens);
  free(payload);
}

void mcp_store_task_get(const char *id, mcp_store_cb cb, void *ud) {
  char key[80], now[64];
  const char *argv[8];
  size_t lens[8];
  int n = 0;
  task_key(key, sizeof key, id);
  now_iso(now, sizeof now);
  ARG("EVAL"); ARG(lua_get); ARG("1"); ARG(key); ARG(S.ch_notify); ARG(now);
  submit(op_new(OP_GET, id, cb, ud), n, argv, lens);
}

static void cancel_or_update(const char *id, const char *scope, const char *subject, const char *a,
                             const char *b, mcp_store_cb cb, void *ud) {
  char key[80], now[64];
  const char *argv[12];
  size_t lens[12];
  int n = 0;
  task_key(key, sizeof key, id);
  now_iso(now, sizeof now);
  ARG("EVAL"); ARG(lua_cancel); ARG("1"); ARG(key); ARG(S.ch_notify); ARG(now); ARG(scope);
  ARG(subject); ARG(S.ch_owner_prefix); ARG(a);
  if (b != NULL) ARG(b);
  submit(op_new(OP_CANCEL, id, cb, ud), n, argv, lens);
}

void mcp_store_task_cancel(const char *id, const char *scope, const char *subject,
                           const char *message, mcp_store_cb cb, void *ud) {
  cancel_or_update(id, scope, subject, message, NULL, cb, ud);
}

void mcp_store_task_update(const char *id, const char *scope, const char *subject,
                           const char *responses, mcp_store_cb cb, void *ud) {
  cancel_or_update(id, scope, subject, "u", responses, cb, ud);
}

/* The heartbeat; every SWEEP_EVERY beats, the sweep; a stalled connection
 * (Redis stopped answering: SIGSTOP, a full network buffer) is dropped and
 * retried, so requests get an error rather than hang. */
static void on_beat(uv_timer_t *h) {
  char ttl[24], now[64];
  const char *argv[8];
  size_t lens[8];
  int n = 0;
  (void)h;
  for (int i = 0; i < 2; i++) {        /* a connect that hangs (a black hole) */
    conn *c = i ? &S.sub : &S.cmd;
    if (c->ac != NULL && !c->up && (uv_hrtime() - c->since_ns) / 1000000 > STALL_MS) {
      set_down("connect", "timed out");
      conn_free(c);
      schedule_retry();
    }
  }
  if (!S.cmd.up) return;
  if (S.inflight > 0 && (uv_hrtime() - S.progress_ns) / 1000000 > STALL_MS) {
    set_down("no reply for 3 s", "Redis stopped answering");
    conn_free(&S.cmd);               /* fails the pending ops */
    conn_free(&S.sub);
    schedule_retry();
    return;
  }
  snprintf(ttl, sizeof ttl, "%d", HEARTBEAT_TTL_MS);
  ARG("SET"); ARG(S.k_instance); ARG(S.iid); ARG("PX"); ARG(ttl);
  submit(op_new(OP_PLAIN, "", NULL, NULL), n, argv, lens);
  if (++S.beats % SWEEP_EVERY == 0) {
    n = 0;
    now_iso(now, sizeof now);
    ARG("EVAL"); ARG(lua_sweep); ARG("0"); ARG(S.ch_notify); ARG(now);
    submit(op_new(OP_PLAIN, "", NULL, NULL), n, argv, lens);
  }
}

/* ARGV: "1" after a loss. The store's mark set; the first instance back
 * after a loss that finds it gone (Redis restarted empty) opens the refill
 * window (ARGV[2] ms). */
static const char lua_mark[] =
  "if redis.call('SET','luamcp:up','1','NX') and ARGV[1]=='1' then\n"
  "  redis.call('SET','luamcp:refill','1','PX',ARGV[2]) end\n"
  "return {'ok'}\n";

static void mark(int after_loss) {
  const char *argv[8];
  size_t lens[8];
  char window[24];
  int n = 0;
  snprintf(window, sizeof window, "%d", REFILL_MS);
  ARG("EVAL"); ARG(lua_mark); ARG("0"); ARG(after_loss ? "1" : "0"); ARG(window);
  submit(op_new(OP_PLAIN, "", NULL, NULL), n, argv, lens);
}

/* Both connections up after a time down (or the first time): the store's
 * mark, a beat, then let task.c write its tasks again. */
static void maybe_resync(void) {
  int after_loss = S.down[0] != '\0';
  if (!S.cmd.up || !S.sub.up || !S.was_down) return;
  S.was_down = 0;
  if (S.down[0]) mcp_warn("task store %s: connected again (was: %s)", S.url, S.down);
  else mcp_info("task store %s: connected (instance %s)", S.url, S.iid);
  S.down[0] = '\0';
  S.backoff_ms = BACKOFF_MIN_MS;
  S.warned = 0;
  mark(after_loss);
  on_beat(NULL);
  S.hooks.resync();
}

/* Pub/sub: the owner's messages and everyone's notifications. */
static void on_message(redisAsyncContext *ac, void *reply, void *priv) {
  redisReply *r = reply, *kind, *data;
  (void)ac; (void)priv;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 3) return;
  kind = r->element[0];
  if (kind->str && strcmp(kind->str, "subscribe") == 0) {
    if (r->element[2]->integer == 2) {           /* both channels */
      S.sub.up = 1;
      maybe_resync();
    }
    return;
  }
  if (kind->str == NULL || strcmp(kind->str, "message") != 0) return;
  data = r->element[2];
  if (data->str == NULL || data->len < 2) return;
  if (data->str[0] == 'n') {
    char *nl = memchr(data->str, '\n', data->len);
    if (nl == NULL) return;
    *nl = '\0';                      /* the reply is ours until we return */
    S.hooks.notify(data->str + 1, nl + 1);
  } else if (data->str[0] == 'c') {
    S.hooks.cancel(data->str + 1);
  } else if (data->str[0] == 'a') {             /* failed while we were cut off: read it */
    S.hooks.reaped(data->str + 1);
  } else if (data->str[0] == 'u') {
    char id[40], *sp = memchr(data->str, ' ', data->len);
    size_t idlen = sp ? (size_t)(sp - data->str - 1) : 0;
    if (sp == NULL || idlen >= sizeof id) return;
    memcpy(id, data->str + 1, idlen);
    id[idlen] = '\0';
    S.hooks.update(id, sp + 1);
  }
}

static void on_selected(redisAsyncContext *ac, void *reply, void *priv) {
  redisReply *r = reply;
  (void)priv;
  if (r == NULL) return;
  if (r->type == REDIS_REPLY_ERROR) {
    set_down("SELECT", r->str);
    redisAsyncDisconnect(ac);
    return;
  }
  S.cmd.up = 1;
  maybe_resync();
}

static conn *conn_of(const redisAsyncContext *ac) { return ac->data; }


/* Drop c now: its pending callbacks run with no reply. */
static void conn_free(void *cv) {
  conn *c = cv;
  redisAsyncContext *ac = c->ac;
  c->ac = NULL;
  c->up = 0;
  if (ac != NULL) redisAsyncFree(ac);
}

static void schedule_retry(void) {
  if (S.closing || uv_is_active((uv_handle_t *)&S.retry)) return;
  uv_timer_start(&S.retry, (uv_timer_cb)connect_all, S.backoff_ms, 0);
  S.backoff_ms = S.backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : S.backoff_ms * 2;
}

static void on_connect(const redisAsyncContext *ac, int status) {
  conn *c = conn_of(ac);
  if (status != REDIS_OK) {          /* hiredis frees ac after this */
    set_down("connect", ac->errstr);
    c->ac = NULL;
    if (S.closing) close_done();
    else schedule_retry();
    return;
  }
  if (c == &S.cmd) {
    char db[16];
    snprintf(db, sizeof db, "%d", S.db);
    redisAsyncCommand(c->ac, on_selected, NULL, "SELECT %s", db);
  } else {
    redisAsyncCommand(c->ac, on_message, NULL, "SUBSCRIBE %s %s", S.ch_notify, S.ch_self);
  }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  conn *c = conn_of(ac);
  c->ac = NULL;
  c->up = 0;
  if (S.closing) {
    close_done();
    return;
  }
  if (status == REDIS_OK) set_down("connection closed", NULL);
  else set_down("connection lost", ac->errstr);
  /* The other one goes too: one state for both, resynced together. */
  conn_free(c == &S.cmd ? &S.sub : &S.cmd);
  schedule_retry();
}

static int conn_start(conn *c) {
  c->up = 0;
  c->ac = redisAsyncConnect(S.ip, S.port);   /* a numeric address: never resolves */
  if (c->ac == NULL || c->ac->err) {
    set_down("connect", c->ac ? c->ac->errstr : "out of memory");
    if (c->ac) redisAsyncFree(c->ac);
    c->ac = NULL;
    return -1;
  }
  c->ac->data = c;
  c->since_ns = uv_hrtime();
  if (mcp_redis_uv_attach(c->ac, S.loop) != 0) {
    set_down("connect", "cannot poll the socket");
    conn_free(c);
    return -1;
  }
  redisAsyncSetConnectCallback(c->ac, on_connect);
  redisAsyncSetDisconnectCallback(c->ac, on_disconnect);
  return 0;
}

static void connect_all(void) {
  if (S.closing) return;
  if (S.cmd.ac == NULL && conn_start(&S.cmd) != 0) {
    schedule_retry();
    return;
  }
  if (S.sub.ac == NULL && conn_start(&S.sub) != 0) schedule_retry();
}

/* redis://HOST[:PORT][/DB]; HOST may be [V6]. */
static int parse_url(const char *url, char *host, size_t cap, char *err, size_t errcap) {
  const char *p = url, *end, *colon;
  size_t hl;
  char *e;
  S.port = 6379;
  S.db = 0;
  if (strncmp(p, "redis://", 8) != 0) {
    snprintf(err, errcap, "want redis://HOST:PORT/DB");
    return -1;
  }
  p += 8;
  if (strchr(p, '@') != NULL) {
    snprintf(err, errcap, "credentials in the URL are not supported");
    return -1;
  }
  end = p + strcspn(p, "/");
  if (*p == '[') {
    const char *rb = memchr(p, ']', (size_t)(end - p));
    if (rb == NULL) goto bad;
    hl = (size_t)(rb - p - 1);
    if (hl == 0 || hl >= cap) goto bad;
    memcpy(host, p + 1, hl);
    colon = rb[1] == ':' ? rb + 1 : NULL;
    if (!colon && rb + 1 != end) goto bad;
  } else {
    colon = memchr(p, ':', (size_t)(end - p));
    hl = (size_t)((colon ? colon : end) - p);
    if (hl == 0 || hl >= cap) goto bad;
    memcpy(host, p, hl);
  }
  host[hl] = '\0';
  if (colon) {
    long v = strtol(colon + 1, &e, 10);
    if (e != end || e == colon + 1 || v < 1 || v > 65535) goto bad;
    S.port = (int)v;
  }
  if (*end == '/' && end[1] != '\0') {
    long v = strtol(end + 1, &e, 10);
    if (*e != '\0' || v < 0 || v > 1000000) goto bad;
    S.db = (int)v;
  }
  return 0;
bad:
  snprintf(err, errcap, "want redis://HOST:PORT/DB");
  return -1;
}

int mcp_store_open(uv_loop_t *loop, const char *url, const mcp_store_hooks *hooks, char *err,
                   size_t cap) {
  char host[256], hn[64] = "host";
  unsigned char rnd[3];
  uv_getaddrinfo_t req;
  struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
  int r;
  memset(&S, 0, sizeof S);
  if (parse_url(url, host, sizeof host, err, cap) != 0) return -1;
  snprintf(S.url, sizeof S.url, "%s", url);
  /* Resolve once, before the loop runs: hiredis would call getaddrinfo,
   * blocking, on every reconnect. */
  r = uv_getaddrinfo(loop, &req, NULL, host, NULL, &hints);
  if (r != 0) {
    snprintf(err, cap, "cannot resolve %s: %s", host, uv_strerror(r));
    return -1;
  }
  r = req.addrinfo->ai_family == AF_INET6
        ? uv_ip6_name((struct sockaddr_in6 *)req.addrinfo->ai_addr, S.ip, sizeof S.ip)
        : uv_ip4_name((struct sockaddr_in *)req.addrinfo->ai_addr, S.ip, sizeof S.ip);
  uv_freeaddrinfo(req.addrinfo);
  if (r != 0) {
    snprintf(err, cap, "cannot resolve %s: %s", host, uv_strerror(r));
    return -1;
  }
  S.loop = loop;
  S.hooks = *hooks;
  gethostname(hn, sizeof hn - 1);
  if (mcp_random(rnd, sizeof rnd) != 0) abort();
  snprintf(S.iid, sizeof S.iid, "%.40s-%ld-%02x%02x%02x", hn, (long)getpid(), rnd[0], rnd[1], rnd[2]);
  snprintf(S.k_instance, sizeof S.k_instance, "luamcp:instance:%s", S.iid);
  snprintf(S.ch_notify, sizeof S.ch_notify, "luamcp:%d:notify", S.db);
  snprintf(S.ch_owner_prefix, sizeof S.ch_owner_prefix, "luamcp:%d:i:", S.db);
  snprintf(S.ch_self, sizeof S.ch_self, "%s%s", S.ch_owner_prefix, S.iid);
  S.backoff_ms = BACKOFF_MIN_MS;
  S.was_down = 1;
  uv_timer_init(loop, &S.beat);
  uv_timer_init(loop, &S.retry);
  uv_unref((uv_handle_t *)&S.beat);
  uv_unref((uv_handle_t *)&S.retry);
  uv_timer_start(&S.beat, on_beat, HEARTBEAT_MS, HEARTBEAT_MS);
  mcp_store = &S;
  mcp_info("task store %s (%s:%d, db %d): instance %s", url, S.ip, S.port, S.db, S.iid);
  connect_all();
  return 0;
}

/* The connections are gone (or would not go in time): the last handle closes. */
static void close_done(void) {
  if (S.cmd.ac != NULL || S.sub.ac != NULL || uv_is_closing((uv_handle_t *)&S.retry)) return;
  uv_close((uv_handle_t *)&S.retry, NULL);
}

static void on_close_deadline(uv_timer_t *h) {
  (void)h;
  conn_free(&S.cmd);
  conn_free(&S.sub);
  close_done();
}

void mcp_store_close(void) {
  const char *argv[2] = { "DEL", S.k_instance };
  size_t lens[2] = { 3, strlen(S.k_instance) };
  if (!mcp_store_on()) return;
  if (S.cmd.up) submit(op_new(OP_PLAIN, "", NULL, NULL), 2, argv, lens);
  S.closing = 1;
  mcp_store = NULL;
  uv_close((uv_handle_t *)&S.beat, NULL);
  /* Replies still due are read first, for a second at most. */
  uv_timer_start(&S.retry, on_close_deadline, 1000, 0);
  if (S.cmd.up) redisAsyncDisconnect(S.cmd.ac);
  else conn_free(&S.cmd);
  conn_free(&S.sub);
  close_done();
}
