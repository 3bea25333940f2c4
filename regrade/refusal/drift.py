"""Whether a run kept to its locked protocol, by what the run's own records name.

A Harbor job and inspect_ai logs name the settings they ran with (the model, the decoding
settings, the retry cap, the tools called: :mod:`regrade.refusal.harness_traces`); an outputs
folder or a manifest names none, so nothing there can contradict a protocol (and nothing is
checked: said). Each setting the run names that contradicts the protocol is a reason, and a
run with any is exploratory: its figures never enter a scored table.
"""

from __future__ import annotations

from regrade.refusal.protocol import Protocol

DECODING = ("temperature", "top_p", "max_tokens")


def drift(protocol: Protocol, settings: dict[str, object]) -> list[str]:
    """What of ``settings`` (a run's own records) contradicts ``protocol``; empty when nothing does."""
    reasons = []
    model = settings.get("model")
    if isinstance(model, str) and not same_model(model, protocol.route):
        wanted = "/".join(p for p in (protocol.route.get("provider"), protocol.route.get("model")) if p)
        reasons.append(f"the run's model is {model}, the protocol's {wanted}")
    for name in DECODING:
        if name in settings and name in protocol.decoding and settings[name] != protocol.decoding[name]:
            reasons.append(f"the run's {name} is {settings[name]}, the protocol's {protocol.decoding[name]}")
    cap = settings.get("retry_cap")
    if isinstance(cap, int) and cap != protocol.retry_cap:
        reasons.append(f"the run's retry cap is {cap}, the protocol's {protocol.retry_cap}")
    taken = settings.get("retries")
    if isinstance(taken, int) and taken > protocol.retry_cap:
        reasons.append(f"a task was retried {taken} times, beyond the protocol's cap of {protocol.retry_cap}")
    tools = settings.get("tools")
    if isinstance(tools, list):
        outside = sorted(set(map(str, tools)) - set(protocol.tools))
        if outside:
            reasons.append(f"the run called tools the protocol does not allow: {', '.join(outside)}")
    return reasons


def same_model(named: str, route: dict[str, str]) -> bool:
    """Whether a run's model name is the route's model: the model itself, or ``provider/model``
    (inspect_ai and harbor name a model with its provider in front)."""
    model, provider = route.get("model", ""), route.get("provider", "")
    if named == model or (provider and named == f"{provider}/{model}"):
        return True
    return not provider and named.rsplit("/", 1)[-1] == model
