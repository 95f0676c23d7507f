"""The monitor's report: the JSON document, its plain-text rendering and eps histograms per model."""
from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from .errors import MonitorError
from .state import ModelStats, MonitorState, describe_recommit, now_iso


def exact_decimal(x: Fraction) -> str:
    """A dyadic rational (denominator 2^k) in full: 3/8 -> '0.375'."""
    k = x.denominator.bit_length() - 1
    if x.denominator != 1 << k:
        raise ValueError(f"{x} is not a dyadic rational")
    digits = str(abs(x.numerator) * 5 ** k).rjust(k + 1, "0")
    whole, frac = digits[: len(digits) - k], digits[len(digits) - k:].rstrip("0")
    return ("-" if x < 0 else "") + whole + ("." + frac if frac else "")


def median(values: Sequence[Fraction]) -> Fraction:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def eps_summary(values: Sequence[Fraction]) -> dict[str, int | str] | None:
    if not values:
        return None
    return {"count": len(values), "min": exact_decimal(min(values)), "median": exact_decimal(median(values)),
            "max": exact_decimal(max(values))}


def model_report(stats: ModelStats) -> dict[str, Any]:
    eps = stats.eps_values()
    return {
        "cards_published": len(stats.cards),
        "distinct_cards": len({c.card_digest for c in stats.cards}),
        "commitment_changes": [r.model_dump() for r in stats.recommits],
        "card_updates": stats.card_updates,
        "decision_requests": stats.decision_requests,
        "answered_requests": stats.answered_requests,
        "pending_requests": sorted(stats.pending_requests),
        "certificates": stats.certificates,
        "certificates_without_request": stats.certificates_without_request,
        "decisions": dict(sorted(stats.decisions.items())),
        "flips": stats.flips,
        "capped": stats.capped,
        # certified radii by what they are: exact (the true radius rounded down) or fast (a lower bound)
        "radius": {"exact": stats.exact_radius, "fast": stats.certificates - stats.flips - stats.exact_radius},
        "eps": eps_summary(eps),
        "eps_values": [exact_decimal(v) for v in eps],
        # auditors' attestations logged for the model's cards: how many, and by auditor name
        "attestations": stats.attestations,
        "attested_by": dict(sorted(stats.auditors.items())),
    }


def build_report(state: MonitorState, *, violations: Sequence[str], notes: Sequence[str], new_entries: int) -> dict[str, Any]:
    kept = state.checkpoint
    return {
        "origin": state.origin,
        "service": state.service,
        "log_key": state.log_key,
        "generated_at": now_iso(),
        "checkpoint": {"size": kept.size, "root_hash": kept.root_hash} if kept else None,
        "consistent": not violations,
        "violations": list(violations),
        "flags": [describe_recommit(m, r) for m, s in sorted(state.models.items()) for r in s.recommits],
        "notes": list(notes),
        "new_entries": new_entries,
        "models": {m: model_report(s) for m, s in sorted(state.models.items())},
        # old certificate_issued leaves served redacted: in the tree, in no model's statistics
        "redacted_certificates": state.redacted_certificates,
    }


def _share(answered: int, requests: int) -> str:
    if requests == 0:
        return "-"
    return f"{answered}/{requests} ({100 * answered / requests:.0f}%)"


def _attested(count: int, by: dict[str, int]) -> str:
    """'3 (audit.example x2, other.example)', or '-' without any attestation."""
    if not count:
        return "-"
    names = ", ".join(name if n == 1 else f"{name} x{n}" for name, n in sorted(by.items()))
    return f"{count} ({names})"


