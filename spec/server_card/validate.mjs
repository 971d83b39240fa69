// Validates JSON documents against a published JSON Schema with ajv, as the
// schemas' own repositories do (draft 2020-12 with ajv/dist/2020, draft-07
// with ajv; formats from ajv-formats):
//
//   node validate.mjs SCHEMA_FILE REF DOC_FILE...
//
// REF is the subschema the documents are ("#/$defs/ServerCard"), or "#" for
// the root. Prints one line: {"results": [{"valid": bool, "errors": [...]}]}.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [schemaFile, ref, ...docs] = process.argv.slice(2);
try {
  const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
  const draft2020 = String(schema.$schema).includes("2020-12");
  const ajv = draft2020 ? new Ajv2020({ allErrors: true, strict: false }) : new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema(schema, "schema.json");
  const validate = ajv.getSchema(ref === "#" ? "schema.json" : `schema.json${ref}`);
  if (!validate) throw new Error(`no subschema ${ref} in ${schemaFile}`);
  const results = docs.map((file) => {
    const valid = validate(JSON.parse(readFileSync(file, "utf8")));
    return { valid, errors: (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`) };
  });
  console.log(JSON.stringify({ draft: draft2020 ? "2020-12" : "draft-07", results }));
} catch (e) {
  console.log(JSON.stringify({ crashed: String(e && e.stack || e) }));
}
