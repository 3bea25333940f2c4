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


class ScriptedSliceAgent(BaseAgent):
    """A scripted agent over a refusal-slice task: it runs the task's ``/app/agent.sh`` (which
    writes the output workbooks or an abstention file in /app/output), reports token counts and
    a cost as a model-backed agent does, and writes its trajectory in harbor's own ATIF model
    (one tool call to read the inputs, one to write or to stop)."""

    @staticmethod
    def name() -> str:
        return "scripted-slice"

    def version(self) -> str:
        return "1.0.0"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        from harbor.models.trajectories import Agent, Step, ToolCall, Trajectory

        await environment.exec("bash /app/agent.sh")
        stopped = (await environment.exec("ls /app/output")).stdout or ""
        last = "stop" if "_abstain." in stopped else "write_workbook"
        context.n_input_tokens, context.n_output_tokens, context.cost_usd = 1000, 200, 0.002
        steps = [Step(step_id=n, source="agent", message=f"step {n}",
                      tool_calls=[ToolCall(tool_call_id=f"c{n}", function_name=function, arguments={})])
                 for n, function in enumerate(("read_workbook", last), start=1)]
        trajectory = Trajectory(agent=Agent(name=self.name(), version=self.version(), model_name=self.model_name),
                                steps=steps)
        (self.logs_dir / "trajectory.json").write_text(trajectory.model_dump_json(indent=2))
