"""The spec writers: the prompt never holds the reference spec; the HTTP endpoint against a stub on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from stages.sysmobench import specs
from stages.sysmobench.generators import CLASSES, EXAMPLE_OF, HttpEndpoint, extract_module, spec_prompt


def test_prompt_has_the_code_and_interface_and_another_systems_reference_never_its_own():
    every = specs.systems(2, 2, 2)
    for name, example in EXAMPLE_OF.items():
        assert example != name
        prompt = spec_prompt(every[name], every[example])
        assert f"class {CLASSES[name].__name__}" in prompt and f"class {CLASSES[example].__name__}" not in prompt
        assert f"VARIABLES {', '.join(every[name].variables)}" in prompt
        assert specs.render(specs.REFERENCE[example]) in prompt          # the worked example
        for line in specs.render(specs.REFERENCE[name]).splitlines()[4:-2]:   # every definition of its own
            assert line not in prompt
    with pytest.raises(ValueError, match="another system"):
        spec_prompt(every["mutex"], every["mutex"])


def test_extract_module_keeps_only_the_module():
    reply = "Here it is:\n---- MODULE Spinlock ----\nVARIABLE x\n====\nHope it helps."
    assert extract_module(reply) == "---- MODULE Spinlock ----\nVARIABLE x\n===="
    assert extract_module("  no module at all ") == "no module at all"
    # a reply cut before the module's end is closed; text before the header is dropped
    assert extract_module("ok\n---- MODULE Mutex ----\nVARIABLES owner\nInit == owner = 0\n") == \
        "---- MODULE Mutex ----\nVARIABLES owner\nInit == owner = 0\n===="


class _Stub(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.seen.append(body)
        text = "---- MODULE Spinlock ----\n====" if body["seed"] != 13 else None
        payload = json.dumps({"text": text} if text else {"error": "no"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub_url():
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/generate"
    server.shutdown()


def test_http_endpoint_posts_the_prompt_and_reads_the_text(stub_url):
    writer = HttpEndpoint(stub_url, max_new_tokens=64, timeout_s=10)
    assert writer.write_spec("write a spec", seed=5) == "---- MODULE Spinlock ----\n===="
    assert _Stub.seen[-1] == {"prompt": "write a spec", "seed": 5, "max_tokens": 64}
    with pytest.raises(ValueError, match="no string field 'text'"):
        writer.write_spec("write a spec", seed=13)
