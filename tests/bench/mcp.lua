-- mcp.lua: wrk as an MCP client in its steady state (tests/bench/README.md).
--
--   wrk -t1 -cN -dDs --latency -s mcp.lua http://127.0.0.1:PORT/mcp -- SESSIONS VARIANT
--
-- SESSIONS is a file of Mcp-Session-Id values, one a line: sessions the
-- shell opened beforehand through the same proxy as a client does
-- (initialize, notifications/initialized, tools/list; lib.sh
-- open_sessions), one per wrk connection. wrk's Lua cannot see which
-- connection sends a request, so requests take the sessions in turn; a
-- Streamable HTTP session is not bound to a connection, so this is a
-- client the protocol allows.
--
-- VARIANT: json  tools/call of "echo" (the upstream answers JSON)
--          sse   tools/call of "sse"  (the upstream answers an SSE stream)
--          list  tools/list           (the upstream lists all its tools)
--
-- Every request carries Mcp-Session-Id, MCP-Protocol-Version: 2025-11-25
-- and Accept: application/json, text/event-stream, and a JSON-RPC id of its
-- own (increasing, as a client's are).
--
-- With MCP_STOP_AFTER=N in the environment the thread stops after N
-- responses (wrk has no request count; run with -t1 and a long -d as the
-- bound). Only then is a response hook defined: wrk parses every reply's
-- headers and body for Lua when one exists, which would slow the normal runs.

local pre, post = {}, {}
local n, turn, seq = 0, 0, 1000000000

function init(args)
  local file, variant = args[1], args[2] or "json"
  local method, params = "tools/call", '{"name":"echo","arguments":{"message":"hi"}}'
  if variant == "sse" then
    params = '{"name":"sse","arguments":{"message":"hi"}}'
  elseif variant == "list" then
    method, params = "tools/list", "{}"
  elseif variant ~= "json" then
    error("mcp.lua: variant must be json, sse or list, not " .. variant)
  end
  -- Ten-digit ids keep every body the same length, so each request is
  -- built once with a placeholder id and only the id changes per request.
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}',
                             seq, method, params)
  for sid in assert(io.open(file)):lines() do
    if #sid > 0 then
      local req = wrk.format("POST", nil, {
        ["Content-Type"] = "application/json",
        ["Accept"] = "application/json, text/event-stream",
        ["MCP-Protocol-Version"] = "2025-11-25",
        ["Mcp-Session-Id"] = sid,
      }, body)
      local at = assert(req:find(tostring(seq), 1, true))
      n = n + 1
      pre[n] = req:sub(1, at - 1)
      post[n] = req:sub(at + 10)
    end
  end
  assert(n > 0, "mcp.lua: no session ids in " .. file)
end

function request()
  turn = turn % n + 1
  seq = seq + 1
  return pre[turn] .. seq .. post[turn]
end

local stop_after = tonumber(os.getenv("MCP_STOP_AFTER") or "")
if stop_after then
  local seen = 0
  function response()
    seen = seen + 1
    if seen == stop_after then
      wrk.thread:stop()
    end
  end
end
