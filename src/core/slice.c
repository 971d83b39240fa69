/* Time slices by a POSIX timer's signal (see slice.h).
 *
 * The timer is one-shot and armed by the first resume that finds it idle,
 * not by every resume: a flood of short resumes costs one timer_settime per
 * slice, not two system calls each. A resume that starts late in an armed
 * period may get its hook early; the hook then sees its slice is not over
 * and goes back to checking every few thousand instructions until it is.
 * When the signal comes with nothing running, it only marks the timer idle.
 *
 * lua_sethook is the one Lua call that may be made from a signal handler
 * (lua.c's laction does it). The running coroutine is published in a
 * volatile pointer that the handler reads; it is set just before lua_resume
 * and cleared just after, so the hook is never installed on a coroutine
 * that another resume could be running. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "log.h"
#include "slice.h"

static struct {
  timer_t timer;
  int on;
  uint64_t slice_ns;
  lua_Hook hook;
  lua_State *volatile running;
  volatile sig_atomic_t armed;
} A;

static void on_alarm(int sig) {
  lua_State *L = A.running;
  (void)sig;
  A.armed = 0;
  if (L != NULL) lua_sethook(L, A.hook, LUA_MASKCOUNT, 1);
}

int mcp_slice_init(lua_Hook hook, uint64_t slice_ns) {
  struct sigevent ev;
  struct sigaction sa;
  if (A.on) return 0;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;                 /* this thread: the loop's */
  ev.sigev_signo = SIGRTMIN;
#ifdef sigev_notify_thread_id
  ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
  ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
  if (sigaction(SIGRTMIN, &sa, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &A.timer) != 0) {
    mcp_warn("time slices: no POSIX timer; the count hook stays on");
    return -1;
  }
  A.hook = hook;
  A.slice_ns = slice_ns;
  A.on = 1;
  return 0;
}

void mcp_slice_close(void) {
  if (!A.on) return;
  timer_delete(A.timer);
  signal(SIGRTMIN, SIG_DFL);
  A.on = 0;
  A.armed = 0;                                       /* a deleted timer sends no signal */
}

int mcp_slice_on(void) { return A.on; }

void mcp_slice_begin(lua_State *co) {
  A.running = co;
  if (!A.on || A.armed) return;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_value.tv_sec = (time_t)(A.slice_ns / 1000000000ull);
  its.it_value.tv_nsec = (long)(A.slice_ns % 1000000000ull);
  A.armed = 1;
  timer_settime(A.timer, 0, &its, NULL);
}

void mcp_slice_end(void) { A.running = NULL; }
