-- completion/complete for prompt arguments and template variables.
local H = require "spec.helper"

local CONTENT = { "spec/fixtures/content" }

local function complete(c, ref, name, value, context)
  return c:request("completion/complete", {
    ref = ref, argument = { name = name, value = value }, context = context,
  })
end

local function prompt(name) return { type = "ref/prompt", name = name } end
local function template(uri) return { type = "ref/resource", uri = uri } end

describe("completion", function()
  after_each(H.cleanup)

  it("initialize declares completions {} when a prompt or template can complete", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.same({}, c.init_result.capabilities.completions)
    local _, raw = c.history[1].msg, c.history[1].raw
    assert.truthy(raw:find('"completions":{}', 1, true), raw)
  end)

  it("without completers, completion/complete is answered -32601", function()
    local c = H.session{ plugins = { "spec/fixtures/prompts_only" } }
    assert.are.equal(-32601, complete(c, prompt("lonely"), "x", "").error.code)
  end)

  it("a list of values completes by prefix, ignoring case", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, prompt("greet"), "style", "f").result
    assert.are.same({ values = { "Formal", "friendly" }, hasMore = false }, r.completion)
  end)

  it("an empty value gets every listed value", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.equal(3, #complete(c, prompt("greet"), "style", "").result.completion.values)
  end)

  it("complete = function(arg, value, ctx) gets the argument name, the value and ctx.arguments", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, prompt("described"), "x", "ab", { arguments = { y = "why" } }).result
    assert.are.same({ "fn:x:ab:why" }, r.completion.values)
  end)

  it("without context, ctx.arguments is an empty table", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.same({ "fn:x:ab:nil" }, complete(c, prompt("described"), "x", "ab").result.completion.values)
  end)

  it("a template variable completes through ref/resource with the uriTemplate", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, template("item://{kind}/{id}"), "kind", "ap").result
    assert.are.same({ "apple", "apricot" }, r.completion.values)
  end)

  it("a template completer sees the other variables in ctx.arguments", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, template("item://{kind}/{id}"), "id", "x", { arguments = { kind = "apple" } }).result
    assert.are.same({ "apple-x1", "apple-x2" }, r.completion.values)
  end)

  it("a {values, total, hasMore} result passes through", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, template("file:///{+path}"), "path", "a/").result
    assert.are.same({ values = { "path:a/" }, total = 7, hasMore = true }, r.completion)
    assert.are.same({ values = { "a", "b" }, total = 10, hasMore = true },
                    complete(c, prompt("many"), "w", "").result.completion)
  end)

  it("more than 100 values are cut to 100 with hasMore true and the total", function()
    local c = H.session{ plugins = CONTENT }
    local r = complete(c, prompt("many"), "v", "").result.completion
    assert.are.equal(100, #r.values)
    assert.are.equal("v001", r.values[1])
    assert.are.equal("v100", r.values[100])
    assert.is_true(r.hasMore)
    assert.are.equal(150, r.total)
  end)

  it("an argument without a completer gets \"values\":[] and hasMore false", function()
    local c = H.session{ plugins = CONTENT }
    local resp, _, raw = complete(c, prompt("many"), "none", "x")
    assert.is_false(resp.result.completion.hasMore)
    assert.truthy(raw:find('"values":[]', 1, true), raw)
  end)

  it("an unknown prompt is answered -32602", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.equal(-32602, complete(c, prompt("nope"), "x", "").error.code)
  end)

  it("an unknown template is answered -32602", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.equal(-32602, complete(c, template("nope://{x}"), "x", "").error.code)
  end)

  it("an unknown ref type is answered -32602", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.equal(-32602, complete(c, { type = "ref/tool", name = "x" }, "x", "").error.code)
  end)

  it("a request without argument is answered -32602", function()
    local c = H.session{ plugins = CONTENT }
    assert.are.equal(-32602, c:request("completion/complete", { ref = prompt("greet") }).error.code)
  end)
end)
