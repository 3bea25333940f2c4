"""A Harbor agent for tests (imported by harbor, Python 3.12): it writes each input workbook,
unsolved, as its output, then fails as a model provider's rate limit does. Harbor's error policy
gives a trial that raised ``RateLimitError`` a verifier run (whose lax check rewards 1.0 here)
but no valid reward."""

from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext


class RateLimitError(Exception):
    """Named as litellm's, which harbor's error policy lists as has_valid_reward: false."""


class RateLimitedAgent(BaseAgent):
    @staticmethod
    def name() -> str:
        return "rate-limited"

    def version(self) -> str:
        return "1.0.0"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        await environment.exec("mkdir -p /app/output && for f in /app/input/*_input.xlsx; do "
                               "cp \"$f\" \"/app/output/$(basename \"$f\" _input.xlsx)_output.xlsx\"; done")
        raise RateLimitError("429: rate limit reached for requests")