def render_report(report: dict[str, Any], new_flags: Sequence[str] = ()) -> str:
    """The report as plain text: violations and flags first, then one row per model."""
    lines = [f"VIOLATION: {v}" for v in report["violations"]]
    lines += [f"FLAG: {f}{' (new)' if f in new_flags else ''}" for f in report["flags"]]
    lines += [f"NOTE: {n}" for n in report["notes"]]
    kept = report["checkpoint"]
    where = f"{kept['size']} leaves, root {kept['root_hash']}" if kept else "no checkpoint kept yet"
    verdict = "consistent" if report["consistent"] else "NOT ADVANCED (violation)"
    lines.append(f"log {report['origin']} at {report['service']}: {where}; "
                 f"{report['new_entries']} new entries verified; {verdict}")
    header = ("model", "cards", "recommits", "attested", "requests", "certificates", "answered", "flips", "exact",
              "eps min", "eps median", "eps max")
    rows = [header]
    for model_id, m in report["models"].items():
        eps = m["eps"] or {"min": "-", "median": "-", "max": "-"}
        rows.append((model_id, str(m["cards_published"]), str(len(m["commitment_changes"])),
                     _attested(m.get("attestations", 0), m.get("attested_by", {})),
                     str(m["decision_requests"]), str(m["certificates"]),
                     _share(m["answered_requests"], m["decision_requests"]), str(m["flips"]),
                     str(m.get("radius", {}).get("exact", 0)), eps["min"], eps["median"], eps["max"]))
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:  # the model id left-aligned, numbers right-aligned
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
            lines.append("  ".join(cells))
    else:
        lines.append("no model events in the log yet")
    if report.get("redacted_certificates"):
        lines.append(f"{report['redacted_certificates']} old certificate leaf(s) served redacted (leaf hash only): "
                     "in the tree, not in the statistics")
    for model_id, m in report["models"].items():
        pending = m["pending_requests"]
        if pending:
            shown = ", ".join(pending[:5]) + (f", ... ({len(pending) - 5} more)" if len(pending) > 5 else "")
            lines.append(f"{model_id}: {len(pending)} decision request(s) without a certificate: {shown}")
    return "\n".join(lines) + "\n"


# -- plots --------------------------------------------------------------------------


class PlotsUnavailable(MonitorError):
    """matplotlib is not installed."""


_VARIANTS = ("fair", "unfair")


def variant_of(model_id: str) -> tuple[str, str] | None:
    """(model id with its fair/unfair token replaced by '*', the token), or None without exactly one such token."""
    parts = re.split(r"([-_.])", model_id)
    found = [i for i, p in enumerate(parts) if p.lower() in _VARIANTS]
    if len(found) != 1:
        return None
    i = found[0]
    return "".join(parts[:i] + ["*"] + parts[i + 1:]), parts[i].lower()


def plot_groups(model_ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(figure name, model ids drawn side by side): fair/unfair pairs together, every other model alone."""
    by_base: dict[str, dict[str, str]] = {}
    for model_id in model_ids:
        found = variant_of(model_id)
        if found:
            by_base.setdefault(found[0], {})[found[1]] = model_id
    paired: set[str] = set()
    groups: list[tuple[str, list[str]]] = []
    for base, variants in sorted(by_base.items()):
        if set(variants) == set(_VARIANTS):
            pair = [variants["fair"], variants["unfair"]]
            paired.update(pair)
            groups.append((base.replace("*", "fair-vs-unfair"), pair))
    groups += [(m, [m]) for m in sorted(model_ids) if m not in paired]
    return groups


def write_plots(state: MonitorState, directory: Path) -> list[Path]:
    """A PNG histogram of eps per model (fair/unfair variants side by side); the files written."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise PlotsUnavailable("matplotlib is not installed (pip install 'fairproof[prover]'): "
                               "no plots written") from None
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    with_eps = [m for m, s in state.models.items() if s.eps]
    for name, model_ids in plot_groups(with_eps):
        fig = Figure(figsize=(5.5 * len(model_ids), 4), layout="constrained")
        axes = fig.subplots(1, len(model_ids), sharex=True, squeeze=False)[0]
        for ax, model_id in zip(axes, model_ids):
            stats = state.models[model_id]
            values = [float(v) for v in stats.eps_values()]  # floats for drawing only
            ax.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4c72b0", edgecolor="white")
            ax.set_title(f"{model_id}\n{stats.certificates} certificates, {stats.flips} flips")
            ax.set_xlabel("certified radius eps")
            ax.set_ylabel("certificates")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        path = directory / f"eps-{name}.png"
        fig.savefig(path, dpi=100)
        written.append(path)
    return written
