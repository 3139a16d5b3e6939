"""The fake model server speaks the wire formats the real SDKs parse (streamed and not)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import openai
from fakes.model_server import ModelServer, Received, answer, error, text, tool


def test_anthropic_stream_with_text_and_tool_use_parses_in_the_sdk() -> None:
    turn = tool("Read", {"file_path": "src/app.py"}, say="Reading the file first.")
    with ModelServer([turn]) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
        with client.messages.stream(
            model="claude-sonnet-5", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text"
    assert message.content[0].text == "Reading the file first."
    assert message.content[1].type == "tool_use"
    assert message.content[1].name == "Read"
    assert message.content[1].input == {"file_path": "src/app.py"}
    assert message.usage.output_tokens == 30
    [received] = server.received
    assert received.route == "/v1/messages"
    assert "sk-ant-test" in (received.headers.get("x-api-key") or received.headers["authorization"])
    assert received.body["messages"] == [{"role": "user", "content": "hi"}]


def test_json_answer_goes_through_structured_output_when_offered() -> None:
    with ModelServer([answer({"lessons": []}), answer({"lessons": [1]})]) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        offered = client.messages.create(
            model="m",
            max_tokens=10,
            messages=[{"role": "user", "content": "a"}],
            tools=[{"name": "StructuredOutput", "input_schema": {"type": "object"}}],
        )
        plain = client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "b"}]
        )
    assert offered.content[0].type == "tool_use"
    assert offered.content[0].input == {"lessons": []}
    assert plain.content[0].type == "text"
    assert json.loads(plain.content[0].text) == {"lessons": [1]}


def test_openai_responses_stream_parses_in_the_sdk() -> None:
    turns = [tool("exec_command", {"cmd": "ls"}), text("done")]
    with ModelServer(turns) as server:
        client = openai.OpenAI(base_url=server.openai_url, api_key="sk-test", max_retries=0)
        with client.responses.stream(model="gpt-5", input="hi") as stream:
            first = stream.get_final_response()
        with client.responses.stream(model="gpt-5", input="go on") as stream:
            second = stream.get_final_response()
    call = first.output[0]
    assert call.type == "function_call"
    assert call.name == "exec_command"
    assert json.loads(call.arguments) == {"cmd": "ls"}
    assert second.output_text == "done"
    assert second.usage is not None and second.usage.input_tokens == 200
    assert [r.route for r in server.received] == ["/v1/responses", "/v1/responses"]


def test_chat_completions_stream_and_plain_parse_in_the_sdk() -> None:
    with ModelServer([text("streamed"), text("plain")]) as server:
        client = openai.OpenAI(base_url=server.openai_url, api_key="k", max_retries=0)
        chunks = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        plain = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "y"}]
        )
    assert streamed == "streamed"
    assert plain.choices[0].message.content == "plain"


def test_empty_script_gets_the_default_and_errors_use_the_api_shape() -> None:
    with ModelServer([error(529, "overloaded")], default=text("fallback")) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        try:
            client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "a"}]
            )
        except anthropic.APIStatusError as exc:
            assert exc.status_code == 529
            assert "overloaded" in str(exc)
        else:
            raise AssertionError("the scripted 529 was not raised")
        after = client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "b"}]
        )
    assert after.content[0].type == "text"
    assert after.content[0].text == "fallback"


def test_guarded_turn_waits_for_its_request_and_side_requests_skip_the_script() -> None:
    def has_result(request: Received) -> bool:
        return bool(request.tool_results())

    def is_probe(request: Received) -> bool:
        return bool(request.body.get("max_tokens") == 1)

    call: Any = {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}
    result: Any = {"type": "tool_result", "tool_use_id": "t1", "content": "file text"}
    script = [text("after the tool", when=has_result)]
    with ModelServer(script, default=text("default"), side=is_probe) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        probe = client.messages.create(
            model="m", max_tokens=1, messages=[{"role": "user", "content": "q"}]
        )
        early = client.messages.create(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "a"}]
        )
        later = client.messages.create(
            model="m",
            max_tokens=9,
            messages=[
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [call]},
                {"role": "user", "content": [result]},
            ],
        )
    texts = [
        block.text for m in (probe, early, later) for block in m.content if block.type == "text"
    ]
    assert texts == ["ok", "default", "after the tool"]
    assert server.received[-1].tool_results() == ["file text"]
    assert len(server.main_requests()) == 2


def _call(url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_every_request_is_logged_including_unknown_routes() -> None:
    with ModelServer() as server:
        models = _call(f"{server.url}/v1/models")
        counted = _call(f"{server.url}/v1/messages/count_tokens", {"messages": []})
        missing = _call(f"{server.url}/v1/elsewhere", {"a": 1})
    assert models[1]["data"][0]["id"] == "claude-sonnet-5"
    assert counted[1]["input_tokens"] >= 1
    assert missing[0] == 404
    assert [(r.method, r.route) for r in server.received] == [
        ("GET", "/v1/models"),
        ("POST", "/v1/messages/count_tokens"),
        ("POST", "/v1/elsewhere"),
    ]
    assert server.received[-1].body == {"a": 1}
    assert server.model_requests() == []


def test_a_stalled_stream_sends_its_first_event_then_nothing() -> None:
    with ModelServer([text("never finished", stall=True)]) as server:
        client = openai.OpenAI(base_url=server.openai_url, api_key="k", max_retries=0, timeout=1.0)
        seen: list[str] = []
        try:
            with client.responses.stream(model="gpt-5", input="hi") as stream:
                seen.extend(event.type for event in stream)
        except openai.APITimeoutError:
            pass
        else:
            raise AssertionError("a stalled stream ended")
    assert seen == ["response.created"]
