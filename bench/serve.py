"""Time from submission to results for the demo run on a warm `regrade serve` against a cold
`regrade rescore`, side by side (issue 49; issue 50's engines warm across runs).

    python3 bench/serve.py -n 5

The server is started once over a fresh data folder and warmed by one submission; each timed
submission asks for every case to be graded afresh (`"cache": false`), so it pays the engines'
work but not their start. The baseline is `regrade rescore` on the same run with `--no-cache`,
a new process each time (engines started, Formulon's compiled module from its disk cache).
Both use the default engines and one case worker. Prints one JSON line per run and the medians
and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regrade.demo import DEMO_RUN  # noqa: E402
from tests.test_serve import Server  # noqa: E402

CONDITIONS = ("none", "community", "anthropic")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=5, help="Timed runs of each (default 5).")
    args = parser.parse_args()
    request = {"kind": "rescore", "dataset": str(DEMO_RUN / "dataset"),
               "conditions": {c: str(DEMO_RUN / "outputs" / c) for c in CONDITIONS}}
    with tempfile.TemporaryDirectory() as scratch:
        server = Server(Path(scratch) / "data", DEMO_RUN).start()
        try:
            client = server.client()
            client.wait(client.submit(request)["id"], poll_s=0.05)  # the engines start here, once
            served = []
            for _ in range(args.n):
                started = time.monotonic()
                job = client.wait(client.submit({**request, "cache": False})["id"], poll_s=0.05)
                client.results(job["id"])
                served.append(time.monotonic() - started)
                print(json.dumps({"run": "warm server", "seconds": round(served[-1], 2), "cases": job["done"]}))
        finally:
            server.stop()
        cold = []
        for number in range(args.n):
            command = [sys.executable, "-m", "regrade", "-q", "rescore", "--dataset", str(DEMO_RUN / "dataset"),
                       *(f"--condition={c}={DEMO_RUN / 'outputs' / c}" for c in CONDITIONS), "--workers", "1",
                       "--no-cache", "-o", str(Path(scratch) / f"cold-{number}.jsonl")]
            started = time.monotonic()
            subprocess.run(command, check=True, capture_output=True)
            cold.append(time.monotonic() - started)
            print(json.dumps({"run": "rescore cold", "seconds": round(cold[-1], 2)}))
    warm_s, cold_s = statistics.median(served), statistics.median(cold)
    print(json.dumps({"warm_server_median_s": round(warm_s, 2), "rescore_cold_median_s": round(cold_s, 2),
                      "ratio": round(cold_s / warm_s, 2)}))


if __name__ == "__main__":
    main()
