-- An MCP App (docs/guide/15-apps.md): the weather tool's results shown by a
-- view, weather_app.html next to this file, which hosts that render MCP
-- Apps (Claude, ChatGPT, VS Code, Goose, ...) draw in a sandboxed iframe.
-- The view asks for the hourly series itself, through the host, with
-- weather_series: a tool only the view may call (visibility = {"app"}),
-- which other clients are not shown. Clients without apps get the text.
--
-- The temperatures are made up (a daily curve per city), so that the
-- example needs no network and no key.
local mcp = require "mcp"

local VIEW = "ui://weather/view"

-- A made-up temperature at hour h (0..47 from now) in city, in °C.
local function temperature(city, h)
  local base = 8
  for i = 1, #city do base = base + city:byte(i) % 7 end
  base = 6 + base % 17
  return math.floor((base + 5 * math.sin((h - 9) * math.pi / 12)) * 10 + 0.5) / 10
end

local function series(city, hours)
  local points = mcp.array()
  for h = 0, hours - 1 do points[#points + 1] = { hour = h, temp = temperature(city, h) } end
  return points
end

local CITY = { type = "string", description = "a city name, e.g. Lisbon" }

return mcp.plugin {
  name = "weather_app",
  tools = {
    mcp.tool {
      name = "weather",
      title = "Weather",
      description = "The temperature in a city now and over the next day (made-up data), with a chart",
      annotations = { readOnlyHint = true },
      app = VIEW,
      inputSchema = { type = "object", properties = { city = CITY }, required = { "city" } },
      handler = function(args)
        local points = series(args.city, 24)
        local lo, hi = math.huge, -math.huge
        for _, p in ipairs(points) do lo, hi = math.min(lo, p.temp), math.max(hi, p.temp) end
        return {
          -- the text every client shows; the view draws from structuredContent
          content = { { type = "text", text = ("%s: %.1f °C now, %.1f to %.1f °C over the next 24 h")
                                                :format(args.city, points[1].temp, lo, hi) } },
          structuredContent = { city = args.city, unit = "°C", now = points[1].temp, min = lo, max = hi },
        }
      end,
    },
    mcp.tool {
      name = "weather_series",
      title = "Hourly temperatures",
      description = "The hourly temperatures in a city (made-up data), for the weather view",
      annotations = { readOnlyHint = true },
      app = VIEW,
      visibility = { "app" },
      inputSchema = {
        type = "object",
        properties = { city = CITY, hours = { type = "integer", minimum = 2, maximum = 48, default = 24 } },
        required = { "city" },
      },
      handler = function(args)
        local points = series(args.city, args.hours or 24)
        local temps = {}
        for i, p in ipairs(points) do temps[i] = ("%.1f"):format(p.temp) end
        return {
          content = { { type = "text", text = ("%s, hourly °C: %s"):format(args.city, table.concat(temps, ", ")) } },
          structuredContent = { city = args.city, unit = "°C", points = points },
        }
      end,
    },
  },
  resources = {
    mcp.resource {
      uri = VIEW,
      name = "weather_view",
      title = "Weather chart",
      description = "The chart the weather tool's results are shown in",
      app = { file = "weather_app.html", prefers_border = true },
    },
  },
}
