-- message_spec.lua — e:send / w:broadcast and on_message (gameplay.md, "Messages").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("message")

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

local EAR = key("ear")
keel.kind{
  key = EAR, multiplicity = "many",
  fields = { { "hp", "int", default = 10 } },
  update = function(self, e) note("update:" .. e.name) end,
  on_message = function(self, e, name, data, sender)
    note(("%s<-%s:%s:%s"):format(e.name, name, tostring(type(data) == "table" and data.n or data),
      sender and sender.name or "nil"))
    if name == "hit" then self.hp = self.hp - data.n end
    if name == "echo" and data.n > 0 then e:send("echo", { n = data.n - 1 }) end
    if name == "boom" then error("handler failed") end
  end,
}
local SHOUT = key("shout")
keel.kind{ key = SHOUT, update = function(self, e)
  note("shout:" .. e.name)
  e.world:find("B"):send("hit", { n = 1 })
end }

local function world()
  local w = keel.world("W")
  local a = w:spawn("A")
  a:add(EAR)
  local b = w:spawn("B")
  b:add(EAR)
  LOG = {}
  return w, a, b
end

describe("messages", function()
  it("are delivered at the end of the phase they were sent in, after its hooks, in send order", function()
    local w, a = world()
    a:add(SHOUT)
    w:step(1 / 60)
    assert.are.same({ "update:A", "shout:A", "update:B", "B<-hit:1:A" }, LOG)
    assert.are.equal(9, w:find("B"):get(EAR).hp)
  end)

  it("sent outside a step arrive at the start of the next step's first phase; sender is nil", function()
    local w, a, b = world()
    b:send("hit", { n = 2 })
    a:send("hit", { n = 3 })
    assert.are.same({}, LOG)
    w:step(1 / 60)
    assert.are.same({ "B<-hit:2:nil", "A<-hit:3:nil", "update:A", "update:B" }, LOG)
  end)

  it("copy their data at send: the sender may change its table afterwards", function()
    local w, a = world()
    local data = { n = 4 }
    a:send("hit", data)
    data.n = 99
    w:step(0)
    assert.are.equal(6, a:get(EAR).hp)
  end)

  it("sent while delivering arrive in the same pass", function()
    local w, a = world()
    a:send("echo", { n = 2 })
    w:step(0)
    assert.are.same({ "A<-echo:2:nil", "A<-echo:1:A", "A<-echo:0:A", "update:A", "update:B" }, LOG)
  end)

  it("broadcast reaches every component with on_message in run order (each of a many kind)", function()
    local w, a = world()
    a:add(EAR, nil, 5)
    w:broadcast("hello", "x")
    w:step(0)
    assert.are.same({ "A<-hello:x:nil", "A<-hello:x:nil", "B<-hello:x:nil", "update:A", "update:A", "update:B" }, LOG)
  end)

  it("skip destroyed entities silently, and disabled or faulted components", function()
    local w, a, b = world()
    a:send("hit", { n = 1 })
    a:destroy()
    b:get(EAR).enabled = false
    b:send("hit", { n = 1 })
    w:step(0)
    assert.are.same({}, LOG)
    assert.are.same({}, w:errors())
    b:get(EAR).enabled = true
    b:send("boom")
    w:step(0)
    b:send("hit", { n = 1 })
    w:step(0)
    assert.are.same({ "B<-boom:nil:nil" }, LOG) -- faulted after the failure: nothing more
  end)

  it("run each handler as a transaction: a failure rolls back and is recorded, the step goes on", function()
    local K = key("fails")
    keel.kind{ key = K, fields = { { "n", "int", default = 0 } }, on_message = function(self, e)
      self.n = 5
      e.world:spawn("Made")
      error("nope")
    end }
    local w = keel.world("W")
    local e = w:spawn("E")
    e:add(K)
    e:send("go")
    w:step(0)
    assert.are.equal(0, e:get(K).n)
    assert.is_nil(w:find("Made"))
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.are.equal("on_message", errs[1].phase)
    assert.truthy(errs[1].message:find("nope", 1, true))
  end)

  it("stop a pass at 100,000 messages with one LimitExceeded entry", function()
    local K = key("storm")
    keel.kind{ key = K, on_message = function(self, e) e:send("again") end }
    local w = keel.world("W")
    local e = w:spawn("E")
    e:add(K)
    e:send("again")
    w:step(0)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.truthy(errs[1].message:find("LimitExceeded", 1, true))
    w:step(0) -- the rest were dropped: nothing left to run away
    assert.are.equal(1, #w:errors())
  end)

  it("refuse data that is not plain at send (InvalidArgument)", function()
    local _, a = world()
    local cyc = {}
    cyc.self = cyc
    local deep = {}
    local t = deep
    for _ = 1, 20 do t.x = {} t = t.x end
    for _, bad in ipairs({ { f = print }, cyc, deep, { co = coroutine.create(print) }, { [{}] = 1 },
                           { s = ("x"):rep(70 * 1024) }, keel.world("other") }) do
      H.fails("InvalidArgument", function() a:send("x", bad) end)
    end
    H.fails("InvalidArgument", function() a:send(42) end)
    -- entity handles, booleans, numbers, strings and nested tables are plain data
    a:send("ok", { who = a, list = { 1, 2, { true } }, s = "fine" })
  end)
end)
