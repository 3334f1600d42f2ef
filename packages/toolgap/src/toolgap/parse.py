"""Tool-call parsing: the toy's tagged calls, Hermes/Qwen ``<tool_call>`` JSON, Llama 3 bare JSON and
OpenAI ``tool_calls`` lists.

An *action* is a parsable call. Text that carries a call marker but does not parse is an
*unparsable* call: it counts as no call and is tallied (:func:`detect_call`).
"""

from __future__ import annotations

import json
import re

STYLES = ("auto", "tagged", "hermes", "llama3", "openai")
_TAGGED = re.compile(r"<call>\s*([A-Za-z_][\w.]*)\s*\((.*?)\)\s*</call>", re.S)
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_MARKERS = ("<call>", "<tool_call>", "<|python_tag|>", '"name"', "'name'")


def _call(name, args) -> dict | None:
    if not isinstance(name, str) or not name:
        return None
    if isinstance(args, str):  # OpenAI sends the arguments as a JSON string
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return {"name": name, "arguments": args}


def _from_json(obj) -> dict | None:
    if isinstance(obj, list):
        return _from_json(obj[0]) if obj else None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI tool_calls entry
        f = obj["function"]
        return _call(f.get("name"), f.get("arguments"))
    if "name" in obj:
        return _call(obj["name"], obj.get("arguments", obj.get("parameters")))
    return None


def _first_json(text: str):
    """The first JSON object or list in ``text`` (raw_decode from each ``{``/``[``)."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            return dec.raw_decode(text[m.start():])[0]
        except json.JSONDecodeError:
            continue
    return None


def _tagged(text):
    m = _TAGGED.search(text)
    if not m:
        return None
    return {"name": m.group(1), "arguments": {"input": " ".join(m.group(2).split())}}


def _hermes(text):
    m = _HERMES.search(text)
    if not m:
        return None
    try:
        return _from_json(json.loads(m.group(1)))
    except json.JSONDecodeError:
        return None


def _llama3(text):
    body = text.split("<|python_tag|>", 1)[-1].strip()
    if not body.startswith("{"):
        return None
    return _from_json(_first_json(body))


def _openai(text):
    body = text.strip()
    if not body.startswith("["):
        return None
    return _from_json(_first_json(body))


_PARSERS = {"tagged": _tagged, "hermes": _hermes, "llama3": _llama3, "openai": _openai}


def parse_tool_call(text: str, style: str = "auto") -> dict | None:
    """The first tool call in a model's output, or ``None``.

    Styles: ``"tagged"`` (``<call> name ( args ) </call>``, the toy's; ``arguments={"input": args}``),
    ``"hermes"`` (Hermes/Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``),
    ``"llama3"`` (Llama 3.x: a bare ``{"name": ..., "parameters": {...}}``, optionally after
    ``<|python_tag|>``), ``"openai"`` (a JSON list of ``tool_calls`` as :class:`paperworks.lm.OpenAIChat`
    returns them) or ``"auto"`` (each in turn).

    Returns:
        ``{"name": str, "arguments": dict}`` or ``None`` (no call, or one that does not parse).

    Example::

        >>> parse_tool_call('<tool_call>{"name": "calc", "arguments": {"expression": "2+2"}}</tool_call>')
        {'name': 'calc', 'arguments': {'expression': '2+2'}}
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    parsers = _PARSERS.values() if style == "auto" else [_PARSERS[style]]
    for p in parsers:
        call = p(text)
        if call is not None:
            return call
    return None


def detect_call(text: str, style: str = "auto") -> tuple[dict | None, bool]:
    """``(call, unparsable)``: the parsed call (or ``None``) and whether the text carries a call marker
    that did not parse (such text counts as no call; callers tally it)."""
    call = parse_tool_call(text, style)
    if call is not None:
        return call, False
    return None, any(m in text for m in _MARKERS)
