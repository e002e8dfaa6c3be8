-- channel_load_spec.lua — the live channel under load: 50 concurrent clients (curl processes,
-- each on one keep-alive connection) × 200 requests while the world runs its frames.
local keel = require "keel"
local clock = require "keel.core.channel".clock
local serve = require "keel.serve"

local H = require "helper"
local q = H.shell_quote

keel.kind{ key = "load:spin", fields = { { "angle", "float" } },
  update = function(self, e, dt) self.angle = (self.angle + dt) % 6 end }

describe("channel under load", function()
  it("answers 50 clients × 200 requests while the world steps, none failed", function()
    local CLIENTS, REQUESTS = 50, 200
    local w = keel.world("Load")
    for i = 1, 100 do w:spawn{ name = "E" .. i, components = { "core:transform", "load:spin" } } end
    local srv = assert(keel.serve(w, { port = 0, token = "load" }))
    local dir = H.tmpdir()
    local body = '{"jsonrpc":"2.0","id":1,"method":"component.get","params":{"object":"E7","kind":"load:spin"}}'
    local urls = {}
    for i = 1, REQUESTS do urls[i] = ("http://127.0.0.1:%d/rpc"):format(srv.port) end
    local url_args = table.concat(urls, " ")
    for c = 1, CLIENTS do
      os.execute("(env -u LD_PRELOAD curl -s -m 60 -H 'Authorization: Bearer load' -H 'Content-Type: application/json' -d "
        .. q(body) .. " -w '\\n%{http_code}\\n' " .. url_args .. " > " .. q(dir .. "/c" .. c) .. " 2>&1; touch "
        .. q(dir .. "/done" .. c) .. ") &")
    end
    local t0 = clock()
    local frames, worst = 0, 0
    local function all_done()
      for c = 1, CLIENTS do if not H.file_exists(dir .. "/done" .. c) then return false end end
      return true
    end
    while not all_done() do
      local f0 = clock()
      srv.channel:step(1 / 60) -- answers what arrived at the frame's start
      worst = math.max(worst, clock() - f0)
      frames = frames + 1
      srv:poll(0.001)
      assert(clock() - t0 < 120, "the clients did not finish")
    end
    local ok, failed = 0, 0
    for c = 1, CLIENTS do
      local text = H.slurp(dir .. "/c" .. c) or ""
      for status in text:gmatch("\n(%d%d%d)\n") do
        if status == "200" then ok = ok + 1 else failed = failed + 1 end
      end
      local results = select(2, text:gsub('"result":{', ""))
      assert.are.equal(REQUESTS, results, "client " .. c .. " got " .. results .. " results")
    end
    assert.are.equal(0, failed)
    assert.are.equal(CLIENTS * REQUESTS, ok)
    assert.is_true(frames > 0)
    assert.are.equal(frames, srv.channel.frame)
    print(("\n%d requests in %.2f s over %d frames (longest frame with its requests: %.1f ms)"):format(
      ok, clock() - t0, frames, worst * 1000))
    srv:close()
    w:close()
    H.rmrf(dir)
  end)
end)
