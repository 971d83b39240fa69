/* lua/mcp/uri_template.lua in a Lua state, as server.lua uses it. Its
 * contract: parse(text) returns a template, or nil and a message; match(uri)
 * returns the variables, or nil; expand(vars) returns a URI. None raises.
 *
 * The input is "template\nuri" (no newline: the template alone). Checked:
 * - parse and match raise nothing, and return what they promise (match: a
 *   string for each variable of the template, nothing else);
 * - expand, with every variable set (from the uri's '|'-separated parts),
 *   gives a URI that the template matches; with one simple variable {x}
 *   the match gives the value back;
 * - match gives what the Lua pattern it replaced gave (short URIs: the
 *   pattern's backtracking is polynomial), and takes time linear in the
 *   URI: the uri repeated to 64 KiB is matched too, within a second.
 * Any Lua error is a crash: the module's own failures are return values. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

static const char check_lua[] =
  "local T = require 'mcp.uri_template'\n"
  "local text, uri = ...\n"
  "local t, err = T.parse(text)\n"
  "if not t then\n"
  "  assert(t == nil and type(err) == 'string', 'parse: neither a template nor a message')\n"
  "  return\n"
  "end\n"
  "assert(type(t.vars) == 'table' and tostring(t) == text, 'parse: not a template')\n"
  "local function check_match(u)\n"
  "  local m = t:match(u)\n"
  "  if m == nil then return nil end\n"
  "  assert(type(m) == 'table', 'match: not a table')\n"
  "  local n = 0\n"
  "  for k, v in pairs(m) do\n"
  "    n = n + 1\n"
  "    assert(type(v) == 'string', 'match: ' .. tostring(k) .. ' is not a string')\n"
  "  end\n"
  "  for _, name in ipairs(t.vars) do assert(m[name] ~= nil, 'match: ' .. name .. ' missing') end\n"
  "  assert(n == #t.vars, 'match: variables the template does not have')\n"
  "  return m\n"
  "end\n"
  "-- the Lua pattern match used to be: the same values, where it is quick\n"
  "local pat = { '^' }\n"
  "for _, p in ipairs(t.parts) do\n"
  "  if type(p) == 'string' then pat[#pat + 1] = p:gsub('[%^%$%(%)%%%.%[%]%*%+%-%?]', '%%%0')\n"
  "  elseif p.op == '' then pat[#pat + 1] = '([^/%?#]+)'\n"
  "  elseif p.op == '+' then pat[#pat + 1] = '(.+)'\n"
  "  else pat[#pat + 1] = '#(.+)' end\n"
  "end\n"
  "pat = table.concat(pat) .. '$'\n"
  "local function same_as_pattern(u, m)\n"
  "  if #u > 128 then return end\n"
  "  local caps = { u:match(pat) }\n"
  "  assert((caps[1] ~= nil) == (m ~= nil), 'match and the pattern ' .. pat .. ' disagree on ' .. u)\n"
  "  if m == nil then return end\n"
  "  for k, name in ipairs(t.vars) do\n"
  "    local v = caps[k]:gsub('%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end)\n"
  "    assert(m[name] == v, name .. ': ' .. m[name] .. ', the pattern ' .. v .. ' in ' .. u)\n"
  "  end\n"
  "end\n"
  "same_as_pattern(uri, check_match(uri))\n"
  "if #uri > 0 then\n"
  "  local big, t0 = uri:rep(65536 // #uri), os.clock()\n"
  "  unhooked(check_match, big)\n"
  "  assert(os.clock() - t0 < 1, 'match took ' .. os.clock() - t0 .. ' s on ' .. #big .. ' bytes')\n"
  "end\n"
  "local values, vars, i = {}, {}, 0\n"
  "for part in (uri .. '|'):gmatch('([^|]*)|') do values[#values + 1] = part ~= '' and part or 'x' end\n"
  "for _, name in ipairs(t.vars) do\n"
  "  i = i + 1\n"
  "  vars[name] = values[(i - 1) % math.max(#values, 1) + 1] or 'x'\n"
  "end\n"
  "local u = t:expand(vars)\n"
  "assert(type(u) == 'string', 'expand: not a string')\n"
  "local m = check_match(u)\n"
  "same_as_pattern(u, m)\n"
  "assert(m, 'the template does not match its own expansion ' .. u)\n"
  "if #t.vars == 1 and t.parts[1] and (type(t.parts[1]) == 'table' and t.parts[1] or t.parts[2]).op == '' then\n"
  "  local name = t.vars[1]\n"
  "  assert(m[name] == vars[name], 'round trip of ' .. name .. ': ' .. vars[name] .. ' -> ' .. u .. ' -> ' .. m[name])\n"
  "end\n";

static lua_State *L;
static int check_ref;

static void line_hook(lua_State *Ls, lua_Debug *ar);

/* unhooked(f, ...): f(...) without the line hook (too slow on 64 KiB). */
static int unhooked(lua_State *Ls) {
  int r;
  lua_sethook(Ls, NULL, 0, 0);
  r = lua_pcall(Ls, lua_gettop(Ls) - 1, 0, 0);
  lua_sethook(Ls, line_hook, LUA_MASKLINE, 0);
  if (r != LUA_OK) return lua_error(Ls);
  return 0;
}

/* libFuzzer sees the C it instruments, not the Lua it runs: a line hook
 * counts (source, line) pairs, one after another, in counters libFuzzer
 * reads as coverage (its extra counters; a plain array for replay.c). */
#define NCOUNTERS 8192
static uint8_t lua_counters[NCOUNTERS] __attribute__((section("__libfuzzer_extra_counters"), used));

static void line_hook(lua_State *Ls, lua_Debug *ar) {
  static uintptr_t prev;
  uintptr_t cur;
  lua_getinfo(Ls, "S", ar);
  cur = (uintptr_t)ar->source * 31 + (uintptr_t)ar->currentline * 2654435761u;
  lua_counters[(cur ^ prev >> 1) % NCOUNTERS]++;
  prev = cur;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data, *nl = memchr(s, '\n', size);
  size_t tlen = nl ? (size_t)(nl - s) : size;
  if (L == NULL) {
    L = luaL_newstate();
    luaL_openlibs(L);
    lua_getglobal(L, "package");
    lua_pushstring(L, LUAMCP_SOURCE_DIR "/lua/?.lua");
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
    lua_register(L, "unhooked", unhooked);
    if (luaL_loadbuffer(L, check_lua, sizeof check_lua - 1, "=check") != LUA_OK) abort();
    check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_sethook(L, line_hook, LUA_MASKLINE, 0);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, check_ref);
  lua_pushlstring(L, s, tlen);
  lua_pushlstring(L, nl ? nl + 1 : "", nl ? size - tlen - 1 : 0);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_uri_template: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, 0);
  return 0;
}
