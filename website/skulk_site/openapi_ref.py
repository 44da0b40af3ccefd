"""The HTTP API reference page, written from the app's own OpenAPI document.

`api_document()` builds the app exactly as a node does (with an empty context: building
the document touches no node state), so the page lists every route the code serves.
"""

import json
from pathlib import Path
from typing import Any

from skulk_site.markdown import anchor, cell, table

Schema = dict[str, Any]
METHODS = ("get", "post", "put", "patch", "delete")
DIALECT_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "ollama": "Ollama"}


def api_document() -> dict[str, Any]:
    """The OpenAPI document of a node's app, as `GET /openapi.json` serves it."""
    from skulk.api.app import create_app
    from skulk.api.context import ApiContext, ClusterView, RequestBook
    from skulk.api.streams import StreamRegistry
    from skulk.models.catalog import ModelCatalog
    from skulk.shared.replica import StateReplica
    from skulk.shared.telemetry_view import TelemetryView
    from skulk.shared.types.commands import Command
    from skulk.shared.types.ids import NodeId

    class NoMaster:
        async def send(self, command: Command, /) -> None:
            raise RuntimeError("the reference page's app sends no commands")

    context = ApiContext(
        cluster=ClusterView(node_id=NodeId("docs"), catalog=ModelCatalog([], Path(".")),
                            replica=StateReplica(), telemetry=TelemetryView()),
        requests=RequestBook(streams=StreamRegistry(), commands=NoMaster()))
    return create_app(context).openapi()


def _ref_name(schema: Schema) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def type_text(schema: Schema) -> str:
    """A JSON schema as a short type: `integer`, `string or null`, `array of WireMessage`."""
    name = _ref_name(schema)
    if name is not None:
        return f"[{name}](#{anchor(name)})"
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return " or ".join(dict.fromkeys(type_text(s) for s in schema[union]))
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"array of {type_text(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        values = schema["additionalProperties"]
        return f"map of {type_text(values) if isinstance(values, dict) else 'any'}"
    return str(kind or "any")


def _schema(document: dict[str, Any], schema: Schema) -> Schema:
    name = _ref_name(schema)
    if name is None:
        return schema
    found: Schema = document.get("components", {}).get("schemas", {}).get(name, {})
    return found


def field_rows(document: dict[str, Any], schema: Schema) -> list[list[str]]:
    """One row per property of an object schema: name, type, required, description."""
    resolved = _schema(document, schema)
    required = set(resolved.get("required", []))
    rows = []
    for name, prop in resolved.get("properties", {}).items():
        description = prop.get("description", "")
        if "default" in prop and prop["default"] is not None:
            description = f"{description} Default `{json.dumps(prop['default'])}`.".strip()
        rows.append([f"`{name}`", type_text(prop), "yes" if name in required else "",
                     description])
    return rows


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, item[method]) for path, item in document["paths"].items()
            for method in METHODS if method in item]


def _heading(method: str, path: str) -> str:
    return f"{method.upper()} {path}"


def _operation_section(document: dict[str, Any], method: str, path: str,
                       operation: dict[str, Any]) -> list[str]:
    lines = [f"### {_heading(method, path)}", "", cell(operation.get("summary", ""))]
    if operation.get("description"):
        lines += ["", operation["description"].strip()]
    parameters = [[f"`{p['name']}`", p["in"], type_text(p.get("schema", {})),
                   "yes" if p.get("required") else "", p.get("description", "")]
                  for p in operation.get("parameters", [])]
    if parameters:
        lines += ["", "**Parameters**", ""]
        lines += table(["name", "in", "type", "required", "description"], parameters)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        schema = body.get("schema", {})
        lines += ["", f"**Body** ({type_text(schema)})", ""]
        lines += table(["field", "type", "required", "description"],
                       field_rows(document, schema)) or ["Any JSON value."]
    responses = operation.get("responses", {})
    success = [f"`{status}` {responses[status].get('description', '')}"
               for status in responses if status.startswith("2")]
    errors = [status for status in responses if status[0] in "45"]
    streams = [kind for status in responses for kind in responses[status].get("content", {})
               if kind != "application/json"]
    lines += ["", "**Answers** " + "; ".join(success)]
    if streams:
        lines[-1] += " (streams as " + ", ".join(f"`{kind}`" for kind in streams) + ")"
    if errors:
        lines += ["", "**Errors** " + ", ".join(f"`{status}`" for status in errors)
                  + " ([what each means](#errors))"]
    return [*lines, ""]


def _error_table(document: dict[str, Any]) -> list[str]:
    meanings: dict[str, str] = {}
    for _, _, operation in _operations(document):
        for status, response in operation.get("responses", {}).items():
            if status[0] in "45":
                meanings.setdefault(status, response.get("description", ""))
    return table(["status", "meaning"], [[f"`{s}`", meanings[s]] for s in sorted(meanings)])


def http_api_markdown(document: dict[str, Any]) -> str:
    """The reference page: a table of every route, then each route's parameters, body
    fields, answers and errors, grouped by the routers' tags."""
    operations = _operations(document)
    lines = ["# HTTP API", "",
             f"Generated from the OpenAPI document of Skulk {document['info']['version']} "
             "when this site was built; a running node serves the same document at "
             "`/openapi.json` and interactive docs at `/docs`. Errors come in the format "
             "of the route's dialect (OpenAI, Anthropic or Ollama).", "",
             f"{len(operations)} operations.", "", "## Routes", ""]
    lines += table(["method", "route", "what"], [
        [method.upper(), f"[`{path}`](#{anchor(_heading(method, path))})",
         operation.get("summary", "")] for method, path, operation in operations])
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for method, path, operation in operations:
        by_tag.setdefault((operation.get("tags") or ["other"])[0], []).append(
            (method, path, operation))
    for tag, members in by_tag.items():
        lines += ["", f"## {DIALECT_NAMES.get(tag, tag.capitalize())}", ""]
        for method, path, operation in members:
            lines += _operation_section(document, method, path, operation)
    lines += ["## Types", "", "The objects the bodies above are made of.", ""]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        rows = field_rows(document, schema)
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [cell(schema["description"]), ""]
        lines += table(["field", "type", "required", "description"], rows) or [
            f"Type: {type_text({k: v for k, v in schema.items() if k != 'title'})}."]
        lines += [""]
    lines += ["## Errors", "", "Every route may answer these; the body is the dialect's "
              "error object, whose message says what to fix.", ""]
    lines += _error_table(document)
    return "\n".join(lines) + "\n"
