"""``regrade serve`` and ``regrade submit``: the service and its client."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from regrade.cli.app import library_errors, main, quiet
from regrade.cli.options import check_executor, executor_options, say_summary
from regrade.render.rows import render
from regrade.results.records import Results
from regrade.results.summary import summarise, verdict_counts
from regrade.runs.cases import parse_conditions


@main.command("serve")
@click.option("--data", type=click.Path(path_type=Path, file_okay=False), default=Path("regrade-data"),
              show_default=True, help="The server's folder: its SQLite database, token, results, reports, uploads "
              "and results cache.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on (loopback unless told).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--root", "roots", multiple=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="A folder whose runs and datasets jobs may name by path (repeat). Paths elsewhere are refused; "
                   "uploads are always allowed.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Case workers per job. With 1 the engines stay open between jobs; more start theirs per job.")
@click.option("--max-upload-mb", type=click.IntRange(min=1), default=512, show_default=True,
              help="The largest upload taken, in MB (its unpacked size may be 4 times as much).")
@executor_options
def serve_command(data, host, port, roots, workers, max_upload_mb, executor, scheduler):
    """Serve regrade over HTTP: a job queue, the results and reports, a web page.

    A job names its run by paths under the --root folders or uploads it as a zip (POST
    /api/uploads); each runs through the same library as the command line,
    one after another, its progress (cases done of the run's total) stored as it goes.
    State is an SQLite database in --data, results files and reports beside it. A
    server stopped in the middle of a job (even by SIGKILL) queues it again at its next
    start and resumes from the results cache; a job is done only when its results hold
    every case. Every request for jobs or results needs the bearer token written to
    DATA/token (mode 0600) at the first start; a browser signs in once at
    /login?token=TOKEN. The JSON API is under /api/ (its OpenAPI document at
    /api/openapi.json, docs/openapi.json); docs/serve.md says what the server trusts.

    Jobs: rescores (paths or uploads), runs over a refusal-slice pack, audits of a
    built-in grader; cancel, results, reports, comparisons of results files. With
    --executor dask, rescores and audits grade on a Dask cluster (docs/scale.md). Not
    yet: audits of a user's grader command or callable, several jobs at once (one
    runs at a time).

    \b
    Example:
      regrade serve --data regrade-data --root /runs
      regrade submit --server http://127.0.0.1:8765 --dataset /runs/data --condition none=/runs/none
    """
    try:
        from regrade.service.server import serve
    except ImportError as exc:
        raise click.ClickException(f"regrade serve needs FastAPI and uvicorn: pip install 'regrade[serve]' ({exc})")
    from regrade.service.files import UploadLimits

    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: listening on {host}: anyone who can reach it and holds the token can run jobs", err=True)
    limit = max_upload_mb * 1024 * 1024
    click.echo(f"regrade serve: http://{host}:{port}/ (data in {data}; the token is in {data / 'token'}: sign in at "
               f"/login?token=...)", err=True)
    check_executor(executor, scheduler)
    serve(data, host, port, list(roots), workers, UploadLimits(bytes=limit, unpacked=4 * limit), executor, scheduler)


@main.command("submit")
@click.option("--server", required=True, metavar="URL", help="The regrade server, e.g. http://127.0.0.1:8765.")
@click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A file holding the server's token (default: $REGRADE_TOKEN).")
@click.option("--dataset", required=True, help="The dataset: a path the server reads (under one of its --root).")
@click.option("--condition", "conditions", multiple=True, required=True, metavar="NAME=PATH",
              help="A condition's run (repeat): an outputs folder or a Harbor job the server reads.")
@click.option("--upload", is_flag=True, help="Zip the dataset and each condition's folder here and upload them, "
              "for a server that cannot read this machine's files.")
@click.option("--engines", "engine_names", metavar="NAMES", help="Comma-separated full engines (default: the server's).")
@click.option("--baseline", default=None, help="The report's baseline condition (default: none, else the first).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Keep the results file here (default: a temporary file).")
@library_errors
def submit_command(server, token_file, dataset, conditions, upload, engine_names, baseline, output):
    """Send a run to a regrade server, wait for it, and print what `regrade rescore` prints.

    \b
    Example:
      regrade submit --server http://127.0.0.1:8765 --dataset /runs/data \\
          --condition none=/runs/none --condition skills=/runs/skills -o results.jsonl
    """
    from regrade.service.client import Client, ServerError

    token = token_file.read_text().strip() if token_file else os.environ.get("REGRADE_TOKEN", "")
    if not token:
        raise click.UsageError("the server's token: --token-file FILE or $REGRADE_TOKEN")
    client = Client(server, token)
    named = {name: _as_sent(path) for name, path in parse_conditions(list(conditions)).items()}
    dataset = _as_sent(Path(dataset))
    try:
        if upload:
            dataset = client.upload(Path(dataset))
            named = {name: client.upload(Path(path)) for name, path in named.items()}
        request = {"kind": "rescore", "dataset": str(dataset), "conditions": named, "baseline": baseline,
                   "engines": engine_names.split(",") if engine_names else None}
        job = client.submit(request)
        click.echo(f"job {job['id']} queued on {server}", err=True)
        shown = {"done": -1}

        def progress(state: dict) -> None:
            if state["done"] != shown["done"] and not quiet():
                shown["done"] = state["done"]
                click.echo(f"job {state['id']}: {state['state']}, {state['done']} of {state['total']} cases", err=True)

        finished = client.wait(job["id"], progress)
        if finished["state"] != "done":
            raise click.ClickException(f"job {job['id']} {finished['state']}: {finished['message']}")
        data = client.results(job["id"])
    except ServerError as exc:
        raise click.ClickException(str(exc)) from None
    with tempfile.TemporaryDirectory() as scratch:
        target = output or Path(scratch) / "results.jsonl"
        target.write_bytes(data)
        records = Results.read(target).cases
        click.echo(render(["verdict", "cases"], verdict_counts(records), "table"))
        say_summary(summarise(records), output)


def _as_sent(path: Path) -> str:
    """A path as the server is sent it: absolute where it exists here (a server on this machine
    reads it as it is), else as given (a path on the server's machine)."""
    return str(path.resolve()) if path.exists() else str(path)
