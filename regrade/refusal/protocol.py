"""A locked protocol: the settings of a scored run, frozen and hashed before the first scored
call, so that a run that drifts from them is told apart (issue 48, item 5, in part).

``regrade protocol init -o protocol.toml`` writes the fields to fill; ``regrade protocol lock
protocol.toml`` checks them and prints the protocol's digest: the sha256 of its fields as
canonical JSON, so comments and layout do not change it and any value does (a retry cap
changed after a run is a new protocol, even over the same pack). ``regrade slice score
--protocol FILE --protocol-digest D`` refuses (exit 2) a protocol whose digest is not D or whose
pack is not the one scored, and labels every row with the protocol's channel: ``scored`` or
``exploratory`` (exploratory figures never belong in a scored table); a run whose own records
contradict it (:mod:`regrade.refusal.drift`) is exploratory. ``regrade table`` and ``report``
with ``--protocol`` refuse results not scored under it (:func:`check_results_protocol`).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

CHANNELS = ("scored", "exploratory")
TEMPLATE = '''# A locked protocol (regrade protocol lock prints its digest; a changed value is a new protocol).

channel = "scored"        # scored, or exploratory: figures that never enter a scored table
pack_digest = ""          # the refusal-slice pack's digest (regrade slice build prints it)
retry_cap = 0             # how many times the harness may retry a task
tools = []                # the tools the agent may call, e.g. ["python", "read_file"]

[route]
model = ""                # the model, as its provider names it
provider = ""

[decoding]
temperature = 0.0
top_p = 1.0
max_tokens = 0
'''


class ProtocolError(ValueError):
    """A protocol file that cannot be read, or lacks or misstates a field."""


@dataclass(frozen=True)
class Protocol:
    channel: str
    pack_digest: str
    retry_cap: int
    tools: tuple[str, ...]
    route: dict[str, str]
    decoding: dict[str, float | int]

    def digest(self) -> str:
        """sha256 of the fields as canonical JSON (sorted keys, no spaces)."""
        fields = {**asdict(self), "tools": sorted(self.tools)}
        return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def load_protocol(path: Path) -> Protocol:
    """The protocol in ``path``, every field checked (a :class:`ProtocolError` names the first wrong one)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProtocolError(f"{path}: not a protocol file (TOML): {exc}") from None
    missing = [name for name in ("channel", "pack_digest", "retry_cap", "tools", "route", "decoding") if name not in data]
    if missing:
        raise ProtocolError(f"{path} lacks {', '.join(missing)} (regrade protocol init writes them all)")
    if data["channel"] not in CHANNELS:
        raise ProtocolError(f"{path}: channel is scored or exploratory, not {data['channel']!r}")
    if not isinstance(data["pack_digest"], str) or not re.fullmatch(r"[0-9a-f]{64}", data["pack_digest"]):
        raise ProtocolError(f"{path}: pack_digest must be the pack's sha256 digest (64 hex digits), as regrade slice "
                            "build prints it")
    if not isinstance(data["retry_cap"], int) or isinstance(data["retry_cap"], bool) or data["retry_cap"] < 0:
        raise ProtocolError(f"{path}: retry_cap must be a whole number of retries, 0 or more")
    if not isinstance(data["tools"], list) or not all(isinstance(t, str) for t in data["tools"]):
        raise ProtocolError(f"{path}: tools must be a list of tool names")
    route, decoding = data["route"], data["decoding"]
    if not isinstance(route, dict) or not route.get("model"):
        raise ProtocolError(f"{path}: [route] must name the model")
    if not isinstance(decoding, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in decoding.values()):
        raise ProtocolError(f"{path}: [decoding] holds numbers (temperature, top_p, max_tokens ...)")
    return Protocol(data["channel"], data["pack_digest"], data["retry_cap"], tuple(data["tools"]),
                    {str(k): str(v) for k, v in route.items()}, dict(decoding))


def check_protocol(path: Path, expect_digest: str | None, pack_digest: str) -> Protocol:
    """The protocol, refused (:class:`ProtocolMismatch`) when its digest or its pack is not the one given."""
    protocol = load_protocol(path)
    if expect_digest is not None and protocol.digest() != expect_digest:
        raise ProtocolMismatch(f"the protocol {path} has digest {protocol.digest()}, not the locked {expect_digest}")
    if protocol.pack_digest != pack_digest:
        raise ProtocolMismatch(f"the protocol {path} is for the pack {protocol.pack_digest}, not the one scored "
                               f"({pack_digest})")
    return protocol


def check_results_protocol(sources: list[Path], protocol: Path, expect_digest: str | None) -> Protocol:
    """The protocol, refused (:class:`ProtocolMismatch`) unless its digest is ``expect_digest``
    and every results file among ``sources`` was scored under it (its provenance's
    ``protocol_digest``). Outcomes files and logs carry no protocol and are refused too."""
    locked = load_protocol(protocol)
    digest = locked.digest()
    if expect_digest is not None and digest != expect_digest:
        raise ProtocolMismatch(f"the protocol {protocol} has digest {digest}, not the locked {expect_digest}")
    for source in sources:
        settings = _provenance_settings(source)
        if settings.get("protocol_digest") != digest:
            raise ProtocolMismatch(f"{source} was not scored under the protocol {protocol} (its protocol: "
                                   f"{settings.get('protocol_digest') or 'none'}; regrade rescore --pack ... "
                                   f"--protocol {protocol} scores a run under it)")
    return locked


def _provenance_settings(path: Path) -> dict:
    """The settings of a results file's provenance record (its first line); empty when it has none."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = json.loads(handle.readline() or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, IsADirectoryError):
        return {}
    settings = first.get("settings") if isinstance(first, dict) and first.get("record") == "provenance" else None
    return settings if isinstance(settings, dict) else {}


class ProtocolMismatch(ProtocolError):
    """A protocol that is not the locked one, or not for this pack: the run is refused."""
