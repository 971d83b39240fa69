// A form from a JSON Schema (a tool's inputSchema): string, number,
// integer, boolean, enum, array, nested object, required marks, defaults;
// anything else, and the whole, also as raw JSON.
function el(tag, props = {}, ...kids) {
  const e = Object.assign(document.createElement(tag), props);
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

// A field for schema; returns {node, read}: read() gives the value or undefined.
function field(schema = {}, name, required) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const id = "f-" + Math.random().toString(36).slice(2);
  let input, read;
  if (Array.isArray(schema.enum)) {
    input = el("select", { id });
    if (!required) input.append(el("option", { value: "", textContent: "" }));
    schema.enum.forEach((v, i) => input.append(el("option", { value: String(i), textContent: JSON.stringify(v) })));
    if (schema.default !== undefined) input.value = String(schema.enum.indexOf(schema.default));
    read = () => (input.value === "" ? undefined : schema.enum[Number(input.value)]);
  } else if (type === "boolean") {
    input = el("input", { id, type: "checkbox", checked: schema.default === true });
    read = () => input.checked;
  } else if (type === "number" || type === "integer") {
    input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any" });
    if (schema.default !== undefined) input.value = schema.default;
    if (schema.minimum !== undefined) input.min = schema.minimum;
    if (schema.maximum !== undefined) input.max = schema.maximum;
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (type === "string") {
    input = el("input", { id, type: "text", size: 30, value: schema.default ?? "" });
    read = () => (input.value === "" && !required ? undefined : input.value);
  } else if (type === "object" && schema.properties) {
    const sub = objectFields(schema);
    input = el("fieldset", {}, el("legend", { textContent: name }), ...sub.nodes);
    read = () => { const v = sub.read(); return Object.keys(v).length ? v : undefined; };
  } else if (type === "array") {
    const list = el("div", { className: "items" });
    const items = [];
    const add = () => {
      const f = field(schema.items || {}, name + "[" + items.length + "]", true);
      items.push(f);
      list.append(f.node);
    };
    input = el("div", {}, list, el("button", { type: "button", textContent: "+ item", onclick: add }));
    (schema.default || []).forEach(add);
    read = () => { const v = items.map((f) => f.read()).filter((x) => x !== undefined); return v.length ? v : undefined; };
  } else {
    input = el("textarea", { id, rows: 2, placeholder: "JSON", value: schema.default !== undefined ? JSON.stringify(schema.default) : "" });
    read = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  const label = el("label", { htmlFor: id, textContent: name }, required ? el("span", { className: "req", textContent: " *" }) : null);
  const node = el("div", { className: "field" }, label,
    el("div", {}, input, schema.description ? el("small", { textContent: schema.description }) : null));
  node.dataset.name = name;
  return { node, read };
}

function objectFields(schema) {
  const req = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([k, s]) => [k, field(s, k, req.has(k))]);
  return {
    nodes: fields.map(([, f]) => f.node),
    read() {
      const v = {};
      for (const [k, f] of fields) { const x = f.read(); if (x !== undefined) v[k] = x; }
      return v;
    },
  };
}

// The form of schema: {node, read}; read() throws on a bad raw JSON.
export function schemaForm(schema) {
  const fields = objectFields(schema || {});
  const raw = el("textarea", { rows: 6, className: "raw" });
  const useRaw = el("input", { type: "checkbox" });
  const box = el("div", { className: "form" }, ...fields.nodes);
  useRaw.onchange = () => {
    if (useRaw.checked) raw.value = JSON.stringify(fields.read(), null, 2);
    box.hidden = useRaw.checked;
    raw.hidden = !useRaw.checked;
  };
  raw.hidden = true;
  const node = el("div", {}, box, el("label", {}, useRaw, " raw JSON"), raw);
  return { node, read: () => (useRaw.checked ? JSON.parse(raw.value || "{}") : fields.read()) };
}

export { el };
