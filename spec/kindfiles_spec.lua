-- kindfiles_spec.lua — keel.kindfiles: the kinds directories run at start-up and again by reload().
local H = require "helper"
local keel = require "keel"
local lfs = require "lfs"

describe("keel.kindfiles", function()
  local kf, dir, saved, err

  -- a fresh module (its state is per require) writing to `err.text`
  before_each(function()
    saved = package.loaded["keel.kindfiles"]
    package.loaded["keel.kindfiles"] = nil
    kf = require "keel.kindfiles"
    err = { text = "" }
    kf.stderr = { write = function(_, ...) err.text = err.text .. table.concat({ ... }) end }
    dir = H.tmpdir()
    _G.KF_LOG = {}
  end)

  after_each(function()
    package.loaded["keel.kindfiles"] = saved
    _G.KF_LOG = nil
    H.rmrf(dir)
  end)

  local function logger(name)
    return 'table.insert(KF_LOG, "' .. name .. '")\n'
  end

  describe(".load()", function()
    it("runs the *.lua files in name order, skipping dot-files and other names", function()
      for _, name in ipairs{ "b.lua", "a.lua", "10.lua", ".hidden.lua", "notes.txt", "c.lua~", "d.lua.bak" } do
        H.spit(dir .. "/" .. name, logger(name))
      end
      assert.are.equal(0, kf.load(dir))
      assert.are.same({ "10.lua", "a.lua", "b.lua" }, KF_LOG)
      assert.are.equal("", err.text)
      assert.are.same({ dir }, kf.dirs)
      assert.are.equal(3, #kf.files)
      assert.are.equal(dir .. "/10.lua", kf.files[1].path)
      assert.are.equal(kf.content_hash(dir .. "/10.lua"), kf.files[1].hash)
      assert.are.equal("number", math.type(kf.files[1].hash) and "number")
    end)

    it("reports a directory that cannot be read, and counts it as one failure", function()
      assert.are.equal(1, kf.load(dir .. "/none"))
      assert.are.equal("keel: kinds directory " .. dir .. "/none: No such file or directory\n", err.text)
      assert.are.same({ dir .. "/none" }, kf.dirs) -- reload() looks again
    end)

    it("names the file and line of a keel.kind{} that raises an error object", function()
      H.spit(dir .. "/typo.lua", 'local keel = require "keel"\n\n'
        .. 'keel.kind{ key = "kf:typo", fields = { { "value", "flaot" } } }\n')
      assert.are.equal(1, kf.load(dir))
      assert.truthy(err.text:find("^keel: " .. dir:gsub("%p", "%%%0") .. "/typo%.lua:3: InvalidArgument: [^\n]*'flaot'\n$"),
        err.text)
    end)

    it("gives a plain error a traceback ending at the file's chunk, and a syntax error as Lua words it", function()
      H.spit(dir .. "/a.lua", 'local function f() error("kind file broke") end\nf()\n')
      H.spit(dir .. "/b.lua", "x = = 1\n")
      assert.are.equal(2, kf.load(dir))
      local a = dir .. "/a.lua"
      assert.are.equal("keel: " .. a .. ":1: kind file broke\nstack traceback:\n\t[C]: in function 'error'\n\t"
        .. a .. ":1: in local 'f'\n\t" .. a .. ":2: in main chunk\n"
        .. "keel: " .. dir .. "/b.lua:1: unexpected symbol near '='\n", err.text)
      assert.are.equal(2, #kf.files) -- recorded all the same
    end)

    it("warns when two files declare the same key; the later one wins", function()
      H.spit(dir .. "/a.lua", 'require("keel").kind{ key = "kf:twice", fields = { { "a", "int" } } }\n')
      H.spit(dir .. "/b.lua", 'require("keel").kind{ key = "kf:twice", fields = { { "b", "int" } } }\n')
      local real = keel.kind
      assert.are.equal(0, kf.load(dir))
      assert.are.equal("keel: " .. dir .. "/b.lua: warning: kf:twice was already declared by " .. dir
        .. "/a.lua; this declaration replaces it\n", err.text)
      assert.are.equal("b", keel.kind_info("kf:twice").fields[1].key)
      assert.are.equal(dir .. "/a.lua", kf.declared_by("kf:twice"))
      assert.is_nil(kf.declared_by("core:transform")) -- built in
      assert.are.equal(real, keel.kind) -- watched only while a file runs
    end)
  end)

  describe(".reload()", function()
    it("re-runs only the files that changed, and picks up new ones", function()
      H.spit(dir .. "/a.lua", logger("a"))
      H.spit(dir .. "/b.lua", logger("b"))
      kf.load(dir)
      assert.are.same({}, kf.reload())
      H.spit(dir .. "/b.lua", logger("b2"))
      H.spit(dir .. "/c.lua", logger("c"))
      assert.are.same({ dir .. "/b.lua", dir .. "/c.lua" }, kf.reload())
      assert.are.same({ "a", "b", "b2", "c" }, KF_LOG)
      assert.are.same({}, kf.reload())
      -- content is compared: a new time alone is no change ...
      lfs.touch(dir .. "/a.lua", lfs.attributes(dir .. "/a.lua", "modification") + 5)
      assert.are.same({}, kf.reload())
      -- ... and an edit of the same size within the same second is one
      local t = lfs.attributes(dir .. "/a.lua", "modification")
      H.spit(dir .. "/a.lua", logger("A"))
      lfs.touch(dir .. "/a.lua", t)
      assert.are.same({ dir .. "/a.lua" }, kf.reload())
      assert.are.same({ "a", "b", "b2", "c", "A" }, KF_LOG)
      assert.are.equal("", err.text)
    end)

    it("retries a file that failed once it changes", function()
      local file = dir .. "/k.lua"
      H.spit(file, 'local keel = require "keel"\nkeel.kind{ key = "kf:retry", fields = { { "a", "itn" } } }\n')
      assert.are.equal(1, kf.load(dir))
      assert.are.same({}, kf.reload()) -- unchanged: not run again
      -- fixed (a size that differs: times are whole seconds)
      H.spit(file, 'local keel = require "keel"\nkeel.kind{ key = "kf:retry", fields = { { "a", "int" } } } -- fixed\n')
      assert.are.same({ file }, kf.reload())
      assert.are.equal("a", keel.kind_info("kf:retry").fields[1].key)
      assert.are.equal(file, kf.declared_by("kf:retry"))
    end)

    it("reports errors as reload: FILE:LINE: and leaves the list without the file", function()
      local file = dir .. "/k.lua"
      H.spit(file, 'require("keel").kind{ key = "kf:hot", fields = { { "a", "int" } } }\n')
      kf.load(dir)
      H.spit(file, 'local keel = require("keel")\nkeel.kind{ key = "kf:hot", fields = { { "a", "itn" } } }\n')
      assert.are.same({}, kf.reload())
      assert.truthy(err.text:find("^reload: " .. file:gsub("%p", "%%%0") .. ":2: InvalidArgument: "), err.text)
    end)

    it("loads a kinds directory that was missing at start-up once it exists", function()
      kf.load(dir .. "/later")
      err.text = ""
      os.execute("mkdir " .. H.shell_quote(dir .. "/later"))
      H.spit(dir .. "/later/x.lua", logger("x"))
      assert.are.same({ dir .. "/later/x.lua" }, kf.reload())
      assert.are.same({ "x" }, KF_LOG)
    end)

    it("prints the warnings of a redeclaration, at the file and line that made it", function()
      H.spit(dir .. "/hp.lua", 'require("keel").kind{ key = "kf:hp", fields = { { "hp", "int" } } }\n')
      kf.load(dir)
      local w = keel.world("KF")
      local c = w:spawn("E"):add("kf:hp", { hp = 80 })
      H.spit(dir .. "/hp.lua", '\nrequire("keel").kind{ key = "kf:hp", fields = { { "hp", "int", max = 50 } } }\n')
      assert.are.same({ dir .. "/hp.lua" }, kf.reload())
      assert.are.equal(0, c.hp)
      assert.truthy(err.text:find("^reload: " .. dir:gsub("%p", "%%%0") .. "/hp%.lua:2: warning: entity 'E' %([^)]+%) "
        .. "in world 'KF': kf:hp slot 0: hp: 80 is above the maximum %(<= 50%); reset to its default\n$"), err.text)
    end)

    it("re-declaring a key from its own file is no warning; from another file it is", function()
      H.spit(dir .. "/a.lua", 'require("keel").kind{ key = "kf:own", fields = { { "a", "int" } } }\n')
      kf.load(dir)
      H.spit(dir .. "/a.lua", 'require("keel").kind{ key = "kf:own", fields = { { "a", "int" }, { "b", "int" } } }\n')
      assert.are.same({ dir .. "/a.lua" }, kf.reload())
      assert.are.equal("", err.text)
      H.spit(dir .. "/b.lua", 'require("keel").kind{ key = "kf:own", fields = { { "c", "int" } } }\n')
      assert.are.same({ dir .. "/b.lua" }, kf.reload())
      assert.are.equal("keel: " .. dir .. "/b.lua: warning: kf:own was already declared by " .. dir
        .. "/a.lua; this declaration replaces it\n", err.text)
    end)
  end)

  it("is what the REPL's reload() calls", function()
    package.loaded["keel.repl"] = nil
    local repl = require "keel.repl"
    H.spit(dir .. "/a.lua", logger("a"))
    kf.load(dir)
    H.spit(dir .. "/a.lua", logger("a2"))
    assert.are.same({ dir .. "/a.lua" }, repl.reload())
  end)
end)
