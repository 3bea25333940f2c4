"""The bundled demo run: ``fixtures/demo-run`` (see fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

DEMO_RUN = Path(__file__).resolve().parent.parent / "fixtures" / "demo-run"


def conditions(run_dir: Path) -> dict[str, Path]:
    """Each folder of ``run_dir/outputs`` is a condition; ``none`` is the baseline."""
    outputs = run_dir / "outputs"
    if not (run_dir / "dataset" / "dataset.json").is_file() or not outputs.is_dir():
        raise ValueError(f"{run_dir} is not a demo run: it needs dataset/dataset.json and outputs/<condition>/")
    return {folder.name: folder for folder in sorted(outputs.iterdir()) if folder.is_dir()}
