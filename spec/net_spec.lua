-- net_spec.lua — keel.net and `sync` declarations (README "Replication"): what a game programmer
-- declares and sees, a host and a client in one process over loopback.
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("net")

local SHIP = key("ship")
keel.kind{ key = SHIP, sync = { interval = 2 },
  fields = { { "hp", "int", sync = true, default = 10 }, { "ai_state", "string" } } }

local function settle(host, cl, n)
  for _ = 1, n or 60 do
    host:service()
    cl:service()
  end
end

describe("sync declarations", function()
  it("shows sync on the kind and its fields", function()
    local info = keel.kind_info(SHIP)
    assert.are.same({ interval = 2 }, info.sync)
    assert.is_true(info.fields[1].sync)
    assert.is_nil(info.fields[2].sync)
    local tr = keel.kind_info("core:transform")
    assert.are.same({ interval = 1 }, tr.sync)
    for _, f in ipairs(tr.fields) do assert.is_true(f.sync, f.key) end
  end)

  it("refuses an interval outside 1..1200", function()
    for _, bad in ipairs({ 0, 1201, 2.5, "x" }) do
      H.fails("InvalidArgument", keel.kind, { key = key("bad"), sync = { interval = bad } })
    end
    H.fails("InvalidArgument", keel.kind, { key = key("bad"), sync = 3 })
    keel.kind{ key = key("edge"), sync = { interval = 1200 } }
  end)

  it("is not shown for kinds that do not sync", function()
    local k = key("plain")
    keel.kind{ key = k, fields = { { "x", "float" } } }
    assert.is_nil(keel.kind_info(k).sync)
    assert.is_nil(keel.kind_info(k).fields[1].sync)
  end)
end)

