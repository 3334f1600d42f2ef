import pytest
from toolgap import parse_tool_call
from toolgap.parse import detect_call


@pytest.mark.parametrize("text,style,name,args", [
    ("<call> calc ( 3 4 5 + 1 2 ) </call>", "tagged", "calc", {"input": "3 4 5 + 1 2"}),
    ("ok <call>kb(ent7, color)</call> = red", "auto", "kb", {"input": "ent7, color"}),
    ('<tool_call>\n{"name": "calc", "arguments": {"expression": "2+2"}}\n</tool_call>', "hermes", "calc",
     {"expression": "2+2"}),
    ('Let me check.<tool_call>{"name": "kb", "arguments": {"entity": "x"}}</tool_call>', "auto", "kb", {"entity": "x"}),
    ('{"name": "calc", "parameters": {"expression": "7*6"}}', "llama3", "calc", {"expression": "7*6"}),
    ('<|python_tag|>{"name": "kb", "parameters": {"entity": "e", "relation": "r"}}', "auto", "kb",
     {"entity": "e", "relation": "r"}),
    ('[{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\\"expression\\": \\"1+1\\"}"}}]',
     "openai", "calc", {"expression": "1+1"}),
])
def test_parser_hand_cases(text, style, name, args):
    assert parse_tool_call(text, style) == {"name": name, "arguments": args}


@pytest.mark.parametrize("text", ["3 5 7", "The answer is 42.", "red", ""])
def test_plain_answers_are_no_call(text):
    assert parse_tool_call(text) is None
    assert detect_call(text) == (None, False)


@pytest.mark.parametrize("text", ["<call> calc ( 3 4", '<tool_call>{"name": "calc", "arguments": {bad}</tool_call>',
                                  '{"name": "calc", "parameters": [1, 2]}'])
def test_unparsable_calls_are_no_call_and_flagged(text):
    assert detect_call(text) == (None, True)


def test_parser_bad_input():
    with pytest.raises(ValueError, match="style"):
        parse_tool_call("x", style="xml")
    with pytest.raises(TypeError, match="text"):
        parse_tool_call(None)
