"""How the OpenAI-compatible backend reads answers the way real engines write them.

A scripted chat-completions server on loopback answers as ``transformers serve`` and vLLM were seen to
answer (../shared/notes/OFFLINE-TESTING.md): a Qwen tool call parsed into ``message.tool_calls`` with
empty ``content``; ``n`` ignored (one choice); no ``logprobs``; HTTP 422 to ``continue_final_message``.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from gge.errors import GgeError, RequestFailed
from gge.models.base import GenerationRequest
from gge.models.openai_api import OpenAIBackend
from gge.models.parsing import parse_points

Answer = tuple[int, dict[str, Any]]
"""A scripted answer: the HTTP status and the JSON body."""


class ScriptedServer:
    """A chat-completions server whose answer to each request body is ``reply(body)``; bodies are kept."""

    def __init__(self, reply: Callable[[dict[str, Any]], Answer]) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with server.lock:
                    server.bodies.append(body)
                status, payload = server.reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[dict[str, Any]], Answer]], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(reply: Callable[[dict[str, Any]], Answer]) -> ScriptedServer:
        servers.append(ScriptedServer(reply))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def _message(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def _completion(messages: list[dict[str, Any]], **choice: Any) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": i, "message": m, "finish_reason": "stop", **choice} for i, m in enumerate(messages)
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }


def _call(name: str, arguments: str) -> dict[str, Any]:
    """A tool call as transformers serve writes it (``arguments`` a JSON string)."""
    return {"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}}


def _request(**fields: Any) -> GenerationRequest:
    image = Image.new("RGB", (28, 28), (200, 10, 10))
    return GenerationRequest(
        image, [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "x"}]}], **fields
    )


def _backend(url: str) -> OpenAIBackend:
    return OpenAIBackend(url, "m", concurrency=1, max_retries=0, backoff_s=0.0)


# -- (a) tool calls parsed by the server -----------------------------------------------------------------
def test_a_tool_call_answer_is_written_back_as_the_qwen_text(serve: Any) -> None:
    # transformers serve: content "" and the call in tool_calls, finish_reason "tool_calls"
    args = '{"action": "left_click", "coordinate": [25, 17]}'
    server = serve(
        lambda body: (
            200,
            _completion([_message("", [_call("computer_use", args)])], finish_reason="tool_calls"),
        )
    )
    backend = _backend(server.url)
    [gen] = backend.generate([_request()])
    expected = (
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": '
        "[25, 17]}}\n</tool_call>"
    )
    assert gen.texts == [expected]
    assert gen.truncated == [False]
    assert parse_points(gen.texts[0]).points == ((25.0, 17.0),)
    assert backend._reading_record()["tool_call_answers"] == 1


def test_content_before_tool_calls_comes_first_and_each_call_is_counted_once_per_answer(serve: Any) -> None:
    calls = [_call("computer_use", '{"coordinate": [1, 2]}'), _call("computer_use", '{"coordinate": [3, 4]}')]
    server = serve(lambda body: (200, _completion([_message("Sure.", calls), _message(None, calls[:1])])))
    backend = _backend(server.url)
    [gen] = backend.generate([_request(num_sequences=2, do_sample=True)])
    one = '<tool_call>\n{"name": "computer_use", "arguments": {"coordinate": [1, 2]}}\n</tool_call>'
    two = '<tool_call>\n{"name": "computer_use", "arguments": {"coordinate": [3, 4]}}\n</tool_call>'
    assert gen.texts == [f"Sure.\n{one}\n{two}", one]
    assert backend._reading_record()["tool_call_answers"] == 2


def test_arguments_that_are_not_json_are_written_back_as_their_string(serve: Any) -> None:
    server = serve(lambda body: (200, _completion([_message("", [_call("click", "x=5, y=6")])])))
    [gen] = _backend(server.url).generate([_request()])
    assert gen.texts == ['<tool_call>\n{"name": "click", "arguments": "x=5, y=6"}\n</tool_call>']


def test_a_plain_answer_counts_no_tool_call(serve: Any) -> None:
    server = serve(lambda body: (200, _completion([_message("(5, 6)", [])])))
    backend = _backend(server.url)
    assert backend.generate([_request()])[0].texts == ["(5, 6)"]
    assert backend._reading_record()["tool_call_answers"] == 0


@pytest.mark.parametrize(
    "calls",
    [{"function": {"name": "f"}}, [{"function": {"arguments": "{}"}}], ["f"]],
    ids=["not-a-list", "no-name", "not-an-object"],
)
def test_a_malformed_tool_call_is_a_one_line_error(serve: Any, calls: Any) -> None:
    server = serve(lambda body: (200, _completion([_message("", calls)])))
    with pytest.raises(GgeError, match=r"choices\[0\]\.message\.tool_calls") as err:
        _backend(server.url).generate([_request()])
    assert "\n" not in str(err.value)


# -- (b) yes_probability is a float ----------------------------------------------------------------------
def _logprobs(top: list[tuple[str, float]]) -> dict[str, Any]:
    entries = [{"token": t, "logprob": lp} for t, lp in top]
    return {"content": [{**entries[0], "top_logprobs": entries}]}


def test_no_yes_among_the_top_logprobs_is_the_float_zero(serve: Any) -> None:
    top = [("No", math.log(0.9)), ("Maybe", math.log(0.1))]
    server = serve(lambda body: (200, _completion([_message("No")], logprobs=_logprobs(top))))
    [p] = _backend(server.url).yes_probability([_request()], "Yes", "No")
    assert type(p) is float
    assert p == 0.0


def test_yes_spellings_are_summed_as_a_float(serve: Any) -> None:
    top = [("No", math.log(0.5)), ("Yes", math.log(0.3)), (" yes", math.log(0.2))]
    server = serve(lambda body: (200, _completion([_message("No")], logprobs=_logprobs(top))))
    backend = _backend(server.url)
    [p] = backend.yes_probability([_request()], "Yes", "No")
    assert type(p) is float
    assert p == pytest.approx(0.5, abs=1e-12)
    assert backend.settings()["logprobs"] == "available"


def test_a_server_without_logprobs_gets_a_hard_float_answer_and_it_is_recorded(serve: Any) -> None:
    # transformers serve ignores logprobs: the answer's text decides, 1.0 or 0.0
    answers = iter(["Yes, it is", "no"])
    server = serve(lambda body: (200, _completion([_message(next(answers))])))
    backend = _backend(server.url)
    got = backend.yes_probability([_request(), _request()], "Yes", "No")
    assert got == [1.0, 0.0] and all(type(p) is float for p in got)
    assert backend.settings()["logprobs"] == "unavailable"


# -- (c) n, prefill -----------------------------------------------------------------------------------------
def test_a_server_that_ignores_n_is_asked_again_and_it_is_recorded(serve: Any) -> None:
    count = iter(range(100))
    server = serve(lambda body: (200, _completion([_message(f"({next(count)}, 1)")])))
    backend = _backend(server.url)
    [gen] = backend.generate([_request(num_sequences=3, do_sample=True)])
    assert gen.texts == ["(0, 1)", "(1, 1)", "(2, 1)"]
    assert [b["n"] for b in server.bodies] == [3, 2, 1]
    record = backend._reading_record()
    assert (record["n"], record["n_reasks"]) == ("ignored", 2)


def test_a_server_that_honours_n_is_asked_once(serve: Any) -> None:
    server = serve(lambda body: (200, _completion([_message(f"({i}, 1)") for i in range(body["n"])])))
    backend = _backend(server.url)
    [gen] = backend.generate([_request(num_sequences=3, do_sample=True)])
    assert gen.texts == ["(0, 1)", "(1, 1)", "(2, 1)"]
    assert len(server.bodies) == 1
    record = backend._reading_record()
    assert (record["n"], record["n_reasks"]) == ("honoured", 0)


def test_n_stays_unknown_when_no_request_asks_for_more_than_one(serve: Any) -> None:
    server = serve(lambda body: (200, _completion([_message("(1, 1)")])))
    backend = _backend(server.url)
    backend.generate([_request(), _request()])
    assert backend._reading_record() == {
        "n": None,
        "n_reasks": 0,
        "prefill": None,
        "tool_call_answers": 0,
        "model": [],
        "system_fingerprint": [],
    }


PREFILL = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['


def _refuses_prefill(body: dict[str, Any]) -> Answer:
    """As transformers serve: HTTP 422 to the prefill fields (any non-OpenAI field), else an answer."""
    if "continue_final_message" in body or "add_generation_prompt" in body:
        detail = [
            {"type": "extra_forbidden", "loc": ["body", "continue_final_message"], "msg": "Extra inputs"}
        ]
        return 422, {"detail": detail}
    return 200, _completion([_message("(1, 2)")])


def test_a_server_that_refuses_the_prefill_stops_the_run_naming_the_option(serve: Any) -> None:
    server = serve(_refuses_prefill)
    backend = _backend(server.url)
    with pytest.raises(GgeError) as err:
        backend.generate([_request(prefill=PREFILL)])
    message = str(err.value)
    assert "\n" not in message
    assert "model.prompts.prefill" in message and "HTTP 422" in message and "Extra inputs" in message
    assert "model.prompts.prefill=null" in message
    # the first request carried the prefill; the probe that proved it was the cause did not
    first, probe = server.bodies
    assert first["continue_final_message"] is True and first["messages"][-1] == {
        "role": "assistant",
        "content": PREFILL,
    }
    assert "continue_final_message" not in probe and probe["messages"][-1]["role"] == "user"
    assert backend._reading_record()["prefill"] is None


def test_a_refusal_that_is_not_the_prefill_keeps_the_servers_own_error(serve: Any) -> None:
    server = serve(lambda body: (400, {"error": {"message": "image too large: 9000000 pixels"}}))
    with pytest.raises(RequestFailed, match="HTTP 400: image too large") as err:
        _backend(server.url).generate([_request(prefill=PREFILL)])
    assert "prefill" not in str(err.value)
    assert len(server.bodies) == 2  # the request, then the probe without the prefill


def test_a_prefill_the_server_continues_is_recorded_and_read_before_the_answer(serve: Any) -> None:
    server = serve(lambda body: (200, _completion([_message("25, 17]}}\n</tool_call>")])))
    backend = _backend(server.url)
    [gen] = backend.generate([_request(prefill=PREFILL)])
    assert gen.texts == [PREFILL + "25, 17]}}\n</tool_call>"]
    assert backend._reading_record()["prefill"] == "continued"


def test_a_tool_call_parsed_over_prefill_and_answer_is_not_prefixed_twice(serve: Any) -> None:
    args = '{"action": "left_click", "coordinate": [25, 17]}'
    server = serve(lambda body: (200, _completion([_message("", [_call("computer_use", args)])])))
    [gen] = _backend(server.url).generate([_request(prefill=PREFILL)])
    assert gen.texts == [PREFILL + "25, 17]}}\n</tool_call>"]
