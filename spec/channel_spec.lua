-- channel_spec.lua — the live channel (DESIGN channel.md) against a real server on loopback:
-- curl is the client, run in the background while the spec polls the server. Every method,
-- every refusal (401, 403, 413) and JSON-RPC error code, batches, the event stream.
local keel = require "keel"
local json = require "keel.json"
local clock = require "keel.core.channel".clock
local channel = require "keel.channel"
local serve = require "keel.serve"

local H = require "helper"
local q = H.shell_quote

keel.kind{ key = "ch:stamina", fields = { { "value", "float", default = 100, min = 0, max = 100 },
  { "mode", "enum", choices = { "walk", "run" }, default = "walk" }, { "target", "entity" } } }
keel.kind{ key = "ch:tag", multiplicity = "many", fields = { { "n", "int", default = 1 } } }

local decode, encode = json.decode, json.encode
local TOKEN = "spec-token"

local function world()
  local w = keel.world("Channel")
  local a = w:spawn{ name = "A", components = { { "core:transform", position = { 1, 2, 3 } }, "ch:stamina" } }
  w:spawn{ name = "B", parent = a, components = { "core:transform" } }
  w:spawn{ name = "C" }
  return w
end

-- Runs curl with `args` in the background and polls srv (stepping w each round when `step`)
-- until it is done. Returns the HTTP status, the body and the response headers.
local function curl(srv, args, opts)
  opts = opts or {}
  local base = os.tmpname()
  local done = base .. ".done"
  os.execute("(env -u LD_PRELOAD curl -s -m " .. (opts.max_time or 10) .. " -o " .. q(base .. ".body") .. " -D " .. q(base .. ".hdr")
    .. " -w '%{http_code}' " .. args .. " > " .. q(base) .. " 2>/dev/null; touch " .. q(done) .. ") &")
  local t0 = clock()
  while not H.file_exists(done) do
    if opts.each then opts.each() end
    srv:poll(0.005)
    assert(clock() - t0 < 20, "curl did not finish")
  end
  local status = tonumber(H.slurp(base))
  local body, hdr = H.slurp(base .. ".body") or "", H.slurp(base .. ".hdr") or ""
  for _, f in ipairs { base, done, base .. ".body", base .. ".hdr" } do os.remove(f) end
  return status, body, hdr
end

local function url(srv, path) return q(("http://127.0.0.1:%d%s"):format(srv.port, path)) end

local function post(srv, body, headers)
  local f = os.tmpname()
  H.spit(f, body)
  local hs = headers or ("-H " .. q("Authorization: Bearer " .. TOKEN))
  local status, text, hdr = curl(srv, hs .. " -H 'Content-Type: application/json' --data-binary @" .. q(f) .. " " .. url(srv, "/rpc"))
  os.remove(f)
  return status, text, hdr
end

-- One call over HTTP: the decoded response.
local function rpc(srv, method, params, id)
  local status, text = post(srv, encode { jsonrpc = "2.0", id = id or 1, method = method, params = params })
  assert.are.equal(200, status, text)
  return decode(text)
end

local function result(srv, method, params)
  local r = rpc(srv, method, params)
  assert.is_nil(r.error, r.error and r.error.message)
  return r.result
end

local function err_of(srv, method, params)
  local r = rpc(srv, method, params)
  assert.is_truthy(r.error, "expected an error from " .. method)
  return r.error
end

