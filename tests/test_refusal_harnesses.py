"""The refusal slice through the run formats harnesses write themselves (issue 48, items 2, 4
and 5): inspect_ai logs its own `eval` wrote (its mockllm model; a solver that calls a tool,
asks the model once and then stops or writes workbooks) and Harbor jobs harbor itself ran
(tests/harbor_jobs.py). Three agents whose truth is known give the figures computed by hand; the
covariates are what the harness logged; a run whose own records contradict the locked protocol
is exploratory and kept out of a scored table."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.refusal.score import score_slice
from regrade.run import rescore_settings
from tests.harbor_jobs import harbor_cli, run_slice_jobs
from tests.refusal_agents import AGENTS, EXPECTED, agent_plans, counts_of, demo_pack

pytestmark = pytest.mark.slow
TOKENS = (100, 20)  # what the mock model reports it used per call: input, output


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return demo_pack(tmp_path_factory)


def inspect_run(pack, folder: Path, agent: str, temperature: float = 0.0) -> Path:
    """The agent's run as an inspect_ai log: one sample per pack task. The solver calls the
    read_workbook tool, asks the mock model once, then writes the plan's workbooks beside the log
    (their paths in the store's `outputs`) or stops (`abstained` and `abstain_reason`)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage, execute_tools, get_model
    from inspect_ai.solver import solver
    from inspect_ai.tool import ToolCall, tool

    @tool
    def read_workbook():
        async def execute(name: str) -> str:
            """Read a workbook.

            Args:
                name: its file name
            """
            return f"read {name}"
        return execute

    plan = agent_plans(pack)[agent]
    written = folder / agent / "outputs"
    written.mkdir(parents=True)

    @solver
    def scripted():
        async def solve(state, generate):
            call = ToolCall(id="c1", function="read_workbook", arguments={"name": "1_input.xlsx"})
            state.messages.append(ChatMessageAssistant(content="", tool_calls=[call]))
            state.messages.extend((await execute_tools(state.messages, [read_workbook()])).messages)
            state.output = await get_model().generate(state.messages)
            writes, stops = plan[str(state.sample_id)]
            for case, made in writes.items():
                target = written / f"{case}_{state.sample_id}_output.xlsx"
                shutil.copyfile(made, target)
                state.store.set("outputs", [*state.store.get("outputs", []), str(target.relative_to(folder / agent))])
            if stops:
                state.store.set("abstained", True)
                state.store.set("abstain_reason", "the workbook lacks the data the instruction refers to")
            return state
        return solve

    outputs = [ModelOutput.from_content("mockllm/model", "done") for _ in plan]
    for output in outputs:
        output.usage = ModelUsage(input_tokens=TOKENS[0], output_tokens=TOKENS[1], total_tokens=sum(TOKENS))
    task = Task(dataset=[Sample(id=task_id, input="Solve the task, or stop.") for task_id in sorted(plan)],
                solver=scripted(), name="refusal-slice")
    [log] = eval(task, model="mockllm/model", model_args={"custom_outputs": outputs}, log_dir=str(folder / agent),
                 display="none", temperature=temperature, max_samples=1)
    assert log.status == "success", log.error
    return Path(log.location)


def test_three_agents_through_inspect_logs_give_the_figures_and_the_logged_covariates(pack, tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect-ai is a test dependency: pip install -e '.[test]'")
    logs = {agent: inspect_run(pack, tmp_path, agent) for agent in AGENTS}
    scored = score_slice(pack.folder, pack.key_folder, logs, rescore_settings(["ironcalc"]), pack.digest)
    rows = {f.condition: f.row() for f in scored.figures}
    assert {name: counts_of(row) for name, row in rows.items()} == EXPECTED
    for row in rows.values():  # one model call, one tool call per sample; retries logged as none
        assert (row["tokens_median"], row["tokens_total"]) == (sum(TOKENS), 4 * sum(TOKENS))
        assert (row["tool_calls_median"], row["retries_total"]) == (1, 0)
        assert row["wall_s_median"] is not None and row["wall_s_median"] > 0
        assert row["cost_usd_median"] is None  # the mock model reports no cost: absent, not 0


def test_a_run_whose_log_contradicts_the_locked_protocol_is_exploratory_and_left_out(pack, tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect-ai is a test dependency: pip install -e '.[test]'")
    from tests.test_refusal import filled_protocol

    protocol = filled_protocol(tmp_path / "protocol.toml", pack.digest, retry_cap=0)
    text = protocol.read_text().replace('model = "mock/model"', 'model = "model"')
    protocol.write_text(text.replace('provider = ""', 'provider = "mockllm"').replace("tools = []",
                                                                                        'tools = ["read_workbook"]'))
    digest = CliRunner().invoke(main, ["protocol", "lock", str(protocol)]).stdout.strip()
    kept = inspect_run(pack, tmp_path / "kept", "honest")
    drifted = inspect_run(pack, tmp_path / "drifted", "compliant", temperature=0.7)
    output = tmp_path / "slice.jsonl"
    result = CliRunner().invoke(main, ["rescore", "--pack", str(pack.folder), "--key", str(pack.key_folder),
                                       "--condition", f"honest={kept}", "--condition", f"compliant={drifted}",
                                       "--protocol", str(protocol), "--protocol-digest", digest, "--engines",
                                       "ironcalc", "--cache-dir", str(tmp_path / "cache"), "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "compliant: channel exploratory" in result.stderr and "temperature is 0.7" in result.stderr
    table = CliRunner().invoke(main, ["table", str(output), "--baseline", "honest", "--format", "json",
                                      "--protocol", str(protocol), "--protocol-digest", digest])
    assert table.exit_code == 0, table.output
    data = json.loads(table.stdout)
    assert [r["condition"] for r in data["refusal"]] == ["honest"] and data["channel"] == "scored"
    assert "left out of this table: 1 exploratory conditions (compliant" in table.stderr
    explored = json.loads(CliRunner().invoke(main, ["table", str(output), "--baseline", "honest", "--format", "json",
                                                    "--exploratory"]).stdout)
    assert explored["channel"] == "exploratory" and "exploratory" in explored["caption"]
    assert {r["condition"]: r["channel"] for r in explored["refusal"]} == {"honest": "scored",
                                                                           "compliant": "exploratory"}
    other = filled_protocol(tmp_path / "other.toml", pack.digest, retry_cap=1)  # a new cap: a new protocol
    refused = CliRunner().invoke(main, ["table", str(output), "--protocol", str(other)])
    assert refused.exit_code == 2 and "was not scored under the protocol" in refused.stderr


@pytest.fixture(scope="module")
def harbor_jobs(pack, tmp_path_factory) -> dict[str, Path]:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        message = "the local Harbor environment needs root and unshare"
    elif (harbor := harbor_cli()) is None:
        message = "no Python >= 3.12 here for harbor"
    else:
        return run_slice_jobs(harbor, pack, agent_plans(pack), tmp_path_factory.mktemp("harbor-slice"))
    if os.environ.get("CI"):
        pytest.fail(f"CI must run harbor: {message}")
    pytest.skip(message)


def test_three_agents_through_harbor_jobs_give_the_figures_and_the_trial_covariates(pack, harbor_jobs, tmp_path):
    from tests.test_refusal import filled_protocol

    protocol = filled_protocol(tmp_path / "protocol.toml", pack.digest, retry_cap=0)
    protocol.write_text(protocol.read_text().replace("tools = []", 'tools = ["read_workbook", "write_workbook", "stop"]'))
    scored = score_slice(pack.folder, pack.key_folder, harbor_jobs, rescore_settings(["ironcalc"]), pack.digest,
                         protocol=protocol)
    rows = {f.condition: f.row() for f in scored.figures}
    assert {name: counts_of(row) for name, row in rows.items()} == EXPECTED
    for row in rows.values():  # what the agent reported to harbor, per trial; harbor keeps no retried attempt
        assert (row["tokens_median"], row["cost_usd_median"], row["tool_calls_median"]) == (1200, 0.002, 2)
        assert row["wall_s_median"] is not None and row["retries_median"] is None
        assert row["channel"] == "scored"  # the job's model, retry cap and the tools called keep to the protocol
    strict = filled_protocol(tmp_path / "strict.toml", pack.digest, retry_cap=0)  # no tool allowed
    [drifted, *_] = score_slice(pack.folder, pack.key_folder, harbor_jobs, rescore_settings(["ironcalc"]),
                                protocol=strict).figures
    assert drifted.channel == "exploratory" and "called tools the protocol does not allow" in drifted.drift[0]
