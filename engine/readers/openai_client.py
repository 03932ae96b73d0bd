"""The "openai" backend's generator: a client of an OpenAI-compatible server (/completions
for text prompts, /chat/completions for chat prompts, temperature 0), sent the key its endpoint was
allowed with (engine.allowed: the allow file's, or `$FUNNEL_API_KEY` for a URL typed on the
command line) and no other. engine.readers.backends names it in the backends' table.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from engine.errors import ConfigError
from engine.readers.generator import Capabilities, Generation, GeneratorError, Prompt
from engine.readers.greedy import cut_at_stop


class OpenAIGenerator:
    """An OpenAI-compatible server: /completions for text prompts, /chat/completions for
    chat prompts; temperature 0. Token counts come from the server's `usage`."""

    capabilities = Capabilities()  # text in, text out: nothing else over this API

    def __init__(self, model: str, base_url: str, api_key: str = "",
                 timeout: float = 120.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint {base_url!r} is not an http(s) URL; give the server's "
                              "base URL, e.g. http://127.0.0.1:8000/v1.")
        self.name, self.base_url, self.timeout = model, base_url.rstrip("/"), timeout
        self.api_key = api_key

    def generate(self, prompt: Prompt, *, max_new_tokens: int = 32, stop: tuple[str, ...] = (),
                 spans: tuple[tuple[int, int], ...] = (),
                 ban_first: tuple[str, ...] = (), prefix: Prompt = "") -> Generation:
        """`spans`, `ban_first` and `prefix` are refused: the API has nothing for them (a
        server caches prefixes its own way)."""
        asked = [name for name, value in (("spans (attention)", spans),
                                          ("ban_first", ban_first), ("prefix", prefix))
                 if value]
        if asked:
            raise GeneratorError(f"The OpenAI-compatible backend at {self.base_url} cannot "
                                 f"honour {', '.join(asked)}: it has none of "
                                 "attention, ban_first or prefix_cache.")
        start = time.perf_counter()
        body: dict[str, Any] = {"model": self.name, "max_tokens": max_new_tokens,
                                "temperature": 0}
        if stop:
            body["stop"] = list(stop)[:4]  # the API takes at most four
        if isinstance(prompt, str):
            path, body["prompt"] = "/completions", prompt
        else:
            path = "/chat/completions"
            body["messages"] = [{"role": m.role, "content": m.content} for m in prompt]
        reply = self._post(path, body)
        try:
            choice = reply["choices"][0]
            text = choice["text"] if path == "/completions" else choice["message"]["content"]
            usage = reply.get("usage") or {}
        except (KeyError, IndexError, TypeError) as err:
            raise GeneratorError(f"{self.base_url}{path} answered without choices[0] "
                                 f"({err!r}); is it an OpenAI-compatible server?") from None
        text, stopped = cut_at_stop(text or "", stop)
        # the server says why it stopped: "length" is the max_tokens cap
        return Generation(text, int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)), time.perf_counter() - start,
                          at_cap=choice.get("finish_reason") == "length" and not stopped)

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            self.base_url + path, data=json.dumps(body).encode("utf-8"), method="POST",
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", "replace")[:300]
            raise GeneratorError(f"{self.base_url}{path} answered HTTP {err.code}: {detail}. "
                                 f"Check the model name {self.name!r} and the endpoint's "
                                 "key (the allow file's key_env or key_file; on the command "
                                 "line $FUNNEL_API_KEY).") from None
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            raise GeneratorError(f"Cannot reach the endpoint {self.base_url}: {err}. Is the "
                                 "server running, and is the base URL right?") from None
        except ValueError as err:
            raise GeneratorError(f"{self.base_url}{path} did not answer JSON ({err}).") from None
