-- serve.lua — keel.serve(w, opts): the live channel over HTTP (DESIGN channel.md "Transport and
-- safety"). The HTTP server is keel.core's (libmicrohttpd, no thread of its own): requests are
-- answered when the server is polled — srv:poll(seconds), the step's start (between frames), the
-- waits of `keel serve` and the REPL — so the world is only ever touched on its own thread.
--
--   local srv = keel.serve(w, { port = 27760, token = nil, bind = "127.0.0.1", scene = path })
--   srv.url  srv.token  srv.port  srv.channel  srv:poll([seconds])  srv:close()
require "keel.core" -- which registers the keel.core.* modules below
local invalid = require "keel.core.errors".invalid
local cchannel = require "keel.core.channel" -- the HTTP server, its step hook, the token, the clock
local channel = require "keel.channel"
local watch = require "keel.watch"

local M = {}
M.DEFAULT_PORT = 27760

local Server = {}
Server.__index = Server

local live = {} -- open servers; the step hook looks here

-- The inspector's static files: keel/inspector/ next to the Lua files, found through package.path.
local function find_static()
  for tmpl in package.path:gmatch("[^;]+") do
    if tmpl:match("%?%.lua$") then
      local f = tmpl:gsub("%?%.lua$", "keel/inspector/index.html")
      local h = io.open(f, "rb")
      if h then
        h:close()
        return (f:gsub("/index%.html$", ""))
      end
    end
  end
  return nil
end
M.find_static = find_static

local types = { html = "text/html; charset=utf-8", js = "text/javascript; charset=utf-8", mjs = "text/javascript; charset=utf-8",
  css = "text/css; charset=utf-8", json = "application/json", svg = "image/svg+xml", png = "image/png",
  ico = "image/x-icon", txt = "text/plain; charset=utf-8" }

local function loopback_host(host)
  if type(host) ~= "string" then return false end
  local name = host:match("^%[(.-)%]:?%d*$") or host:match("^([^:]+):?%d*$")
  return name == "127.0.0.1" or name == "localhost" or name == "::1" or (name and name:match("^127%.%d+%.%d+%.%d+$") ~= nil)
end

-- Equal strings, compared in a time that does not depend on where they differ.
local function same_secret(a, b)
  if type(a) ~= "string" or #a ~= #b then return false end
  local diff = 0
  for i = 1, #b do diff = diff | (a:byte(i) ~ b:byte(i)) end
  return diff == 0
end

local function text(status, msg) return status, "text/plain; charset=utf-8", msg .. "\n" end

function Server:static_file(path)
  if not self.static then return text(404, "the inspector's files are not installed") end
  if path == "/" then path = "/index.html" end
  if path:find("%.%.") or not path:match("^/[%w%-%._/]+$") then return text(404, "not found") end
  local f = io.open(self.static .. path, "rb")
  if not f then return text(404, "not found") end
  local body = f:read("a")
  f:close()
  if not body then return text(404, "not found") end
  return 200, types[path:match("%.(%w+)$") or ""] or "application/octet-stream", body, { ["Cache-Control"] = "no-cache" }
end

-- One HTTP request (from keel.core's server) -> status, content type, body | { stream = id }, headers.
function Server:route(req)
  local h = req.headers
  local host = h.host
  -- (--bind: the bound address names the server too; on every address, any name does, the token guards)
  local named = type(host) == "string" and (self.bind == "0.0.0.0" or self.bind == "::" or host == self.bind
    or host:match("^(.*):%d+$") == self.bind or host:match("^%[(.*)%]:?%d*$") == self.bind)
  if not (loopback_host(host) or (self.bind ~= "127.0.0.1" and named)) then
    return text(403, "forbidden: the Host header must name a loopback address")
  end
  if h.origin and h.origin ~= "http://" .. host then
    return text(403, "forbidden: a request from another origin")
  end
  local path = req.path
  if path == "/rpc" then
    if req.method ~= "POST" then return 405, "text/plain; charset=utf-8", "POST a JSON-RPC request\n", { Allow = "POST" } end
    local auth = h.authorization
    if not (auth and same_secret(auth:match("^Bearer%s+(%S+)$"), self.token)) then
      return 401, "text/plain; charset=utf-8", "unauthorized: Authorization: Bearer TOKEN\n", { ["WWW-Authenticate"] = "Bearer" }
    end
    return 200, "application/json", self.channel:handle(req.body), { ["Cache-Control"] = "no-store" }
  elseif path == "/events" then
    if req.method ~= "GET" then return text(405, "GET the event stream") end
    if not same_secret(req.query.token, self.token) then return text(401, "unauthorized: /events?token=TOKEN") end
    local id = self.watch:subscribe(req.query)
    return 200, "text/event-stream", { stream = id }, { ["Cache-Control"] = "no-store", ["X-Accel-Buffering"] = "no" }
  elseif req.method == "GET" or req.method == "HEAD" then
    return self:static_file(path)
  end
  return text(405, "method not allowed")
end

-- Answers what has arrived (waiting at most `seconds`), then sends the watchers what changed.
function Server:poll(seconds)
  if not self.http then return false end
  local ok = self.http:poll(seconds or 0)
  if ok then
    self:poll_file()
    self.watch:publish()
  end
  return ok
end

-- The scene file (opts.watch): conflicts and errors go to every subscriber as `conflict` and
-- `watch_error` events; a reload reaches them as the deltas of any other change.
function Server:poll_file()
  local fw = self.channel.file_watcher
  if self.channel.stepping then return nil end -- the step hook's poll: the world is mid-step
  local ev = fw and fw:poll()
  if not ev then return nil end
  local json = require "keel.json"
  if ev.conflicts then self.watch:broadcast("conflict", json.encode({ conflicts = ev.conflicts })) end
  if ev.errors then self.watch:broadcast("watch_error", json.encode({ errors = ev.errors })) end
  if self.on_file_event then self.on_file_event(ev) end
  return ev
end

function Server:close()
  if not self.http then return end
  live[self] = nil
  self.http:close()
  self.http = nil
end
Server.__close = Server.close
Server.__gc = Server.close

function Server:__tostring()
  return self.http and ("keel.Server (" .. self.url .. ")") or "keel.Server (closed)"
end

-- At the start of each step of a served world: count the frame, answer, publish.
local function on_step(w)
  for srv in pairs(live) do
    if srv.world == w and not srv.channel.replaying then -- a replay's re-simulation: no requests within
      srv.channel:on_step()
      srv:poll(0)
    end
  end
end

-- keel.serve(w, opts) -> server | nil, message
function M.serve(w, opts)
  opts = opts or {}
  local rp -- keel.serve(rp): a replay's world, with its timeline (replay.* methods)
  local mt = getmetatable(w)
  if type(mt) == "table" and rawget(mt, "__name") == "keel.Replay" then rp, w, opts.paused = w, w.world, true end
  if type(opts) ~= "table" then invalid("keel.serve: an options table expected, got " .. type(opts)) end
  local bind = opts.bind or "127.0.0.1"
  local token = opts.token or cchannel.random_token()
  if type(token) ~= "string" or not token:match("^[%w%-%._~]+$") then
    invalid("keel.serve: token must be a non-empty string of letters, digits and -._~")
  end
  local ch = opts.channel or channel.new(w, { scene = opts.scene, paused = opts.paused, dt = opts.dt })
  ch.replay = rp or ch.replay
  local srv = setmetatable({ world = w, channel = ch, token = token, bind = bind,
    static = opts.static or find_static() }, Server)
  if opts.watch then ch:watch_file(type(opts.watch) == "table" and opts.watch or w:watch()) end
  ch.world_replaced = function() if srv.watch then srv.watch:reset() end end
  srv.watch = watch.new(ch, function(id, data) return srv.http and srv.http:push(id, data) end,
    function(id) return srv.http and srv.http:pending(id) end, function(id) if srv.http then srv.http:drop(id) end end)
  local http, err = cchannel.http_open { port = opts.port or M.DEFAULT_PORT, bind = bind,
    max_connections = opts.max_connections, per_ip = opts.per_ip, header_timeout = opts.header_timeout,
    handler = function(req) return srv:route(req) end }
  if not http then return nil, err end
  srv.http, srv.port = http, http:port()
  local host = bind:find(":", 1, true) and ("[" .. bind .. "]") or bind
  srv.origin = ("http://%s:%d"):format(host, srv.port)
  srv.url = ("%s/#token=%s"):format(srv.origin, token)
  live[srv] = true
  cchannel.http_on_step(on_step)
  return srv
end

-- Runs a served world until stop() says so: real-time frames of dt while not paused, requests
-- answered in between (and all the time while paused). frames: stop after that many (nil: never).
function M.loop(srv, opts)
  opts = opts or {}
  local ch = srv.channel
  local now = opts.now or cchannel.clock
  local stop = opts.stop or function() return false end
  local next_frame = now()
  local ran = 0
  while srv.http and not stop() do
    if opts.frames and ran >= opts.frames then break end
    if ch.paused then
      srv:poll(opts.idle or 0.05)
      next_frame = now()
    else
      local t = now()
      if t >= next_frame then
        ch:step(ch.dt)
        ran = ran + 1
        next_frame = next_frame + ch.dt
        if now() - next_frame > 0.25 then next_frame = now() end -- far behind: do not try to catch up
        srv:poll(0)
      else
        srv:poll(next_frame - t)
      end
    end
  end
  return ran
end

return M
