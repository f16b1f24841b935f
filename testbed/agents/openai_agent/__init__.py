"""`openai:MODEL`: an LLM agent for any OpenAI-compatible chat-completions endpoint.

Spec: `openai:MODEL[?option=value&...]` (options: `OpenAISettings`, one field each).

    base_url        API root (default: env TESTBED_OPENAI_BASE_URL, else https://api.openai.com/v1)
    api_key_env     variable holding the key (default OPENAI_API_KEY)
    tools           1 (default): function calling with a `run` tool; 0: <bash> blocks in text
    max_steps       most model calls in one run (default 50)
    timeout         seconds per HTTP request (default 120)
    max_retries     retries of a call on 408/409/429/5xx/connection errors (default 3)
    context_tokens  the model's context window (default 32768)
    max_malformed   malformed replies in a row that end the run (default 3)
    price_in/out    USD per 1M prompt / completion tokens: each turn's cost is stored
    temperature, top_p, max_tokens | max_completion_tokens, seed, reasoning_effort
                    sampling parameters, sent only when given (none by default: reasoning
                    models refuse `temperature`)

Modules: `settings` (the spec), `client` (the official `openai` SDK and what its errors
mean), `context` (the context window policy), `actions` (tool calls and `<bash>` blocks),
`prompt` (what the model reads), `agent` (the conversation); turns are stored through
`testbed.agents.turns`.

Outcome rules (what a model-side event does to the run):

- `failed` (the model's own failure, `AgentFailure`; the run ends `failed` with
  "agent failed: <reason>", the machines are still verified):
  a context-length error from the endpoint (HTTP 400/413/422 with code
  `context_length_exceeded` or the message forms of OpenAI, vLLM, llama.cpp, TGI);
  a refusal (the reply's `refusal` field, or `finish_reason` `content_filter`);
  `max_malformed` malformed replies in a row (tool calls that do not parse, replies cut off
  at the completion cap before asking for anything).
- retried, then `error` (`HarnessError`): 429 waits the `Retry-After` the endpoint asks for
  (seconds or HTTP date, up to 120 s); 5xx, 408, 409, timeouts and connection errors are
  retried with jittered exponential backoff; after `max_retries` retries, a connection
  refused, a timeout, a 5xx or a 429 is the endpoint staying down: the run ends `error`.
  So does any other rejection of the request (401, 404, a parameter the model refuses).
- neither: a reply that asks for no command ends the agent phase normally (then the checks
  decide `passed` or `failed`); so does reaching `max_steps`.
"""

from testbed.agents.openai_agent.agent import OpenAIAgent
from testbed.agents.openai_agent.settings import OpenAISettings

__all__ = ["OpenAIAgent", "OpenAISettings"]
