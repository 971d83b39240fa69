-- resources/list, resources/templates/list, resources/read, subscriptions,
-- and what plugins may declare.
local H = require "spec.helper"
local cjson = H.cjson

local CONTENT = { "spec/fixtures/content" }

local function session(opts)
  opts = opts or {}
  opts.plugins = opts.plugins or CONTENT
  return H.session(opts)
end

local function read(c, uri)
  return c:request("resources/read", { uri = uri })
end

local function find(list, key, value)
  for _, x in ipairs(list) do if x[key] == value then return x end end
end

describe("resources", function()
  after_each(H.cleanup)

  describe("capabilities", function()
    it("initialize declares resources with subscribe true and listChanged false when a plugin has resources", function()
      local c = session()
      assert.are.same({ subscribe = true, listChanged = false }, c.init_result.capabilities.resources)
      assert.are.same({}, c.init_result.capabilities.logging)
    end)

    it("initialize declares no resources, prompts or completions when plugins only have tools", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" } }
      local caps = c.init_result.capabilities
      assert.is_nil(caps.resources)
      assert.is_nil(caps.prompts)
      assert.is_nil(caps.completions)
      assert.are.same({ listChanged = false }, caps.tools)
    end)

    it("without resources, resources/list, resources/read and resources/subscribe are answered -32601", function()
      local c = H.session{ plugins = { "spec/fixtures/paging" } }
      for _, m in ipairs { "resources/list", "resources/templates/list", "resources/read", "resources/subscribe" } do
        local resp = c:request(m, { uri = "test://text" })
        assert.are.equal(-32601, resp.error.code, m)
      end
    end)
  end)

  describe("resources/list", function()
    it("lists the static resources with uri, name, title, description, mimeType, size and annotations", function()
      local c = session()
      local r = c:request("resources/list", {}).result
      local t = find(r.resources, "uri", "test://text")
      assert.are.same({
        uri = "test://text", name = "text", title = "Text", description = "A string",
        mimeType = "text/plain", size = 5, annotations = { audience = { "user" }, priority = 0.5 },
      }, t)
      assert.is_nil(r.nextCursor)
    end)

    it("does not list templates", function()
      local c = session()
      local r = c:request("resources/list", {}).result
      for _, x in ipairs(r.resources) do
        assert.is_nil(x.uriTemplate)
        assert.is_nil(x.uri:find("{", 1, true), x.uri)
      end
    end)

    it("a resource declared without a name is listed with its uri as name", function()
      local c = session()
      local r = c:request("resources/list", {}).result
      assert.are.equal("test://no-name", find(r.resources, "uri", "test://no-name").name)
    end)

    it("with --page-size 5, every resource comes exactly once over pages joined by nextCursor", function()
      local c = session{ args = { "--page-size", "5" } }
      local all = c:request("resources/list", {}).result   -- one page only
      local seen, pages, cursor = {}, 0, nil
      repeat
        local r = c:request("resources/list", cursor and { cursor = cursor } or {}).result
        pages = pages + 1
        assert.is_true(#r.resources <= 5)
        for _, x in ipairs(r.resources) do
          assert.is_nil(seen[x.uri], "listed twice: " .. x.uri)
          seen[x.uri] = true
        end
        cursor = r.nextCursor
      until cursor == nil or pages > 20
      assert.are.equal(3, pages)
      assert.are.equal(5, #all.resources)
      local big = session{ args = { "--page-size", "1000" } }
      local n = #big:request("resources/list", {}).result.resources
      local count = 0
      for _ in pairs(seen) do count = count + 1 end
      assert.are.equal(n, count)
    end)

    it("an invalid cursor is answered -32602", function()
      local c = session()
      local resp = c:request("resources/list", { cursor = "nope" })
      assert.are.equal(-32602, resp.error.code)
    end)
  end)

  describe("resources/templates/list", function()
    it("lists templates with uriTemplate, name, title, description, mimeType and annotations", function()
      local c = session()
      local r = c:request("resources/templates/list", {}).result
      assert.are.same({
        uriTemplate = "item://{kind}/{id}", name = "item", title = "Item",
        description = "An item by kind and id", mimeType = "application/json",
        annotations = { priority = 1 },
      }, find(r.resourceTemplates, "uriTemplate", "item://{kind}/{id}"))
      assert.truthy(find(r.resourceTemplates, "uriTemplate", "file:///{+path}"))
    end)

    it("is paginated: with --page-size 1 the two templates come in two pages", function()
      local c = session{ args = { "--page-size", "1" } }
      local r1 = c:request("resources/templates/list", {}).result
      assert.are.equal(1, #r1.resourceTemplates)
      local r2 = c:request("resources/templates/list", { cursor = r1.nextCursor }).result
      assert.are.equal(1, #r2.resourceTemplates)
      assert.is_nil(r2.nextCursor)
      assert.are_not.equal(r1.resourceTemplates[1].uriTemplate, r2.resourceTemplates[1].uriTemplate)
    end)
  end)

  describe("resources/read", function()
    it("a string is one text item with the uri and the resource's mimeType", function()
      local c = session()
      assert.are.same({ contents = { { uri = "test://text", mimeType = "text/plain", text = "hello" } } },
                      read(c, "test://text").result)
    end)

    it("{text=...} is one text item; mimeType is left out when the resource has none", function()
      local c = session()
      assert.are.same({ contents = { { uri = "test://no-name", text = "nameless" } } },
                      read(c, "test://no-name").result)
    end)

    it("mcp.blob(bytes) is one blob item with the bytes in base64", function()
      local c = session()
      local item = read(c, "test://blob").result.contents[1]
      assert.are.same({ uri = "test://blob", mimeType = "application/octet-stream", blob = "AAEC/2hlbGxv" }, item)
    end)

    it("{blob=base64} passes through as a blob item", function()
      local c = session()
      assert.are.same({ uri = "test://raw-blob", mimeType = "image/png", blob = "aGVsbG8=" },
                      read(c, "test://raw-blob").result.contents[1])
    end)

    it("a list gives one item each; uri and mimeType default to the resource's", function()
      local c = session()
      local contents = read(c, "test://many").result.contents
      assert.are.same({
        { uri = "test://many", mimeType = "text/plain", text = "first" },
        { uri = "test://many", mimeType = "text/markdown", text = "second" },
        { uri = "test://many#3", mimeType = "text/plain", blob = "dGhpcmQ=" },
      }, contents)
    end)

    it("{contents={...}} is normalized item by item", function()
      local c = session()
      assert.are.same({ { uri = "test://contents", text = "inside" } }, read(c, "test://contents").result.contents)
    end)

    it("read gets a ctx with the uri, the session id and the request id", function()
      local c = session()
      local resp = c:request("resources/read", { uri = "test://ctx" }, { id = 77 })
      assert.are.equal("uri=test://ctx session=integer id=77", resp.result.contents[1].text)
    end)

    it("an unknown uri is answered -32002 Resource not found", function()
      local c = session()
      local resp = read(c, "test://nothing-here")
      assert.is_nil(resp.result)
      assert.are.equal(-32002, resp.error.code)
      assert.are.equal("Resource not found", resp.error.message)
    end)

    it("the -32002 error carries data {uri}", function()
      local c = session()
      local resp = read(c, "test://nothing-here")
      assert.are.same({ uri = "test://nothing-here" }, resp.error.data)
    end)

    it("read returning nil is answered -32002", function()
      local c = session()
      assert.are.equal(-32002, read(c, "test://gone").error.code)
    end)

    it("read returning mcp.rpc_error is answered with that JSON-RPC error", function()
      local c = session()
      local e = read(c, "test://custom-error").error
      assert.are.equal(-32001, e.code)
      assert.are.equal("custom failure", e.message)
    end)

    it("a Lua error in read is answered -32603 with the message", function()
      local c = session()
      local e = read(c, "test://raises").error
      assert.are.equal(-32603, e.code)
      assert.truthy(e.message:find("read exploded", 1, true), e.message)
    end)

    it("a table without text, blob or contents is answered -32603 naming the resource", function()
      local c = session()
      local e = read(c, "test://bad-shape").error
      assert.are.equal(-32603, e.code)
      assert.truthy(e.message:find("test://bad-shape", 1, true), e.message)
    end)

    it("a uri without uri is answered -32602", function()
      local c = session()
      assert.are.equal(-32602, c:request("resources/read", {}).error.code)
    end)

    it("a cancelled read gets no response and its ctx:sleep returns early", function()
      local c = session()
      c:send('{"jsonrpc":"2.0","id":"slow","method":"resources/read","params":{"uri":"test://slow"}}\n')
      c:expect_stderr("fixture: slow read started", 5, { plain = true })
      c:send(H.cancel_msg("slow", "changed my mind"))
      c:expect_stderr("fixture: slow read cancelled: changed my mind", 5, { plain = true })
      c:no_response()
    end)
  end)

  describe("resource templates", function()
    it("{var} values are matched and percent-decoded", function()
      local c = session()
      local text = read(c, "item://fruit/a%20b").result.contents[1].text
      assert.are.same({ kind = "fruit", id = "a b", uri = "item://fruit/a%20b" }, cjson.decode(text))
    end)

    it("{var} does not match across a '/'", function()
      local c = session()
      assert.are.equal(-32002, read(c, "item://fruit/a/b").error.code)
    end)

    it("{+var} matches across '/'", function()
      local c = session()
      assert.are.same({ uri = "file:///a/b.txt", mimeType = "text/plain", text = "file a/b" },
                      read(c, "file:///a/b.txt").result.contents[1])
    end)

    it("a template read returning nil is answered -32002", function()
      local c = session()
      assert.are.equal(-32002, read(c, "file:///missing.txt").error.code)
    end)
  end)

  describe("subscriptions", function()
    it("resources/subscribe answers {}", function()
      local c = session()
      local _, _, raw = c:request("resources/subscribe", { uri = "test://text" })
      assert.truthy(raw:find('"result":{}', 1, true), raw)
    end)

    it("mcp.notify_resource_updated sends notifications/resources/updated to a subscribed session and counts it", function()
      local c = session()
      c:request("resources/subscribe", { uri = "test://text" })
      assert.are.equal("1", H.text(c:call("touch", { uri = "test://text" })))
      local n = c:wait_notification("notifications/resources/updated")
      assert.are.same({ uri = "test://text" }, n.params)
    end)

    it("a uri served by a template can be subscribed to", function()
      local c = session()
      assert.are.same({}, c:request("resources/subscribe", { uri = "item://x/1" }).result)
      assert.are.equal("1", H.text(c:call("touch", { uri = "item://x/1" })))
      assert.truthy(c:wait_notification("notifications/resources/updated"))
    end)

    it("no notification is sent for a uri nobody subscribed to", function()
      local c = session()
      c:request("resources/subscribe", { uri = "test://text" })
      assert.are.equal("0", H.text(c:call("touch", { uri = "test://blob" })))
      c:no_message()
    end)

    it("after resources/unsubscribe no notification is sent", function()
      local c = session()
      c:request("resources/subscribe", { uri = "test://text" })
      assert.are.same({}, c:request("resources/unsubscribe", { uri = "test://text" }).result)
      assert.are.equal("0", H.text(c:call("touch", { uri = "test://text" })))
      c:no_message()
    end)

    it("unsubscribing from a uri never subscribed to answers {}", function()
      local c = session()
      assert.are.same({}, c:request("resources/unsubscribe", { uri = "test://text" }).result)
    end)

    it("subscribing to an unknown uri is answered -32002", function()
      local c = session()
      assert.are.equal(-32002, c:request("resources/subscribe", { uri = "nope://x" }).error.code)
    end)

    it("subscribing without a uri is answered -32602", function()
      local c = session()
      assert.are.equal(-32602, c:request("resources/subscribe", {}).error.code)
    end)
  end)

  describe("declarations", function()
    it("a resource uri already defined by another plugin refuses the later plugin with a clear error", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      c:expect_stderr('resource "dup://res" is already defined by plugin "good"', 5, { plain = true })
      assert.are.equal("from good", read(c, "dup://res").result.contents[1].text)
      local names = {}
      for _, p in ipairs(c:request("prompts/list", {}).result.prompts) do names[#names + 1] = p.name end
      assert.are.same({ "dup_prompt" }, names)
    end)

    it("a template already defined by another plugin refuses the later plugin", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      c:expect_stderr('resource template "dup://tpl/{x}" is already defined by plugin "good"', 5, { plain = true })
      assert.are.equal("from good", read(c, "dup://tpl/1").result.contents[1].text)
    end)

    it("a template with an unsupported expression is refused at load, naming the file", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      local line = c:expect_stderr("e_bad_template.lua", 5, { plain = true })
      assert.truthy(line:find("{a,b}", 1, true), line)
    end)

    it("a plain table in resources is refused at load", function()
      local c = H.session{ plugins = { "spec/fixtures/content_broken" } }
      local line = c:expect_stderr("g_not_a_resource.lua", 5, { plain = true })
      assert.truthy(line:find("resources[1] is not an mcp.resource", 1, true), line)
    end)
  end)
end)

describe("resource subscriptions over Streamable HTTP", function()
  -- spec/http_helper.lua comes with the HTTP transport's specs
  local have_http, HH = pcall(require, "spec.http_helper")
  if not have_http then
    pending("spec/http_helper.lua is missing")
    return
  end
  after_each(HH.cleanup)

  local function start()
    return HH.start{ plugins = { "spec/fixtures/content" } }
  end

  it("a notification goes only to the sessions subscribed to the uri", function()
    local srv = start()
    local a, b = HH.initialize(srv), HH.initialize(srv)
    assert.are.same({}, a:rpc("resources/subscribe", { uri = "test://text" }).result)
    local ga, gb = a:get(), b:get()
    assert.are.equal("1", H.text(b:call("touch", { uri = "test://text" })))
    local msg = ga:next_message()
    assert.are.equal("notifications/resources/updated", msg and msg.method)
    assert.are.same({ uri = "test://text" }, msg.params)
    assert.is_nil(gb:next_message(H.QUIET))
  end)

  it("a session's subscriptions end with it (DELETE)", function()
    local srv = start()
    local a, b = HH.initialize(srv), HH.initialize(srv)
    a:rpc("resources/subscribe", { uri = "test://text" })
    b:rpc("resources/subscribe", { uri = "test://text" })
    assert.are.equal("2", H.text(b:call("touch", { uri = "test://text" })))
    assert.are.equal(200, a:delete().status)
    assert.are.equal("1", H.text(b:call("touch", { uri = "test://text" })))
  end)
end)