describe("keel.net", function()
  it("mirrors synced fields and keeps the rest home; the mirror refuses synced writes", function()
    local w = keel.world()
    local e = w:spawn{ name = "S1", components = { { "core:transform", position = { 1, 2, 3 } },
                                                   { SHIP, hp = 5, ai_state = "hunting" } } }
    local host = keel.net.host(w, { port = 0 })
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p1" })
    settle(host, cl, 200)
    assert.is_true(cl.connected)
    assert.is_nil(cl.reason)
    assert.are.equal("p1", host:clients()[1].name)
    local m = cl.world:find(e.uuid)
    assert.is_not_nil(m)
    assert.are.equal("S1", m.name)
    assert.are.same({ 1, 2, 3 }, m:get("core:transform").position)
    assert.are.equal(5, m:get(SHIP).hp)
    assert.are.equal("", m:get(SHIP).ai_state)
    e:get(SHIP).hp = 7
    e:get("core:transform").position = { 4, 5, 6 }
    settle(host, cl)
    assert.are.equal(7, m:get(SHIP).hp)
    assert.are.same({ 4, 5, 6 }, m:get("core:transform").position)
    H.fails("InvalidOperation", function() m:get(SHIP).hp = 1 end)
    m:get(SHIP).ai_state = "local" -- not synced: the client's own
    local uuid = e.uuid
    e:destroy()
    settle(host, cl)
    assert.is_nil(cl.world:find(uuid))
    host:focus(host:clients()[1], w:spawn("F"))
    H.fails("NotFound", host.focus, host, "nobody", w:spawn("G"))
    host:close()
    local ok, err
    for _ = 1, 200 do
      ok, err = cl:service()
      if not ok then break end
    end
    assert.is_nil(ok)
    assert.are.equal("InvalidOperation", err.code)
    assert.is_string(cl.reason)
    cl:close()
  end)

  it("refuses every write of a synced field on a mirror, built-in kinds included, on every path", function()
    local TR, FL, MANY, SK = "core:transform", key("floaty"), key("floaties"), key("systemed")
    local armed = false
    local function hook(self) if armed then self.speed = self.speed + 1 end end
    keel.kind{ key = FL, sync = { interval = 1 }, late_update = hook,
      fields = { { "speed", "float", sync = true, default = 1 }, { "glow", "float" } } }
    keel.kind{ key = MANY, sync = { interval = 1 }, late_update = hook,
      fields = { { "speed", "float", sync = true, default = 1 } } }
    keel.kind{ key = SK, sync = { interval = 1 }, fields = { { "speed", "float", sync = true, default = 1 } } }
    local w = keel.world()
    local e = w:spawn{ name = "S", components = { { TR, position = { 1, 2, 3 } }, { FL }, { SK } } }
    for i = 1, 6 do w:spawn{ name = "M" .. i, components = { { MANY } } } end -- a batch of hooks
    local host = keel.net.host(w, { port = 0 })
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p" })
    settle(host, cl, 200)
    local m = cl.world:find(e.uuid)
    local t = m:get(TR)
    for _, f in ipairs({ "position", "rotation", "scale" }) do -- the plain fast path
      H.fails("InvalidOperation", function() t[f] = t[f] end)
    end
    H.fails("InvalidOperation", t.set, t, { position = { 9, 9, 9 } })
    H.fails("InvalidOperation", t.reset, t)
    H.fails("InvalidOperation", function() m:get(FL).speed = 5 end) -- the float fast path
    m:get(FL).glow = 2 -- not synced: the client's own
    assert.are.same({ 1, 2, 3 }, t.position)
    assert.are.same({ 0, 0, 0, 1 }, t.rotation)
    assert.are.same({ 1, 1, 1 }, t.scale)
    assert.are.equal(1, m:get(FL).speed)
    -- a hook's own writes (self copied back, one at a time and in a batch) and a system's
    local sys = key("sys")
    keel.system{ name = sys, phase = "late_update", query = { SK }, each = function(_, f)
      if armed then f.speed = 7 end
    end }
    armed = true
    cl.world:step(1 / 60)
    armed = false
    keel.system{ name = sys, phase = "late_update", run = function() end }
    assert.are.equal(1, m:get(FL).speed)
    assert.is_true(m:get(FL).faulted)
    assert.are.equal(1, m:get(SK).speed)
    for mm in cl.world:entities() do
      if mm:get(MANY) then
        assert.are.equal(1, mm:get(MANY).speed)
        assert.is_true(mm:get(MANY).faulted)
      end
    end
    local sys_failed = false
    for _, err in ipairs(cl.world:errors()) do
      if err.system == sys then sys_failed = err.message:find("synced", 1, true) ~= nil end
    end
    assert.is_true(sys_failed)
    -- the host's own writes still arrive
    e:get(TR).position = { 4, 5, 6 }
    e:get(FL).speed = 3
    settle(host, cl)
    assert.are.same({ 4, 5, 6 }, t.position)
    assert.are.equal(3, m:get(FL).speed)
    host:close()
    cl:close()
  end)

  it("runs client_update only on clients", function()
    local FX, calls, seen = key("fx"), 0, nil
    keel.kind{ key = FX, fields = { { "glow", "float" }, { "n", "int", sync = true } },
      client_update = function(c, e, dt)
        calls = calls + 1
        seen = e.name
        c.glow = c.glow + 1 -- its own, not synced: allowed
        assert(dt >= 0)
      end }
    H.fails("InvalidArgument", keel.kind, { key = key("bad"), client_update = 3 })
    local w = keel.world()
    w:spawn{ name = "Lamp", components = { { FX, n = 3 } } }
    for _ = 1, 10 do w:step(1 / 60) end
    assert.are.equal(0, calls)
    local host = keel.net.host(w, { port = 0 })
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p" })
    settle(host, cl, 100)
    assert.is_true(calls > 0)
    assert.are.equal("Lamp", seen)
    host:close()
    cl:close()
  end)

  it("sends a network tick once `tick` seconds of steps have added up", function()
    local w = keel.world()
    for _, bad in ipairs({ 0, -0.1, "x" }) do H.fails("InvalidArgument", keel.net.host, w, { port = 0, tick = bad }) end
    local e = w:spawn{ name = "T", components = { { "core:transform" } } }
    local host = keel.net.host(w, { port = 0, tick = 0.1 })
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p" })
    settle(host, cl, 200)
    assert.is_true(cl.connected)
    local m = cl.world:find(e.uuid)
    for i = 1, 10 do
      e:get("core:transform").position = { i, 0, 0 }
      local before = cl.stats.deltas
      w:step(0.05)
      for _ = 1, (i % 2 == 0) and 200 or 5 do
        cl:service()
        if cl.stats.deltas > before then break end
      end
      if i % 2 == 1 then
        assert.are.equal(before, cl.stats.deltas, "step " .. i)
      else
        assert.is_true(cl.stats.deltas > before, "step " .. i)
        assert.are.same({ i, 0, 0 }, m:get("core:transform").position)
      end
    end
    host:close()
    cl:close()
  end)

  it("fails service as soon as the server refuses the client", function()
    local K = key("ver")
    local function declare(v) keel.kind{ key = K, version = v, sync = { interval = 1 }, fields = { { "n", "int", sync = true } } } end
    declare(1)
    local w = keel.world()
    local host = keel.net.host(w, { port = 0 })
    declare(2) -- the client's registry now differs from what the host serves
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p" })
    local ok, err
    for _ = 1, 2000 do
      host:service()
      ok, err = cl:service()
      if not ok or cl.reason then break end
    end
    assert.is_string(cl.reason)
    assert.is_nil(ok) -- the very service that learnt the refusal fails
    assert.are.equal("InvalidOperation", err.code)
    assert.is_truthy(err.message:find(K, 1, true))
    assert.is_truthy(cl.reason:find(K, 1, true))
    assert.is_false(cl.connected)
    assert.are.equal(0, cl.world:count())
    host:close()
    cl:close()
  end)

  it("checks its options", function()
    local w = keel.world()
    H.fails("InvalidArgument", keel.net.host, w, { port = 70000 })
    H.fails("InvalidArgument", keel.net.host, w, { interest = 5 })
    H.fails("InvalidArgument", keel.net.connect, "127.0.0.1", 0)
  end)
end)

describe("keel kinds --json", function()
  it("shows sync", function()
    local code, out = H.run_keel(H.find_keel(), "kinds --json")
    assert.are.equal(0, code)
    assert.is_truthy(out:find('"key": "core:transform"', 1, true))
    assert.is_truthy(out:find('"sync": {"interval": 1}', 1, true))
    assert.is_truthy(out:find('"key": "position", "type": "vec3"', 1, true))
    assert.is_truthy(out:find('"sync": true', 1, true))
  end)
end)
