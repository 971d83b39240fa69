-- prompts/list and prompts/get.
local H = require "spec.helper"

local CONTENT = { "spec/fixtures/content" }

local function session(opts)
  opts = opts or {}
  opts.plugins = opts.plugins or CONTENT
  return H.session(opts)
end

local function get(c, name, args)
  return c:request("prompts/get", { name = name, arguments = args })
end

local function find(list, name)
  for _, x in ipairs(list) do if x.name == name then return x end end
end

describe("prompts", function()
  after_each(H.cleanup)

  describe("capabilities", function()
    it("initialize declares prompts with listChanged false when a plugin has prompts", function()
      local c = session()
      assert.are.same({ listChanged = false }, c.init_result.capabilities.prompts)
    end)

    it("with prompts only, initialize declares neither tools nor resources nor completions", function()
      local c = H.session{ plugins = { "spec/fixtures/prompts_only" } }
      local caps = c.init_result.capabilities
      assert.are.same({ listChanged = false }, caps.prompts)
      assert.is_nil(caps.tools)
      assert.is_nil(caps.resources)
      assert.is_nil(caps.completions)
      assert.are.same({}, caps.logging)
    end)

    it("without prompts, prompts/list and prompts/get are answered -32601", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" } }
      assert.are.equal(-32601, c:request("prompts/list", {}).error.code)
      assert.are.equal(-32601, get(c, "x").error.code)
    end)
  end)

  describe("prompts/list", function()
    it("lists name, title, description and arguments with their required flags", function()
      local c = session()
      local p = find(c:request("prompts/list", {}).result.prompts, "greet")
      assert.are.same({
        name = "greet", description = "Greets someone",
        arguments = {
          { name = "who", title = "Who", description = "Whom to greet", required = true },
          { name = "style", description = "formal or casual" },
        },
      }, p)
    end)

    it("a prompt without arguments is listed with \"arguments\":[]", function()
      local c = session()
      local resp, _, raw = c:request("prompts/list", {})
      assert.are.equal("Plain", find(resp.result.prompts, "plain").title)
      assert.truthy(raw:find('"arguments":[]', 1, true), raw)
    end)

    it("is paginated: with --page-size 3 every prompt comes exactly once", function()
      local c = session{ args = { "--page-size", "3" } }
      local seen, count, pages, cursor = {}, 0, 0, nil
      repeat
        local r = c:request("prompts/list", cursor and { cursor = cursor } or {}).result
        pages = pages + 1
        assert.is_true(#r.prompts <= 3)
        for _, p in ipairs(r.prompts) do
          assert.is_nil(seen[p.name], "listed twice: " .. p.name)
          seen[p.name] = true
          count = count + 1
        end
        cursor = r.nextCursor
      until cursor == nil or pages > 20
      assert.are.equal(8, count)
      assert.are.equal(3, pages)
    end)

    it("an invalid cursor is answered -32602", function()
      local c = session()
      assert.are.equal(-32602, c:request("prompts/list", { cursor = "-1" }).error.code)
    end)
  end)

  describe("prompts/get", function()
    it("a string is one user message with text content", function()
      local c = session()
      assert.are.same({ messages = { { role = "user", content = { type = "text", text = "just text" } } } },
                      get(c, "plain").result)
    end)

    it("a list of messages keeps roles; string content and content without a type become text", function()
      local c = session()
      local r = get(c, "greet", { who = "Ada", style = "formal" }).result
      assert.are.same({
        { role = "user", content = { type = "text", text = "greet Ada (formal)" } },
        { role = "assistant", content = { type = "text", text = "Hello, Ada" } },
        { role = "user", content = { type = "text", text = "no type given" } },
      }, r.messages)
    end)

    it("optional arguments may be left out", function()
      local c = session()
      assert.are.equal("greet Ada (none)", get(c, "greet", { who = "Ada" }).result.messages[1].content.text)
    end)

    it("{description, messages} passes the description through; get gets ctx.prompt", function()
      local c = session()
      local r = get(c, "described").result
      assert.are.equal("made for described", r.description)
      assert.are.equal(2, #r.messages)
      assert.are.equal("two", r.messages[2].content.text)
    end)

    it("other content types pass through", function()
      local c = session()
      local content = get(c, "image").result.messages[1].content
      assert.are.same({ type = "image", data = "cG5n", mimeType = "image/png" }, content)
    end)

    it("a missing required argument is answered -32602 naming it", function()
      local c = session()
      local e = get(c, "greet", { style = "casual" }).error
      assert.are.equal(-32602, e.code)
      assert.truthy(e.message:find("who", 1, true), e.message)
    end)

    it("an unknown prompt is answered -32602", function()
      local c = session()
      local e = get(c, "no_such_prompt").error
      assert.are.equal(-32602, e.code)
      assert.truthy(e.message:find("no_such_prompt", 1, true), e.message)
    end)

    it("an argument that is not a string is answered -32602", function()
      local c = session()
      assert.are.equal(-32602, get(c, "greet", { who = 5 }).error.code)
    end)

    it("arguments that are not an object are answered -32602", function()
      local c = session()
      assert.are.equal(-32602, c:request("prompts/get", '{"name":"plain","arguments":["x"]}').error.code)
    end)

    it("a Lua error in get is answered -32603 with the message", function()
      local c = session()
      local e = get(c, "raises").error
      assert.are.equal(-32603, e.code)
      assert.truthy(e.message:find("get exploded", 1, true), e.message)
    end)

    it("a message with a role other than user or assistant is answered -32603", function()
      local c = session()
      local e = get(c, "bad_role").error
      assert.are.equal(-32603, e.code)
      assert.truthy(e.message:find("role", 1, true), e.message)
    end)

    it("get returning mcp.rpc_error is answered with that JSON-RPC error", function()
      local c = session()
      local e = get(c, "custom_error").error
      assert.are.same({ -32001, "prompt refused" }, { e.code, e.message })
    end)
  end)

  describe("declarations", function()
    it("a prompt name already defined by another plugin refuses the later plugin with a clear error", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      c:expect_stderr('prompt "dup_prompt" is already defined by plugin "good"', 5, { plain = true })
      assert.are.equal("from good", get(c, "dup_prompt").result.messages[1].content.text)
    end)

    it("completing an undeclared argument is refused at load, naming the file", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      local line = c:expect_stderr("f_bad_complete.lua", 5, { plain = true })
      assert.truthy(line:find("complete.b is not a declared argument", 1, true), line)
    end)
  end)
end)
