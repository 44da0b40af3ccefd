"""The HTTP API page lists every route the app serves, with its fields and errors."""

from typing import Any

from skulk_site.openapi_ref import api_document, field_rows, http_api_markdown, type_text

DOCUMENT: dict[str, Any] = {
    "info": {"version": "9.9"},
    "paths": {
        "/v1/things": {"post": {
            "tags": ["things"], "summary": "Make a thing",
            "requestBody": {"content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Thing"}}}},
            "responses": {"200": {"description": "The thing"},
                          "400": {"description": "Bad thing"}}}},
        "/v1/things/{id}": {"get": {
            "tags": ["things"], "summary": "One thing",
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "responses": {"200": {"description": "It", "content": {
                "text/event-stream": {}}}}}},
    },
    "components": {"schemas": {"Thing": {
        "description": "A thing.", "required": ["name"], "properties": {
            "name": {"type": "string", "description": "Its name."},
            "size": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 3},
            "kind": {"enum": ["a", "b"]}}}}},
}


def test_types_read_as_words() -> None:
    assert type_text({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "integer or null"
    assert type_text({"type": "array", "items": {"$ref": "#/components/schemas/Thing"}}) == (
        "array of [Thing](#thing)")
    assert type_text({"enum": ["a", "b"]}) == '`"a"` or `"b"`'
    assert type_text({"type": "object", "additionalProperties": {"type": "number"}}) == (
        "map of number")


def test_body_fields_say_type_requiredness_and_default() -> None:
    rows = field_rows(DOCUMENT, {"$ref": "#/components/schemas/Thing"})
    assert rows == [["`name`", "string", "yes", "Its name."],
                    ["`size`", "integer or null", "", "Default `3`."],
                    ["`kind`", '`"a"` or `"b"`', "", ""]]


def test_the_page_has_the_route_table_each_route_and_the_errors() -> None:
    page = http_api_markdown(DOCUMENT)
    assert "| POST | [`/v1/things`](#post-v1things) | Make a thing |" in page
    assert "| GET | [`/v1/things/{id}`](#get-v1thingsid) | One thing |" in page
    assert "### POST /v1/things" in page and "### GET /v1/things/{id}" in page
    assert "**Errors** `400`" in page and "| `400` | Bad thing |" in page
    assert "(streams as `text/event-stream`)" in page
    assert "### Thing" in page and "| `id` | path | string | yes |  |" in page


def test_every_route_of_the_real_app_is_on_the_page() -> None:
    document = api_document()
    page = http_api_markdown(document)
    for path, item in document["paths"].items():
        for method in item:
            assert f"### {method.upper()} {path}\n" in page
    assert "`speculative`" in page  # a body field of POST /v1/chat/completions