describe("channel", function()
  local w, srv, dir
  before_each(function()
    dir = H.tmpdir()
    w = world()
    assert(w:save(dir .. "/scene.yaml"))
    srv = assert(keel.serve(w, { port = 0, token = TOKEN, scene = dir .. "/scene.yaml", paused = true }))
  end)
  after_each(function()
    srv:close()
    w:close()
    H.rmrf(dir)
  end)

  describe("transport and safety", function()
    it("prints its URL with the token in the fragment, on loopback", function()
      assert.are.equal(("http://127.0.0.1:%d/#token=%s"):format(srv.port, TOKEN), srv.url)
      local other = assert(keel.serve(w, { port = 0 }))
      assert.matches("^http://127%.0%.0%.1:%d+/#token=%x+$", other.url)
      assert.are_not.equal(other.token, assert(keel.serve(w, { port = 0 })).token) -- per start
      other:close()
    end)

    it("refuses /rpc without the token (401), and with a wrong one", function()
      local status = post(srv, '{"jsonrpc":"2.0","id":1,"method":"world.info"}', "")
      assert.are.equal(401, status)
      status = post(srv, '{"jsonrpc":"2.0","id":1,"method":"world.info"}', "-H 'Authorization: Bearer nope'")
      assert.are.equal(401, status)
      assert.are.equal(401, (curl(srv, url(srv, "/events"))))
      assert.are.equal(401, (curl(srv, url(srv, "/events?token=nope"))))
    end)

    it("refuses a Host that is not loopback and another Origin (403)", function()
      local auth = "-H " .. q("Authorization: Bearer " .. TOKEN)
      local body = '{"jsonrpc":"2.0","id":1,"method":"world.info"}'
      assert.are.equal(403, (post(srv, body, auth .. " -H 'Host: evil.example:27760'")))
      assert.are.equal(403, (post(srv, body, auth .. " -H 'Origin: http://evil.example'")))
      assert.are.equal(403, (curl(srv, "-H 'Host: attacker.test' " .. url(srv, "/"))))
      local own = ("Origin: http://127.0.0.1:%d"):format(srv.port)
      assert.are.equal(200, (post(srv, body, auth .. " -H " .. q(own))))
      assert.are.equal(200, (post(srv, body, auth .. " -H " .. q(("Host: localhost:%d"):format(srv.port)))))
    end)

    it("refuses a repeated Host, Origin or Authorization header (400)", function()
      local auth = "-H " .. q("Authorization: Bearer " .. TOKEN)
      local body = '{"jsonrpc":"2.0","id":1,"method":"world.info"}'
      local own = ("127.0.0.1:%d"):format(srv.port)
      -- curl folds a repeated Host into one: the request goes over bash's /dev/tcp as written
      local function raw(extra)
        local base = os.tmpname()
        local text = ("POST /rpc HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n%sContent-Type: application/json\r\n"
          .. "Content-Length: %d\r\nConnection: close\r\n\r\n%s"):format(own, TOKEN, extra, #body, body)
        H.spit(base .. ".req", text)
        os.execute(("(bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; cat %s >&3; cat <&3' > %s 2>/dev/null; touch %s) &")
          :format(srv.port, q(base .. ".req"), q(base), q(base .. ".done")))
        local t0 = clock()
        while not H.file_exists(base .. ".done") do
          srv:poll(0.005)
          assert(clock() - t0 < 20, "the request did not finish")
        end
        local reply = H.slurp(base) or ""
        for _, f in ipairs { base, base .. ".req", base .. ".done" } do os.remove(f) end
        return tonumber(reply:match("^HTTP/1%.%d (%d+)"))
      end
      assert.are.equal(200, raw(""))
      assert.are.equal(400, raw("Host: evil.com\r\n"))
      assert.are.equal(400, raw("Origin: http://evil.com\r\nOrigin: http://" .. own .. "\r\n"))
      assert.are.equal(400, raw("Authorization: Bearer wrong\r\n"))
      assert.are.equal(200, (post(srv, body, auth .. " -H " .. q("Origin: http://" .. own))))
    end)

    it("closes connections that send no request within header_timeout, so a flood locks nobody out", function()
      local small = assert(keel.serve(w, { port = 0, token = TOKEN, max_connections = 8, per_ip = 4,
        header_timeout = 1 }))
      local base = os.tmpname()
      -- more idle connections than one address may hold: each waits for the server to close it
      for i = 1, 6 do
        os.execute(("(bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; cat <&3 >/dev/null' 2>/dev/null; touch %s) &")
          :format(small.port, q(base .. "." .. i)))
      end
      local t0 = clock()
      while clock() - t0 < 0.5 do small:poll(0.01) end
      -- a valid client is refused while the flood holds every place, and served once the header
      -- timeout closes it: within a few seconds, trying again as a browser does
      local status
      repeat
        status = curl(small, "-H " .. q("Authorization: Bearer " .. TOKEN)
          .. " -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.info\"}' " .. url(small, "/rpc"), { max_time = 2 })
      until status == 200 or clock() - t0 > 6
      assert.are.equal(200, status)
      assert.is_true(clock() - t0 < 6, "the valid client waited too long")
      -- and every idle connection was closed by the server
      local closed = 0
      while clock() - t0 < 8 do
        small:poll(0.05)
        closed = 0
        for i = 1, 6 do if H.file_exists(base .. "." .. i) then closed = closed + 1 end end
        if closed == 6 then break end
      end
      assert.are.equal(6, closed)
      for i = 1, 6 do os.remove(base .. "." .. i) end
      os.remove(base)
      small:close()
    end)

    it("refuses bodies over 1 MiB (413)", function()
      local big = '{"jsonrpc":"2.0","id":1,"method":"world.info","params":{"pad":"' .. ("x"):rep(1024 * 1024) .. '"}}'
      assert.are.equal(413, (post(srv, big)))
    end)

    it("serves the inspector's static files without a token", function()
      local status, body, hdr = curl(srv, url(srv, "/"))
      assert.are.equal(200, status)
      assert.matches("<html", body)
      assert.matches("text/html", hdr)
      assert.are.equal(404, (curl(srv, url(srv, "/no-such-file.js"))))
      assert.are.equal(404, (curl(srv, "--path-as-is " .. url(srv, "/../channel.lua"))))
    end)

    it("answers JSON-RPC errors with HTTP 200 and the codes of the contract", function()
      local status, text = post(srv, "{not json")
      assert.are.equal(200, status)
      local r = decode(text)
      assert.are.equal(-32700, r.error.code)
      assert.are.equal(channel.null, r.id)
      r = decode(select(2, post(srv, '{"jsonrpc":"1.0","id":7,"method":"world.info"}')))
      assert.are.equal(-32600, r.error.code)
      assert.are.equal(7, r.id)
      r = decode(select(2, post(srv, '{"jsonrpc":"2.0","id":7,"method":3}')))
      assert.are.equal(-32600, r.error.code)
      r = decode(select(2, post(srv, "[]")))
      assert.are.equal(-32600, r.error.code)
      r = decode(select(2, post(srv, '"just a string"')))
      assert.are.equal(-32600, r.error.code)
      assert.are.equal(-32601, err_of(srv, "no.such").code)
      assert.are.equal(-32602, err_of(srv, "object.get", {}).code) -- missing
      assert.are.equal(-32602, err_of(srv, "object.get", { object = 5 }).code) -- wrong type
      assert.are.equal(-32602, err_of(srv, "world.info", { bogus = 1 }).code) -- unknown
      assert.are.equal(-32602, err_of(srv, "object.list", { limit = 1001 }).code)
      assert.are.equal(-32602, err_of(srv, "object.get", channel.array { "A" }).code) -- by position
      local e = err_of(srv, "object.get", { object = "Nobody" })
      assert.are.equal(-32000, e.code)
      assert.are.equal("NotFound", e.data.code)
      assert.are.equal("NotFound", e.data.diagnostics[1].code)
      e = err_of(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { value = 500 } })
      assert.are.equal(-32000, e.code)
      assert.are.equal("InvalidArgument", e.data.code)
      e = err_of(srv, "object.destroy", { object = "root" })
      assert.are.equal("ProtectedEntity", e.data.code)
    end)

    it("answers a batch in one response, leaving out notifications", function()
      local _, text = post(srv, encode(channel.array {
        { jsonrpc = "2.0", id = 1, method = "world.info" },
        { jsonrpc = "2.0", method = "world.pause" }, -- a notification: no answer
        { jsonrpc = "2.0", id = "x", method = "nope" },
        { jsonrpc = "2.0", id = 3, method = "object.get", params = { object = "A" } },
        5,
      }))
      local r = decode(text)
      assert.are.equal(4, #r)
      assert.are.equal("Channel", r[1].result.name)
      assert.are.equal("x", r[2].id)
      assert.are.equal(-32601, r[2].error.code)
      assert.are.equal("A", r[3].result.name)
      assert.are.equal(-32600, r[4].error.code)
      local status, empty = post(srv, '[{"jsonrpc":"2.0","method":"world.pause"}]')
      assert.are.equal(200, status)
      assert.are.equal("", empty)
    end)
  end)

  describe("methods", function()
    it("world.info", function()
      local r = result(srv, "world.info")
      assert.are.equal("Channel", r.name)
      assert.are.equal(w.uuid, r.uuid)
      assert.are.equal(w.revision, r.revision)
      assert.are.equal(3, r.entities)
      assert.are.equal(true, r.paused)
      assert.are.equal(0, r.errors)
      assert.are.equal(0, r.frame)
    end)

    it("object.list pages in run order, filters by parent, kind and name", function()
      local r = result(srv, "object.list")
      assert.are.equal(3, r.total)
      assert.are.same({ "A", "B", "C" }, { r.entities[1].name, r.entities[2].name, r.entities[3].name })
      local a = r.entities[1]
      assert.are.equal(w:find("A").uuid, a.uuid)
      assert.are.equal(1, a.children)
      assert.are.same({ "core:transform", "ch:stamina" }, { a.kinds[1], a.kinds[2] })
      assert.are.equal(channel.null, a.parent)
      assert.are.equal(a.uuid, r.entities[2].parent)
      r = result(srv, "object.list", { offset = 1, limit = 1 })
      assert.are.equal("B", r.entities[1].name)
      assert.are.equal(3, r.total)
      assert.are.equal(1, #result(srv, "object.list", { parent = "A" }).entities)
      assert.are.equal(2, #result(srv, "object.list", { parent = "root" }).entities)
      assert.are.equal(1, #result(srv, "object.list", { kind = "ch:stamina" }).entities)
      assert.are.equal("C", result(srv, "object.list", { name = "C" }).entities[1].name)
      assert.are.equal(0, #result(srv, "object.list", { offset = 10 }).entities)
    end)

    it("object.get lists components in membership order, unknown ones flagged", function()
      local w2 = assert(keel.load(H.ROOT .. "/scenes/unknown_kind.yaml"))
      local s2 = assert(keel.serve(w2, { port = 0, token = TOKEN }))
      local r = result(s2, "object.get", { object = "Dock" })
      assert.are.equal("core:transform", r.components[1].kind)
      assert.are.equal(true, r.components[1].loaded)
      assert.is_nil(r.components[1].unknown)
      local u = r.components[2]
      assert.are.equal("mod:winch", u.kind)
      assert.are.equal(false, u.loaded)
      assert.are.equal(true, u.unknown)
      assert.are.equal(12.5, u.body.rope_length)
      assert.are.equal(300, u.body.motor.torque)
      assert.are.equal("starboard", u.body.hooks[2])
      s2:close()
      w2:close()
      r = result(srv, "object.get", { object = w:find("A").uuid })
      assert.are.equal("A", r.name)
      assert.are.same({ 1, 2, 3 }, { r.components[1].body.position[1], r.components[1].body.position[2], r.components[1].body.position[3] })
      assert.are.equal(0, r.components[2].slot)
      assert.are.equal(true, r.components[2].enabled)
      assert.are.equal("number", type(r.components[2].version))
      -- the world's revision it was read at, which a page compares with the events' (a toggle too)
      assert.are.equal(w.revision, r.revision)
      result(srv, "component.enable", { object = "A", kind = "ch:stamina", enabled = false })
      local after = result(srv, "object.get", { object = "A" })
      assert.is_true(after.revision > r.revision)
      assert.are.equal(false, after.components[2].enabled)
      result(srv, "component.enable", { object = "A", kind = "ch:stamina", enabled = true })
      assert.are.equal("", result(srv, "object.get", { object = "root" }).name)
    end)

    it("component.kinds gives what keel kinds --json gives", function()
      local r = result(srv, "component.kinds")
      local by = {}
      for _, k in ipairs(r) do by[k.key] = k end
      local k = by["ch:stamina"]
      assert.are.equal("value", k.fields[1].key)
      assert.are.equal("float", k.fields[1].type)
      assert.are.equal(100, k.fields[1].default)
      assert.are.equal(0, k.fields[1].min)
      assert.are.equal(100, k.fields[1].max)
      assert.are.same({ "walk", "run" }, { k.fields[2].choices[1], k.fields[2].choices[2] })
      assert.are.equal(channel.null, k.fields[1].choices)
      assert.are.equal("one", k.multiplicity)
      assert.is_truthy(by["core:transform"].builtin)
    end)

    it("component.get and component.set: validated, versioned, one history entry", function()
      local r = result(srv, "component.get", { object = "A", kind = "ch:stamina" })
      assert.are.same({ kind = "ch:stamina", slot = 0, value = 100 }, { kind = r.kind, slot = r.slot, value = r.body.value })
      local v0 = r.version
      local s = result(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { value = 40, mode = "run" } })
      assert.is_true(s.version > v0)
      assert.are.equal(40, w:find("A"):get("ch:stamina").value)
      assert.are.equal("run", w:find("A"):get("ch:stamina").mode)
      -- a refused write changes nothing, not even the fields before it
      local e = err_of(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { mode = "walk", value = -1 } })
      assert.are.equal("InvalidArgument", e.data.code)
      assert.are.equal("run", w:find("A"):get("ch:stamina").mode)
      assert.are.equal("NotFound", err_of(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { nope = 1 } }).data.code)
      assert.are.equal("NotFound", err_of(srv, "component.get", { object = "C", kind = "ch:stamina" }).data.code)
      -- an entity field by UUID, and cleared with null
      result(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { target = w:find("C").uuid } })
      assert.are.equal(w:find("C"), w:find("A"):get("ch:stamina").target)
      result(srv, "component.set", { object = "A", kind = "ch:stamina", fields = { target = channel.null } })
      assert.is_nil(w:find("A"):get("ch:stamina").target)
      -- undo takes back one whole call at a time
      assert.are.equal("component.set", result(srv, "history.undo"))
      assert.are.equal(w:find("C"), w:find("A"):get("ch:stamina").target)
      result(srv, "history.undo")
      result(srv, "history.undo")
      assert.are.equal(100, w:find("A"):get("ch:stamina").value)
      assert.are.equal("walk", w:find("A"):get("ch:stamina").mode)
      assert.are.equal(false, result(srv, "history.undo"))
      assert.are.equal("component.set", result(srv, "history.redo"))
      assert.are.equal(40, w:find("A"):get("ch:stamina").value)
    end)

    it("component.add, component.remove, component.enable", function()
      local r = result(srv, "component.add", { object = "C", kind = "ch:tag", body = { n = 5 } })
      assert.are.same({ "ch:tag", 0, 5 }, { r.kind, r.slot, r.body.n })
      r = result(srv, "component.add", { object = "C", kind = "ch:tag", slot = 3 })
      assert.are.equal(3, r.slot)
      assert.are.equal("InvalidOperation", err_of(srv, "component.add", { object = "A", kind = "ch:stamina" }).data.code)
      assert.are.equal("NotFound", err_of(srv, "component.add", { object = "A", kind = "no:kind" }).data.code)
      r = result(srv, "component.enable", { object = "C", kind = "ch:tag", slot = 3, enabled = false })
      assert.are.equal(false, r.enabled)
      assert.is_false(w:find("C"):get("ch:tag", 3).enabled)
      result(srv, "history.undo")
      assert.is_true(w:find("C"):get("ch:tag", 3).enabled)
      result(srv, "history.redo")
      assert.is_false(w:find("C"):get("ch:tag", 3).enabled)
      r = result(srv, "component.remove", { object = "C", kind = "ch:tag", slot = 0 })
      assert.are.equal(5, r.body.n)
      assert.is_nil(w:find("C"):get("ch:tag", 0))
      result(srv, "history.undo")
      assert.are.equal(5, w:find("C"):get("ch:tag", 0).n)
      assert.are.equal("NotFound", err_of(srv, "component.remove", { object = "C", kind = "ch:stamina" }).data.code)
    end)

    it("object.spawn, object.destroy, object.reparent, object.rename, each undoable", function()
      local r = result(srv, "object.spawn", { name = "D", parent = "C",
        components = channel.array { "core:transform", { kind = "ch:stamina", body = { value = 7 } } } })
      local d = w:find(r.uuid)
      assert.are.equal("D", d.name)
      assert.are.equal(w:find("C"), d.parent)
      assert.are.equal(7, d:get("ch:stamina").value)
      assert.are.equal(-32602, err_of(srv, "object.spawn", { components = channel.array { 5 } }).code)
      assert.are.equal("InvalidArgument", err_of(srv, "object.spawn", { components = channel.array { { kind = "ch:stamina", body = { value = 200 } } } }).data.code)
      assert.are.equal(r.uuid, result(srv, "object.rename", { object = r.uuid, name = "E" }).uuid)
      assert.are.equal("E", w:find(r.uuid).name)
      result(srv, "object.reparent", { object = "E", parent = "A" })
      assert.are.equal(w:find("A"), w:find(r.uuid).parent)
      result(srv, "object.reparent", { object = "E" })
      assert.is_nil(w:find(r.uuid).parent)
      assert.are.equal("InvalidOperation", err_of(srv, "object.reparent", { object = "A", parent = "B" }).data.code) -- a cycle
      result(srv, "object.destroy", { object = "E" })
      assert.is_nil(w:find(r.uuid))
      assert.are.equal("object.destroy", result(srv, "history.undo"))
      assert.are.equal("E", w:find(r.uuid).name)
      result(srv, "history.undo") -- reparent to root
      result(srv, "history.undo") -- reparent to A
      result(srv, "history.undo") -- rename
      assert.are.equal("D", w:find(r.uuid).name)
      assert.are.equal(w:find("C"), w:find(r.uuid).parent)
      result(srv, "history.undo") -- spawn
      assert.is_nil(w:find(r.uuid))
      result(srv, "history.redo")
      assert.are.equal("D", w:find(r.uuid).name)
    end)

    it("world.pause, world.resume, world.step", function()
      assert.are.same({ frame = 0, paused = true }, result(srv, "world.pause"))
      assert.are.equal(3, result(srv, "world.step", { frames = 3 }).frame)
      assert.are.equal(4, result(srv, "world.step").frame)
      assert.are.equal(4, result(srv, "world.info").frame)
      assert.are.equal(-32602, err_of(srv, "world.step", { frames = 0 }).code)
      assert.are.equal(false, result(srv, "world.resume").paused)
      assert.are.equal("InvalidOperation", err_of(srv, "world.step").data.code)
      -- a running world served from its own loop steps between requests
      local n = serve.loop(srv, { frames = 5 })
      assert.are.equal(5, n)
      assert.are.equal(9, result(srv, "world.info").frame)
    end)

    it("world.save writes the scene's file, or a path inside its folder only", function()
      w:find("C").name = "Saved"
      assert.are.equal(dir .. "/scene.yaml", result(srv, "world.save").path)
      assert.matches("Saved", H.slurp(dir .. "/scene.yaml"))
      assert.are.equal(dir .. "/sub/../copy.yaml", dir .. "/sub/../copy.yaml") -- (the path as given)
      assert.are.equal(dir .. "/copy.yaml", result(srv, "world.save", { path = "copy.yaml" }).path)
      assert.is_truthy(keel.load(dir .. "/copy.yaml"))
      assert.are.equal("InvalidArgument", err_of(srv, "world.save", { path = "../escape.yaml" }).data.code)
      assert.are.equal("InvalidArgument", err_of(srv, "world.save", { path = "/tmp/escape.yaml" }).data.code)
      assert.is_false(H.file_exists(dir .. "/../escape.yaml"))
    end)

    it("world.errors lists callback failures, since an index", function()
      keel.kind{ key = "ch:broken", update = function() error("boom") end }
      w:find("C"):add("ch:broken")
      result(srv, "world.step", { frames = 2 })
      local all = result(srv, "world.errors")
      assert.is_true(#all >= 1)
      assert.matches("boom", all[1].message)
      assert.are.equal("ch:broken", all[1].kind)
      assert.are.equal(w:find("C").uuid, all[1].entity)
      assert.are.equal(#all - 1, #result(srv, "world.errors", { since = 1 }))
      assert.are.equal(#all, result(srv, "world.info").errors)
    end)
  end)

  describe("watching", function()
    it("frees an event stream whose client went away at once, not at the next change", function()
      local base = os.tmpname()
      os.execute("env -u LD_PRELOAD curl -s -N -m 30 " .. url(srv, "/events?token=" .. TOKEN) .. " > /dev/null 2>&1 & echo $! > "
        .. q(base))
      local pid = H.slurp(base):match("%d+")
      local t0 = clock()
      while srv.http:streams() == 0 and clock() - t0 < 10 do srv:poll(0.01) end
      assert.are.equal(1, srv.http:streams())
      for _ = 1, 20 do srv:poll(0.01) end -- its snapshot is out: the stream waits, suspended
      os.execute("kill -KILL " .. pid)
      t0 = clock()
      while srv.http:streams() > 0 and clock() - t0 < 3 do srv:poll(0.01) end
      assert.are.equal(0, srv.http:streams())
      os.remove(base)
    end)

    it("sends a snapshot, then one delta per frame with only the changed fields", function()
      local a = w:find("A")
      local frames = 0
      local status, body = curl(srv, "-N " .. url(srv, "/events?token=" .. TOKEN), { max_time = 2, each = function()
        -- the script starts once the stream is open: a loaded machine may start curl late
        if srv.watch.count == 0 and frames == 0 then return end
        frames = frames + 1
        if frames == 20 then a:get("ch:stamina").value = 50 end
        if frames == 40 then w:spawn("New") end
        if frames == 60 then w:find("C"):destroy() end
        if frames == 70 then w:find("B").name = "Bee" end
        if frames == 80 then a:get("core:transform").enabled = false end
        if frames % 10 == 0 then srv.channel:step() end
      end })
      assert.are.equal(200, status)
      local events = {}
      for name, data in body:gmatch("event: (%w+)\ndata: ([^\n]*)\n\n") do events[#events + 1] = { name = name, data = decode(data) } end
      assert.are.equal("snapshot", events[1].name)
      local snap = events[1].data
      local names = {}
      for _, e in ipairs(snap.entities) do names[#names + 1] = e.name end
      assert.are.same({ "", "A", "B", "C" }, names)
      assert.are.equal(100, snap.entities[2].components[2].body.value)
      local changed, spawned, destroyed, updated, toggled
      for i = 2, #events do
        assert.are.equal("delta", events[i].name)
        local d = events[i].data
        for _, c in ipairs(d.changed) do
          if c.kind == "ch:stamina" then changed = c end
          if c.kind == "core:transform" and c.enabled ~= nil then toggled = c end
        end
        if #d.spawned > 0 then spawned = d.spawned[1] end
        if #d.destroyed > 0 then destroyed = d.destroyed[1] end
        if #d.updated > 0 then updated = d.updated[1] end
      end
      assert.is_truthy(changed, "a delta with the changed component")
      assert.are.equal(a.uuid, changed.entity)
      assert.are.same({ value = 50 }, changed.fields) -- only what changed
      assert.are.equal(a:get("ch:stamina").version, changed.version)
      assert.are.equal("New", spawned.name)
      assert.are.equal(w:find("New").uuid, spawned.uuid)
      assert.is_string(destroyed)
      assert.are.equal("Bee", updated.name) -- renamed
      assert.are.equal(false, toggled.enabled)
      assert.are.equal(a.uuid, toggled.entity)
      assert.are.equal(a.uuid, updated.parent)
    end)

    it("watches only the entities named in ?entities=", function()
      local _, body = curl(srv, "-N " .. url(srv, "/events?token=" .. TOKEN .. "&entities=C," .. w:find("B").uuid), { max_time = 1,
        each = function() end })
      local snap = decode(body:match("event: snapshot\ndata: ([^\n]*)"))
      assert.are.equal(2, #snap.entities)
      local names = { snap.entities[1].name, snap.entities[2].name }
      table.sort(names)
      assert.are.same({ "B", "C" }, names)
    end)

    it("costs nothing and sends nothing while nothing changes", function()
      local _, body = curl(srv, "-N " .. url(srv, "/events?token=" .. TOKEN .. "&kinds=ch:stamina"), { max_time = 1,
        each = function() srv.channel:step() end })
      local n = select(2, body:gsub("event: ", ""))
      assert.are.equal(1, n) -- the snapshot only
      assert.matches("ch:stamina", body)
      assert.is_nil(body:find("core:transform", 1, true)) -- only the kinds asked for
    end)

    it("resends a snapshot to a subscriber more than 256 frames behind", function()
      local pushed = {}
      local queued = 0
      local wt = require("keel.watch").new(srv.channel, function(_, text) pushed[#pushed + 1] = text; queued = queued + 1; return true end,
        function() return queued end, function() queued = 0 end)
      wt:subscribe({})
      wt:publish()
      assert.matches("^event: snapshot", pushed[1])
      local c = w:find("A"):get("ch:stamina")
      for i = 1, 300 do
        c.value = i % 100
        srv.channel:on_step()
        wt:publish()
      end
      local snapshots = 0
      for _, p in ipairs(pushed) do if p:match("^event: snapshot") then snapshots = snapshots + 1 end end
      assert.are.equal(2, snapshots)
    end)
  end)
end)

describe("keel.channel without HTTP", function()
  it("streams an edit made after an undo, even when the revision comes back to the one last sent", function()
    local w = world()
    local ch = channel.new(w)
    ch:call("world.pause")
    local pushed = {}
    local wt = require("keel.watch").new(ch, function(_, text) pushed[#pushed + 1] = text; return true end,
      function() return 0 end, function() end)
    wt:subscribe({})
    wt:publish()
    ch:call("object.rename", { object = "A", name = "A1" })
    wt:publish()
    local sent = #pushed
    -- between two publishes: undo (the revision goes back) and another edit (it comes forward again)
    ch:call("history.undo")
    ch:call("object.rename", { object = "A", name = "A2" })
    assert.are.equal(2, sent)
    wt:publish()
    assert.are.equal(3, #pushed)
    assert.matches('"A2"', pushed[3])
    w:close()
  end)

  it("answers a request text with a response text", function()
    local w = world()
    local ch = channel.new(w)
    local r = decode(ch:handle('{"jsonrpc":"2.0","id":1,"method":"object.get","params":{"object":"A"}}'))
    assert.are.equal("A", r.result.name)
    assert.are.equal(3, ch:call("world.info").entities)
    assert.are.equal("", ch:handle('{"jsonrpc":"2.0","method":"world.info"}'))
    w:close()
  end)

  it("refuses an integer param out of range before using it, promptly, and answers the next request", function()
    local w = world()
    local ch = channel.new(w, { paused = true })
    local function req(method, params)
      return decode(ch:handle(json.encode { jsonrpc = "2.0", id = 7, method = method, params = params }))
    end
    local t0 = clock()
    for _, case in ipairs {
      { "world.errors", { since = math.maxinteger } }, { "world.errors", { since = math.mininteger } },
      { "world.errors", { since = -10000000 } }, { "object.list", { offset = math.maxinteger } },
      { "object.list", { limit = math.maxinteger } }, { "object.list", { offset = -1 } },
      { "component.get", { object = "A", kind = "core:transform", slot = math.maxinteger } },
      { "world.step", { frames = math.mininteger } },
    } do
      local r = req(case[1], case[2])
      assert.are.equal(-32602, r.error and r.error.code, case[1])
      assert.truthy(r.error.message:find("0..2147483647", 1, true), r.error.message)
    end
    assert.is_true(clock() - t0 < 1, "the refusals took long")
    assert.are.equal(3, req("world.info").result.entities)
    assert.are.equal(0, #req("world.errors", { since = 2147483647 }).result)
    w:close()
  end)

  it("says nesting too deep (-32600) for valid JSON nested deeper than 128, parse error for bad JSON", function()
    local w = world()
    local ch = channel.new(w)
    local deep = decode(ch:handle(('{"jsonrpc":"2.0","id":1,"method":"world.info","params":{"a":%s1%s}}')
      :format(("["):rep(200), ("]"):rep(200))))
    assert.are.equal(-32600, deep.error.code)
    assert.truthy(deep.error.message:find("nesting too deep", 1, true), deep.error.message)
    assert.are.equal(-32700, decode(ch:handle("{not json")).error.code)
    w:close()
  end)

  it("steps at most max_frames (1,000) per request and per batch", function()
    local w = world()
    local ch = channel.new(w, { paused = true })
    assert.are.equal(1000, channel.MAX_FRAMES)
    local frames, step = 0, ch.step
    ch.step = function(self, dt) frames = frames + 1; return step(self, dt) end
    local function text(reqs) return decode(ch:handle(json.encode(reqs))) end
    local one = function(id, frames) return { jsonrpc = "2.0", id = id, method = "world.step", params = { frames = frames } } end
    assert.are.equal(-32602, text(one(1, 1001)).error.code)
    assert.are.equal(0, frames)
    assert.is_nil(text(one(2, 1000)).error)
    assert.are.equal(1000, frames)
    local batch = text { one(3, 600), one(4, 400), one(5, 1) }
    assert.is_nil(batch[1].error)
    assert.is_nil(batch[2].error)
    assert.are.equal(-32602, batch[3].error.code)
    assert.truthy(batch[3].error.message:find("at most 1000 frames", 1, true), batch[3].error.message)
    assert.are.equal(2000, frames)
    assert.is_nil(text(one(6, 1)).error) -- the next text starts afresh
    assert.are.equal(2001, frames)
    w:close()
  end)

  it("object.spawn refuses an unknown key in a component item, spawning nothing", function()
    local w = world()
    local ch = channel.new(w)
    local before = w:count()
    local r = decode(ch:handle(json.encode { jsonrpc = "2.0", id = 1, method = "object.spawn",
      params = { name = "X", components = { { kind = "ch:stamina", bdy = { value = 5 } } } } }))
    assert.are.equal(-32602, r.error.code)
    assert.truthy(r.error.message:find("unknown key 'bdy'", 1, true), r.error.message)
    assert.are.equal(before, w:count())
    w:close()
  end)

  it("world.save with no path writes the scene it was given by a relative path with a folder", function()
    local lfs = require "lfs"
    local dir = H.tmpdir()
    assert(lfs.mkdir(dir .. "/scenes"))
    local w = world()
    assert(w:save(dir .. "/scenes/s.yaml"))
    local here = lfs.currentdir()
    assert(lfs.chdir(dir .. "/scenes"))
    local ch = channel.new(w, { scene = "../scenes/s.yaml" })
    assert(lfs.chdir(dir))
    local ch2 = channel.new(w, { scene = "scenes/s.yaml" })
    assert(lfs.chdir(here))
    local real = dir:sub(1, 1) == "/" and dir or (here .. "/" .. dir)
    assert.are.equal(real .. "/scenes/s.yaml", ch:call("world.save").path)
    assert.are.equal(real .. "/scenes/s.yaml", ch2:call("world.save").path)
    assert.are.equal(real .. "/scenes/copy.yaml", ch2:call("world.save", { path = "copy.yaml" }).path)
    w:close()
    H.rmrf(dir)
  end)

  it("world.save takes an absolute path inside the scene's folder, however the folder is named", function()
    local lfs = require "lfs"
    local base = H.tmpdir()
    assert(lfs.mkdir(base .. "/real"))
    assert(os.execute("ln -s " .. q(base .. "/real") .. " " .. q(base .. "/link")))
    local real = require("keel.core.channel").realpath(base .. "/real")
    local w = world()
    assert(w:save(real .. "/s.yaml"))
    local here = lfs.currentdir()
    assert(lfs.chdir(real))
    local ch = channel.new(w, { scene = "s.yaml" }) -- as `keel serve s.yaml` in the scene's folder
    assert(lfs.chdir(here))
    assert.are.equal(real .. "/a.yaml", ch:call("world.save", { path = real .. "/a.yaml" }).path)
    assert.are.equal(real .. "/b.yaml", ch:call("world.save", { path = base .. "/link/b.yaml" }).path)
    local via_link = channel.new(w, { scene = base .. "/link/s.yaml" })
    assert.are.equal(real .. "/c.yaml", via_link:call("world.save", { path = real .. "/c.yaml" }).path)
    for _, path in ipairs { base .. "/d.yaml", real .. "/../d.yaml", "../d.yaml" } do
      local ok, e = pcall(ch.call, ch, "world.save", { path = path })
      assert.is_false(ok, path)
      assert.are.equal("InvalidArgument", e.code, tostring(e.message))
    end
    assert.is_nil(lfs.attributes(base .. "/d.yaml"))
    w:close()
    H.rmrf(base)
  end)

  it("world.save refuses a path that leads outside the scene's folder through a symlink", function()
    local lfs = require "lfs"
    local dir, outside = H.tmpdir(), H.tmpdir()
    local w = world()
    assert(w:save(dir .. "/s.yaml"))
    assert(os.execute("ln -s " .. q(outside) .. " " .. q(dir .. "/link")))
    assert(os.execute("ln -s " .. q(outside .. "/x.yaml") .. " " .. q(dir .. "/file.yaml")))
    local ch = channel.new(w, { scene = dir .. "/s.yaml" })
    for _, path in ipairs { "link/x.yaml", "file.yaml" } do
      local ok, e = pcall(ch.call, ch, "world.save", { path = path })
      assert.is_false(ok)
      assert.are.equal("InvalidArgument", e.code, tostring(e.message))
    end
    assert.is_nil(lfs.attributes(outside .. "/x.yaml"))
    assert.are.equal(dir .. "/s.yaml", ch:call("world.save").path)
    w:close()
    H.rmrf(dir)
    H.rmrf(outside)
  end)

  it("never shows a file path in an internal error", function()
    assert.are.equal("attempt to index a nil value",
      channel.internal_text("/usr/share/lua/5.4/keel/channel.lua:251: attempt to index a nil value"))
    assert.are.equal("bad", channel.internal_text({ message = "[string \"x\"]:3: bad" }))
    assert.are.equal("no position here", channel.internal_text("no position here"))
  end)
end)

describe("the REPL's serve()", function()
  it("serves the REPL's world and says where", function()
    local code, out, err = H.run_keel(H.find_keel(), "repl " .. q(H.ROOT .. "/scenes/demo.yaml"),
      "print(serve(0))\nprint(require('keel.repl').server.channel.world == world)\nprint(serve('x'))\n")
    assert.matches("serving world at http://127%.0%.0%.1:%d+/#token=%x+", out)
    assert.matches("\ntrue\n", out)
    assert.are.equal(1, code) -- serve('x') raised
    assert.matches("InvalidArgument", err)
  end)
end)

describe("keel serve", function()
  -- Starts `keel serve SCENE --port 0` in dir (in the background) and waits for its URL:
  -- the port, the token and the process id.
  local function start_serve(dir, scene)
    local out = dir .. "/out"
    os.execute("cd " .. q(dir) .. " && " .. H.NO_PRELOAD .. q(H.find_keel()) .. " serve " .. q(scene)
      .. " --port 0 > " .. q(out) .. " 2>&1 & echo $! > " .. q(dir .. "/pid"))
    local line
    for _ = 1, 400 do
      line = (H.slurp(out) or ""):match("(http://[^\n]+)")
      if line then break end
      os.execute("sleep 0.05")
    end
    assert.is_truthy(line, H.slurp(out))
    local port, token = line:match(":(%d+)/#token=(%x+)")
    return port, token, H.slurp(dir .. "/pid"):match("%d+")
  end

  it("serves a paused world until it is stopped", function()
    local dir = H.tmpdir()
    local w = world()
    assert(w:save(dir .. "/s.yaml"))
    w:close()
    local port, token, pid = start_serve(dir, "s.yaml")
    local function call(body)
      local p = io.popen("env -u LD_PRELOAD curl -s -m 5 -H " .. q("Authorization: Bearer " .. token) .. " -d " .. q(body)
        .. " http://127.0.0.1:" .. port .. "/rpc")
      local s = p:read("a")
      p:close()
      return decode(s)
    end
    local info = call('{"jsonrpc":"2.0","id":1,"method":"world.info"}').result
    assert.are.equal(true, info.paused)
    assert.are.equal(0, info.frame)
    os.execute("sleep 0.2")
    assert.are.equal(0, call('{"jsonrpc":"2.0","id":1,"method":"world.info"}').result.frame) -- nothing steps
    assert.are.equal(2, call('{"jsonrpc":"2.0","id":1,"method":"world.step","params":{"frames":2}}').result.frame)
    os.execute("kill -INT " .. pid)
    H.rmrf(dir)
  end)

  it("stops on SIGTERM while a long request is being answered, answering it an error", function()
    local dir = H.tmpdir()
    -- a kind whose update takes 10 ms: 1,000 frames (one request's most) are 10 s of stepping
    assert(os.execute("mkdir -p " .. q(dir .. "/kinds")))
    H.spit(dir .. "/kinds/slow.lua", [[
local keel = require "keel"
keel.kind { key = "slow:k", fields = { { "n", "int" } },
  update = function(self) local t = os.clock() while os.clock() - t < 0.01 do end self.n = self.n + 1 end }
]])
    local w = keel.world("Slow")
    w:spawn { name = "S" }
    assert(w:save(dir .. "/s.yaml"))
    w:close()
    local text = H.slurp(dir .. "/s.yaml"):gsub("components: %[%]",
      "components:\n  - kind: slow:k\n    version: 1\n    slot: 0\n    body:\n      n: 0", 1)
    H.spit(dir .. "/s.yaml", text)
    local port, token, pid = start_serve(dir, "s.yaml")
    -- 1,000 frames of 10 ms: the server is inside that request
    os.execute("(env -u LD_PRELOAD curl -s -m 60 -H " .. q("Authorization: Bearer " .. token)
      .. " -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.step\",\"params\":{\"frames\":1000}}'"
      .. " http://127.0.0.1:" .. port .. "/rpc > " .. q(dir .. "/reply") .. "; touch " .. q(dir .. "/done") .. ") &")
    os.execute("sleep 0.5")
    os.execute("kill -TERM " .. pid)
    local t0 = clock()
    while os.execute("kill -0 " .. pid .. " 2>/dev/null") and clock() - t0 < 10 do os.execute("sleep 0.05") end
    local alive = os.execute("kill -0 " .. pid .. " 2>/dev/null")
    if alive then os.execute("kill -KILL " .. pid) end
    assert.is_falsy(alive, "keel serve still runs 10 s after SIGTERM")
    for _ = 1, 200 do
      if H.file_exists(dir .. "/done") then break end
      os.execute("sleep 0.05")
    end
    local reply = decode(H.slurp(dir .. "/reply"))
    assert.are.equal(-32603, reply.error.code)
    assert.truthy(reply.error.message:find("interrupted", 1, true), reply.error.message)
    H.rmrf(dir)
  end)

  it("keel run --serve runs in real time and serves; --bind says so on stderr", function()
    local bin = H.find_keel()
    local scene = H.ROOT .. "/scenes/demo.yaml"
    local code, out, err = H.run_keel(bin, "run " .. q(scene) .. " --serve 0 --frames 6")
    assert.are.equal(0, code, err)
    assert.matches("serving .* %(running%) at http://127%.0%.0%.1:%d+/#token=%x+", out)
    assert.are.equal("", err)
    code, out, err = H.run_keel(bin, "run " .. q(scene) .. " --serve 0 --frames 1 --bind 0.0.0.0")
    assert.are.equal(0, code, err)
    assert.matches("serving on 0%.0%.0%.0", err)
    assert.matches("http://0%.0%.0%.0:%d+/#token=", out)
    code, _, err = H.run_keel(bin, "run " .. q(scene) .. " --serve 0 --save x.yaml")
    assert.are.equal(2, code)
    assert.matches("does not combine", err)
    code, _, err = H.run_keel(bin, "run " .. q(scene) .. " --bind 0.0.0.0")
    assert.are.equal(2, code)
    code, _, err = H.run_keel(bin, "serve")
    assert.are.equal(2, code)
    assert.matches("expected one SCENE", err)
    code, _, err = H.run_keel(bin, "serve " .. q(scene) .. " --port 70000")
    assert.are.equal(2, code)
    assert.matches("0%.%.65535", err)
  end)

  it("refuses a port in use, and says so", function()
    local w = world()
    local a = assert(keel.serve(w, { port = 0 }))
    local b, err = keel.serve(w, { port = a.port })
    assert.is_nil(b)
    assert.matches("cannot listen", err)
    a:close()
    w:close()
  end)
end)
